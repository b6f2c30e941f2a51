"""Session calls and start-up: the engine in-process (`vllm-router python`) against CPython's
handle (HTTP to the child JVM), side by side.

    python examples/bench/session_calls.py [--rounds 3] [--calls 10000] [--launcher PATH]

Run it with the CPython that has the package installed. It starts 4 mock workers once, then in
each round runs this file as a child under both runtimes, alternating which goes first:

    python session_calls.py --child URL...                  (CPython: the process bridge)
    <launcher> python session_calls.py --child URL...       (GraalPy: the engine in the same JVM)

and measures in each child:
  * start-up: from starting the command to the answer of its first routed request (measured
    here, from spawning the child until it prints that the request came back);
  * `finish_session(id)` and `sessions()`: median and p99 of --calls calls each, after --warmup
    untimed calls. The released ids were never routed, so a release is a no-op and the figure is
    the call's own cost (transport, lookup, answer); `sessions()` reads 8 active sessions.

Each figure reported is the median over the rounds (the machine may be shared with other work:
interleaving the runtimes and taking medians keeps a burst of load from landing on one of them).
A first round is run untimed: it records the launcher's class-data archive and JIT warm-up of
the mock workers. The launcher defaults to this checkout's java/host/target/vllm-router-dist.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ACTIVE_SESSIONS = 8


def chat(router_url: str, session_id: str) -> None:
    request = urllib.request.Request(
        router_url + "/v1/chat/completions",
        data=json.dumps({"model": "mock", "messages": [{"role": "user", "content": "hi"}],
                         "max_tokens": 4}).encode(),
        headers={"Content-Type": "application/json", "X-Session-ID": session_id},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()


def timed_calls(call, count: int, warmup: int) -> dict:
    """Median and p99 in microseconds of `count` calls of call(i), after `warmup` untimed ones."""
    for i in range(warmup):
        call(i)
    durations = []
    for i in range(count):
        started = time.perf_counter_ns()
        call(warmup + i)
        durations.append(time.perf_counter_ns() - started)
    durations.sort()
    return {"median_us": durations[len(durations) // 2] / 1000,
            "p99_us": durations[min(len(durations) - 1, int(len(durations) * 0.99))] / 1000}


def child(worker_urls: list, calls: int, warmup: int) -> None:
    """One run under the current interpreter: start, first routed request, the two call loops."""
    from vllm_router import Router, RouterArgs

    args = RouterArgs(port=0, prometheus_port=0, policy="sticky_least_loaded",
                      worker_urls=worker_urls, log_level="warning")
    with Router.from_args(args).launch() as router:
        chat(router.url, "session-0")
        print("routed", flush=True)
        for session in range(1, ACTIVE_SESSIONS):
            chat(router.url, f"session-{session}")
        result = {
            "runtime": sys.implementation.name,
            "finish_session": timed_calls(lambda i: router.finish_session(f"never-routed-{i}"), calls, warmup),
            "sessions": timed_calls(lambda i: router.sessions(), calls, warmup),
        }
        assert sum(router.sessions().values()) == ACTIVE_SESSIONS
    print(json.dumps(result), flush=True)


def run_child(command: list) -> dict:
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        first_line = process.stdout.readline()
        startup_s = time.perf_counter() - started
        if first_line.strip() != "routed":
            raise RuntimeError(f"{command[:2]}: expected 'routed', got {first_line!r}")
        result = json.loads(process.stdout.readline())
    finally:
        process.stdout.close()
        status = process.wait()
    if status != 0:
        raise RuntimeError(f"{command[:2]} exited with status {status}")
    result["startup_s"] = startup_s
    return result


def summary(runs: list) -> dict:
    return {
        "startup_s": statistics.median(r["startup_s"] for r in runs),
        **{f"{call}_{stat}": statistics.median(r[call][stat] for r in runs)
           for call in ("finish_session", "sessions") for stat in ("median_us", "p99_us")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=1_000)
    parser.add_argument("--launcher", default=str(Path(__file__).resolve().parents[2]
                                                  / "java/host/target/vllm-router-dist/bin/vllm-router"))
    parser.add_argument("--child", nargs="+", metavar="URL", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child, options.calls, options.warmup)
        return

    from vllm_router.mock_workers import MockWorkers

    child_args = [os.path.abspath(__file__), "--calls", str(options.calls), "--warmup", str(options.warmup)]
    commands = {
        "CPython, process bridge (HTTP)": [sys.executable, *child_args],
        "vllm-router python (in-process)": [options.launcher, "python", *child_args],
    }
    workers = MockWorkers(4)
    runs = {name: [] for name in commands}
    try:
        for round_index in range(options.rounds + 1):
            order = list(commands) if round_index % 2 == 0 else list(reversed(commands))
            for name in order:
                result = run_child(commands[name] + ["--child", *workers.urls])
                label = "warm-up" if round_index == 0 else f"round {round_index}"
                print(f"{label:8} {name}: {json.dumps(result)}", flush=True)
                if round_index > 0:
                    runs[name].append(result)
    finally:
        workers.close()

    print()
    print(f"medians over {options.rounds} interleaved rounds; {options.calls} calls each after "
          f"{options.warmup} untimed")
    header = f"{'':34}{'start-up':>10}{'finish_session p50/p99 us':>28}{'sessions() p50/p99 us':>26}"
    print(header)
    print("-" * len(header))
    for name, results in runs.items():
        s = summary(results)
        print(f"{name:34}{s['startup_s']:>9.2f}s"
              f"{s['finish_session_median_us']:>17.1f} / {s['finish_session_p99_us']:<8.1f}"
              f"{s['sessions_median_us']:>15.1f} / {s['sessions_p99_us']:<8.1f}")


if __name__ == "__main__":
    main()
