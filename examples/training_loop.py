"""A training loop that owns its router: start it, route trajectories, release them, stop it.

    python examples/training_loop.py [--worker-urls http://w1:8000 http://w2:8000]

Without --worker-urls it starts mock vLLM workers from the engine jar. Each trajectory is an
agent session: every turn carries the same X-Session-ID, so `sticky_least_loaded` keeps it on
one worker (KV-cache reuse); `finish_session` frees the worker slot when the trajectory ends.
"""

import argparse
import json
import urllib.request
import uuid

from vllm_router import Router, RouterArgs
from vllm_router.demo import MockWorkers


def chat(router_url: str, session_id: str, messages: list) -> tuple:
    request = urllib.request.Request(
        router_url + "/v1/chat/completions",
        data=json.dumps({"model": "mock", "messages": messages, "max_tokens": 8}).encode(),
        headers={"Content-Type": "application/json", "X-Session-ID": session_id},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read()), response.headers.get("X-Worker-Id", "?")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker-urls", nargs="*")
    parser.add_argument("--trajectories", type=int, default=6)
    parser.add_argument("--turns", type=int, default=3)
    options = parser.parse_args()

    mock = None if options.worker_urls else MockWorkers(4)
    worker_urls = options.worker_urls or mock.urls
    try:
        args = RouterArgs(port=0, prometheus_port=0, policy="sticky_least_loaded", worker_urls=worker_urls)
        with Router.from_args(args).launch() as router:
            print(f"router at {router.url}")
            for step in range(2):
                trajectories = [uuid.uuid4().hex for _ in range(options.trajectories)]
                for trajectory in trajectories:
                    messages = []
                    for turn in range(options.turns):
                        messages.append({"role": "user", "content": f"step {step} turn {turn}"})
                        reply, worker = chat(router.url, trajectory, messages)
                        messages.append(reply["choices"][0]["message"])
                        print(f"step {step} trajectory {trajectory[:8]} turn {turn} -> {worker}")
                print(f"active sessions per worker: {router.sessions()}")
                for trajectory in trajectories:
                    router.finish_session(trajectory)
                print(f"after finish_session: {router.sessions()}")
    finally:
        if mock:
            mock.close()


if __name__ == "__main__":
    main()
