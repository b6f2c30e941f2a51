"""The main job: a multi-turn agentic workload over mock vLLM workers, per routing policy.

    python -m vllm_router.demo [--sessions 48] [--turns 6] [--concurrency 16] [--workers 4]

Starts mock workers (one JVM, a prefix-cache and latency model per worker), then for each
policy starts the router with `Router.launch()`, runs many sessions of several turns (each
turn's prompt extends the previous one, `X-Session-ID` on every request, the session released
with `finish_session` at its end) and prints sessions per worker, stickiness, prefix-cache hit
rate and latency percentiles.
"""

import argparse
import json
import random
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .bridge.java_runtime import find_java
from .bridge.process import engine_command, engine_jar
from .router import Router
from .router_args import RouterArgs

DEFAULT_POLICIES = ["sticky_least_loaded", "round_robin", "consistent_hash"]

# Mock latency model: uncached prompt tokens dominate, so KV-cache reuse shows in latency; a
# small per-worker concurrency limit makes load imbalance show in the tail.
MOCK_WORKER_KNOBS = {
    "latency-ms": "2",
    "prefill-us-per-token": "40",
    "decode-us-per-token": "300",
    "max-concurrency": "4",
}
TURN_TEXT_CHARS = 600  # ~200 mock tokens added per turn
MAX_TOKENS = 16


@dataclass
class TurnResult:
    session: str
    turn: int
    worker: str
    latency_ms: float
    prompt_tokens: int
    cached_tokens: int


@dataclass
class PolicyReport:
    policy: str
    startup_ms: float
    wall_secs: float
    turns: List[TurnResult] = field(default_factory=list)
    failures: int = 0

    def sessions_per_worker(self) -> Dict[str, int]:
        first_turn_worker = {t.session: t.worker for t in self.turns if t.turn == 0}
        return dict(sorted(Counter(first_turn_worker.values()).items()))

    def stickiness(self) -> float:
        """Share of follow-up turns served by the worker that served the session's previous turn."""
        by_session: Dict[str, Dict[int, str]] = {}
        for t in self.turns:
            by_session.setdefault(t.session, {})[t.turn] = t.worker
        follow_ups = same = 0
        for workers in by_session.values():
            for turn, worker in workers.items():
                if turn > 0 and turn - 1 in workers:
                    follow_ups += 1
                    same += worker == workers[turn - 1]
        return same / follow_ups if follow_ups else 0.0

    def cache_hit_rate(self) -> float:
        prompt = sum(t.prompt_tokens for t in self.turns)
        return sum(t.cached_tokens for t in self.turns) / prompt if prompt else 0.0

    def latency_percentile(self, q: float) -> float:
        values = sorted(t.latency_ms for t in self.turns)
        if not values:
            return 0.0
        return values[min(len(values) - 1, int(q * len(values)))]


class MockWorkers:
    """Mock vLLM workers in one JVM (the engine jar's `mock-worker` command)."""

    def __init__(self, count: int):
        command = engine_command(find_java(), engine_jar(), ["mock-worker", "--count", str(count), "--lifeline"]
                                 + [f"--{name}={value}" for name, value in MOCK_WORKER_KNOBS.items()])
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self._process.stdout.readline()
        try:
            ready = json.loads(line)
        except ValueError:
            ready = {}
        if ready.get("event") != "ready":
            self.close()
            raise RuntimeError(f"mock workers did not start: {line.decode(errors='replace').strip()}")
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


def run_session(router_url: str, session: str, turns: int, rng: random.Random) -> List[TurnResult]:
    """One agent trajectory: every turn resends the whole conversation plus a new message."""
    messages = [{"role": "system", "content": f"You are agent {session}. " + "Think step by step. " * 20}]
    results = []
    for turn in range(turns):
        observation = "".join(rng.choice("abcdefghij klmnopqrst") for _ in range(TURN_TEXT_CHARS))
        messages.append({"role": "user", "content": f"Turn {turn} observation: {observation}"})
        body = json.dumps({"model": "mock", "messages": messages, "max_tokens": MAX_TOKENS}).encode()
        request = urllib.request.Request(
            router_url + "/v1/chat/completions", data=body, method="POST",
            headers={"Content-Type": "application/json", "X-Session-ID": session},
        )
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=60) as response:
            reply = json.loads(response.read())
            worker = response.headers.get("X-Worker-Id", "?")
        latency_ms = (time.perf_counter() - started) * 1000
        usage = reply.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        results.append(TurnResult(session, turn, worker, latency_ms, usage.get("prompt_tokens", 0), cached))
        messages.append({"role": "assistant", "content": reply["choices"][0]["message"]["content"]})
    return results


def run_policy(policy: str, worker_urls: List[str], sessions: int, turns: int, concurrency: int,
               seed: int) -> PolicyReport:
    args = RouterArgs(port=0, prometheus_port=0, policy=policy, worker_urls=worker_urls,
                      log_level="warning")
    started = time.perf_counter()
    with Router.from_args(args).launch() as router:
        report = PolicyReport(policy, (time.perf_counter() - started) * 1000, 0.0)
        rng = random.Random(f"{seed}:{policy}")
        # Fresh ids per policy run, so one run never profits from another's cached prefixes.
        session_ids = [uuid.UUID(int=rng.getrandbits(128)).hex for _ in range(sessions)]

        def trajectory(session: str) -> Optional[List[TurnResult]]:
            try:
                return run_session(router.url, session, turns, random.Random(session))
            except OSError as e:
                print(f"  session {session[:8]} failed: {e}", file=sys.stderr)
                return None
            finally:
                router.finish_session(session)

        workload_started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            for results in pool.map(trajectory, session_ids):
                if results is None:
                    report.failures += 1
                else:
                    report.turns.extend(results)
        report.wall_secs = time.perf_counter() - workload_started
        leftover = sum(router.sessions().values())
        if leftover:
            print(f"  warning: {leftover} sessions still active after finish_session", file=sys.stderr)
    return report


def print_report(reports: List[PolicyReport], worker_count: int, sessions: int, turns: int) -> None:
    print()
    print(f"{sessions} sessions x {turns} turns over {worker_count} mock workers "
          f"(each turn resends the conversation; sessions released with finish_session)")
    print()
    header = f"{'policy':<22}{'sessions per worker':<24}{'sticky':>8}{'cache hit':>11}{'p50 ms':>9}{'p99 ms':>9}{'wall s':>8}"
    print(header)
    print("-" * len(header))
    for r in reports:
        spread = "/".join(str(n) for n in r.sessions_per_worker().values())
        print(f"{r.policy:<22}{spread:<24}{r.stickiness():>8.0%}{r.cache_hit_rate():>11.0%}"
              f"{r.latency_percentile(0.50):>9.1f}{r.latency_percentile(0.99):>9.1f}{r.wall_secs:>8.1f}")
    print()
    startups = ", ".join(f"{r.policy} {r.startup_ms:.0f} ms" for r in reports)
    print(f"router start-up (launch() to ready): {startups}")
    failed = sum(r.failures for r in reports)
    if failed:
        print(f"failed sessions: {failed}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vllm_router.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=48)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--policies", nargs="+", default=DEFAULT_POLICIES)
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args(argv)

    workers = MockWorkers(options.workers)
    try:
        reports = []
        for policy in options.policies:
            print(f"running {policy} ...", flush=True)
            reports.append(run_policy(policy, workers.urls, options.sessions, options.turns,
                                      options.concurrency, options.seed))
    finally:
        workers.close()
    print_report(reports, len(workers.urls), options.sessions, options.turns)
    return 1 if any(r.failures for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
