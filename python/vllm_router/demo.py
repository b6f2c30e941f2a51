"""The main job: a multi-turn agentic workload over mock vLLM workers, per routing policy.

    python -m vllm_router.demo [--sessions 32] [--turns 6] [--concurrency 16] [--workers 4]

Starts mock vLLM workers (one JVM; each worker models a prefix cache, prefill/decode latency
and a batch-size limit), then for each policy starts the router with `Router.launch()` and runs
the mock module's multi-turn workload driver against it: many sessions of several turns, each
turn's prompt extending the previous one, `X-Session-ID` on every request, every session
released with `POST /finish_session` at its end. Prints sessions per worker, stickiness,
prefix-cache hit rate and latency percentiles per policy.
"""

import argparse
import json
import subprocess
import sys
import threading
import time
from typing import List, Optional

from .bridge.engine_command import engine_class_path, engine_command, read_event
from .bridge.java_runtime import find_java
from .router import Router
from .router_args import RouterArgs

DEFAULT_POLICIES = ["sticky_least_loaded", "round_robin", "consistent_hash"]
WORKLOAD_MAIN_CLASS = "org.vllmrouter.mock.WorkloadMain"

# Mock latency model: uncached prompt tokens dominate, so KV-cache reuse shows in latency; a
# small per-worker batch limit makes load imbalance show in the tail.
MOCK_WORKER_KNOBS = {
    "latency-ms": "5",
    "prefill-us-per-token": "600",
    "decode-us-per-token": "500",
    "max-concurrency": "4",
}
PROMPT_TOKENS_PER_TURN = 256
OUTPUT_TOKENS = 16


class MockWorkers:
    """Mock vLLM workers in one JVM (the engine jar's `mock-worker` command)."""

    def __init__(self, count: int, knobs: Optional[dict] = None):
        knob_args = [f"--{name}={value}" for name, value in (knobs or {}).items()]
        command = engine_command(find_java(), engine_class_path(),
                                 ["mock-worker", "--count", str(count), "--lifeline", *knob_args])
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        ready = read_event(self._process.stdout)
        if ready is None or ready["event"] != "ready":
            self.close()
            reason = ready.get("message") if ready else "no ready line before the process ended"
            raise RuntimeError(f"mock workers did not start: {reason}")
        self.urls: List[str] = ready["urls"]
        # Keep draining stdout so the workers never block on a full pipe.
        threading.Thread(target=self._process.stdout.read, daemon=True).start()

    def close(self) -> None:
        self._process.stdin.close()  # lifeline: EOF stops the workers
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def run_workload(router_url: str, sessions: int, turns: int, concurrency: int) -> dict:
    """The mock module's workload driver against `router_url`; its JSON summary."""
    command = engine_command(
        find_java(), engine_class_path(),
        ["--router", router_url, "--sessions", str(sessions), "--turns", str(turns),
         "--concurrency", str(concurrency), "--prompt-tokens", str(PROMPT_TOKENS_PER_TURN),
         "--output-tokens", str(OUTPUT_TOKENS), "--json"],
        main_class=WORKLOAD_MAIN_CLASS,
    )
    completed = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    try:
        return json.loads(completed.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise RuntimeError(f"workload driver failed (status {completed.returncode}): "
                           f"{completed.stdout.strip()}") from None


def run_policy(policy: str, worker_urls: List[str], sessions: int, turns: int, concurrency: int,
               warm_up: bool) -> dict:
    # The workers are up already; a 1 s start-up check interval keeps a slow first health probe
    # (cold JVM on a busy machine) from costing the default 30 s.
    args = RouterArgs(port=0, prometheus_port=0, policy=policy, worker_urls=worker_urls,
                      worker_startup_check_interval=1, log_level="warning")
    started = time.perf_counter()
    with Router.from_args(args).launch() as router:
        startup_ms = (time.perf_counter() - started) * 1000
        if warm_up:
            # Untimed: lets the mock workers' JIT warm up, so the first policy is not penalised.
            run_workload(router.url, 2 * concurrency, 3, concurrency)
        result = run_workload(router.url, sessions, turns, concurrency)
        result["leftover_sessions"] = sum(router.sessions().values())
    result["policy"] = policy
    result["startup_ms"] = startup_ms
    return result


def print_report(results: List[dict], worker_urls: List[str], sessions: int, turns: int) -> None:
    print()
    print(f"{sessions} sessions x {turns} turns over {len(worker_urls)} mock workers; each turn "
          f"resends the conversation plus {PROMPT_TOKENS_PER_TURN} new tokens; sessions are "
          "released with /finish_session")
    print()
    header = (f"{'policy':<21}{'sessions per worker':<22}{'sticky':>7}{'cache hit':>11}"
              f"{'p50 ms':>9}{'p99 ms':>9}{'req/s':>8}{'errors':>8}")
    print(header)
    print("-" * len(header))
    for r in results:
        spread = "/".join(str(n) for _, n in sorted(r["sessions_per_worker"].items()))
        print(f"{r['policy']:<21}{spread:<22}{r['stickiness']:>7.0%}{r['cache_hit_rate']:>11.0%}"
              f"{r['latency_p50_ms']:>9.1f}{r['latency_p99_ms']:>9.1f}{r['requests_per_second']:>8.0f}"
              f"{r['errors']:>8}")
    print()
    print("sticky: share of turns served by the session's first worker. cache hit: cached / "
          "prompt tokens reported by the workers.")
    print("router start-up (launch() until ready): "
          + ", ".join(f"{r['policy']} {r['startup_ms']:.0f} ms" for r in results))
    leftovers = {r["policy"]: r["leftover_sessions"] for r in results if r["leftover_sessions"]}
    if leftovers:
        print(f"sessions still active after the workload: {leftovers}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vllm_router.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--policies", nargs="+", default=DEFAULT_POLICIES)
    options = parser.parse_args(argv)

    workers = MockWorkers(options.workers, MOCK_WORKER_KNOBS)
    try:
        results = []
        for index, policy in enumerate(options.policies):
            print(f"running {policy} ...", flush=True)
            results.append(run_policy(policy, workers.urls, options.sessions, options.turns,
                                      options.concurrency, warm_up=index == 0))
    finally:
        workers.close()
    print_report(results, workers.urls, options.sessions, options.turns)
    return 1 if any(r["errors"] or r["leftover_sessions"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
