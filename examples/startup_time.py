"""Start-up time: from calling launch_router (in a child process, as trainers do) to GET /health == 200.

    python examples/startup_time.py [--runs 7]

Prints every run and the median. The first run after installing a new engine jar also records
the JVM's class cache, so it is reported but left out of the median.
"""

import argparse
import multiprocessing
import socket
import statistics
import time
import urllib.request

from vllm_router.launch_router import launch_router
from vllm_router.router_args import RouterArgs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def one_run() -> float:
    args = RouterArgs(port=free_port(), prometheus_port=free_port(), policy="sticky_least_loaded")
    url = f"http://127.0.0.1:{args.port}"
    started = time.perf_counter()
    process = multiprocessing.Process(target=launch_router, args=(args,), daemon=True)
    process.start()
    while not healthy(url):
        if not process.is_alive():
            raise RuntimeError(f"router exited with code {process.exitcode}")
        time.sleep(0.005)
    elapsed = time.perf_counter() - started
    process.terminate()
    process.join(30)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    first = one_run()
    print(f"warm-up run (records the class cache if needed): {first * 1000:.0f} ms")
    times = []
    for i in range(options.runs):
        times.append(one_run())
        print(f"run {i + 1}: {times[-1] * 1000:.0f} ms")
    print(f"median launch_router -> healthy /health: {statistics.median(times) * 1000:.0f} ms "
          f"over {len(times)} runs")


if __name__ == "__main__":
    main()
