"""A training loop that owns its router: start it, route trajectories, release them, stop it.

    python examples/training_loop.py [--worker-urls http://w1:8000 http://w2:8000]
    vllm-router python examples/training_loop.py [...]   # the same, the engine in this process

Without --worker-urls it starts mock vLLM workers from the engine jar. Each trajectory is an
agent session: every turn carries the same X-Session-ID, so `sticky_least_loaded` keeps it on
one worker (KV-cache reuse); `finish_session` frees the worker slot when the trajectory ends.

The output does not depend on ports or ids (workers are counted, not named), so runs under both
interpreters print the same lines.
"""

import argparse
import json
import urllib.request
import uuid

from vllm_router import Router, RouterArgs
from vllm_router.mock_workers import MockWorkers


def chat(router_url: str, session_id: str, messages: list) -> tuple:
    request = urllib.request.Request(
        router_url + "/v1/chat/completions",
        data=json.dumps({"model": "mock", "messages": messages, "max_tokens": 8}).encode(),
        headers={"Content-Type": "application/json", "X-Session-ID": session_id},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read()), response.headers.get("X-Worker-Id", "?")


def session_counts(router) -> list:
    """Active sessions per worker, busiest first (worker URLs carry ports, which vary by run)."""
    return sorted(router.sessions().values(), reverse=True)


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
            print(f"router started over {len(worker_urls)} workers")
            for step in range(2):
                trajectories = [uuid.uuid4().hex for _ in range(options.trajectories)]
                for index, trajectory in enumerate(trajectories):
                    messages = []
                    workers = set()
                    for turn in range(options.turns):
                        messages.append({"role": "user", "content": f"step {step} turn {turn}"})
                        reply, worker = chat(router.url, trajectory, messages)
                        messages.append(reply["choices"][0]["message"])
                        workers.add(worker)
                    print(f"step {step} trajectory {index}: {options.turns} turns on {len(workers)} worker(s)")
                print(f"active sessions per worker: {session_counts(router)}")
                for trajectory in trajectories:
                    router.finish_session(trajectory)
                print(f"after finish_session: {session_counts(router)}")
    finally:
        if mock:
            mock.close()


if __name__ == "__main__":
    main()
