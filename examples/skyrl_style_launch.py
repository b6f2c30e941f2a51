"""How an RL trainer (SkyRL's VLLMRouter) runs the router: a child process that blocks in
launch_router, a /health poll that fails fast if the child dies, and SIGTERM to stop it.

    python examples/skyrl_style_launch.py --worker-urls http://w1:8000 http://w2:8000
"""

import argparse
import multiprocessing
import socket
import time
import urllib.request

from vllm_router.launch_router import launch_router
from vllm_router.router_args import RouterArgs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def wait_until_healthy(url: str, process: multiprocessing.Process, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.is_alive():
            raise RuntimeError(f"VLLMRouter process exited with code {process.exitcode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"{url} not healthy after {timeout} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker-urls", nargs="+", required=True)
    options = parser.parse_args()

    router_args = RouterArgs(host="0.0.0.0", port=free_port(), policy="sticky_least_loaded",
                             worker_urls=options.worker_urls)
    router_args.prometheus_port = free_port()
    process = multiprocessing.Process(target=launch_router, args=(router_args,), daemon=True,
                                      name="vllm-router")
    process.start()
    url = f"http://127.0.0.1:{router_args.port}"
    wait_until_healthy(url, process)
    print(f"router healthy at {url} (pid {process.pid}); stopping it")
    process.terminate()  # SIGTERM: the engine drains, launch_router returns, exit code 0
    process.join(5)
    if process.is_alive():
        process.kill()
        process.join()
    print(f"router exited with code {process.exitcode}")


if __name__ == "__main__":
    main()
