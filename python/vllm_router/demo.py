"""The main job: a multi-turn agentic workload over mock vLLM workers, per routing policy.

    python -m vllm_router.demo [--sessions 32] [--turns 6] [--concurrency 16] [--workers 4]
                               [--plot demo-output/policies.png]

Starts mock vLLM workers (one JVM; each worker models a prefix cache, prefill/decode latency
and a batch-size limit), then for each policy starts the router with `Router.launch()` and runs
the mock module's multi-turn workload driver against it: many sessions of several turns, each
turn's prompt extending the previous one, `X-Session-ID` on every request, every session
released with `POST /finish_session` at its end. Prints sessions per worker, stickiness,
prefix-cache hit rate and latency percentiles per policy, and draws them in a PNG (with the
`demo` extra, which brings matplotlib). On a terminal, a progress line counts the turns.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from typing import List, Optional

from .mock_workers import MockWorkers, workload_command
from .router import Router
from .router_args import RouterArgs

DEFAULT_POLICIES = ["sticky_least_loaded", "cache_aware", "kv_aware", "round_robin", "consistent_hash"]

# Mock latency model: uncached prompt tokens dominate, so KV-cache reuse shows in latency; a
# small per-worker batch limit makes load imbalance show in the tail. Each worker's GPU cache
# holds 192 blocks of 16 tokens, well under its share of the live conversations (at 512 every
# policy kept nearly all its prefixes), so where a turn is placed decides whether its prefix is
# still there; the workers publish vLLM KV events, which kv_aware subscribes to.
MOCK_WORKER_KNOBS = {
    "latency-ms": "5",
    "prefill-us-per-token": "600",
    "decode-us-per-token": "500",
    "max-concurrency": "4",
    "cache-blocks": "192",
    "kv-events": "true",
}
PROMPT_TOKENS_PER_TURN = 256
OUTPUT_TOKENS = 16
DEFAULT_PLOT = os.path.join("demo-output", "policies.png")
# What the workload driver's --progress writes on stderr.
PROGRESS_LINE = re.compile(r"turns (\d+)/(\d+)")


def run_workload(router_url: str, sessions: int, turns: int, concurrency: int,
                 progress_label: Optional[str] = None) -> dict:
    """The mock module's workload driver against `router_url`; its JSON summary.

    With `progress_label`, the turns done so far are shown on one updating terminal line.
    """
    command = workload_command(
        router_url,
        ["--sessions", str(sessions), "--turns", str(turns), "--concurrency", str(concurrency),
         "--prompt-tokens", str(PROMPT_TOKENS_PER_TURN), "--output-tokens", str(OUTPUT_TOKENS), "--json"]
        + (["--progress"] if progress_label else []))
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True,
                          stderr=subprocess.PIPE if progress_label else None) as driver:
        if progress_label:
            # The summary is one line on stdout, so reading stderr to its end first cannot block.
            for line in driver.stderr:
                match = PROGRESS_LINE.fullmatch(line.strip())
                if match:
                    show_progress(f"{progress_label}: {match[1]}/{match[2]} turns")
                else:
                    sys.stderr.write(line)
        output = driver.stdout.read()
    try:
        return json.loads(output.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise RuntimeError(f"workload driver failed (status {driver.returncode}): "
                           f"{output.strip()}") from None


def show_progress(text: str) -> None:
    """Rewrites the terminal's current line."""
    sys.stdout.write("\r\033[K" + text)
    sys.stdout.flush()


def flush_caches(worker_urls: List[str]) -> None:
    """Empties every worker's prefix cache, so no policy inherits the previous one's hits."""
    for url in worker_urls:
        urllib.request.urlopen(urllib.request.Request(url + "/flush_cache", data=b"", method="POST"),
                               timeout=10).close()


def run_policy(policy: str, worker_urls: List[str], sessions: int, turns: int, concurrency: int,
               warm_up: bool, progress: bool) -> dict:
    # The workers are up already; a 1 s start-up check interval keeps a slow first health probe
    # (cold JVM on a busy machine) from costing the default 30 s.
    args = RouterArgs(port=0, prometheus_port=0, policy=policy, worker_urls=worker_urls,
                      worker_startup_check_interval=1, log_level="warning")
    started = time.perf_counter()
    with Router.from_args(args).launch() as router:
        startup_ms = (time.perf_counter() - started) * 1000
        if warm_up:
            # Untimed: lets the mock workers' JIT warm up, so the first policy is not penalised.
            run_workload(router.url, 2 * concurrency, 3, concurrency,
                         f"{policy} (warm-up)" if progress else None)
        flush_caches(worker_urls)
        result = run_workload(router.url, sessions, turns, concurrency,
                              policy if progress else None)
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


def write_plot(results: List[dict], path: str, sessions: int, turns: int, workers: int) -> bool:
    """Draws sessions per worker, cache-hit rate and latency p50/p99 per policy into a PNG at
    `path`; False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    policies = [r["policy"] for r in results]
    colors = dict(zip(policies, ["#2563eb", "#f59e0b", "#10b981", "#8b5cf6", "#ef4444", "#6b7280"]))
    figure, (spread, cache, latency) = plt.subplots(1, 3, figsize=(15, 4.8),
                                                    gridspec_kw={"width_ratios": [1.5, 1, 1.2]})
    figure.suptitle(f"{sessions} sessions \u00d7 {turns} turns over {workers} mock workers, per "
                    "routing policy", fontsize=13, fontweight="bold")

    worker_ids = sorted({w for r in results for w in r["sessions_per_worker"]})
    width = 0.8 / len(results)
    for i, r in enumerate(results):
        x = [k + (i - (len(results) - 1) / 2) * width for k in range(len(worker_ids))]
        spread.bar(x, [r["sessions_per_worker"].get(w, 0) for w in worker_ids], width,
                   label=r["policy"], color=colors[r["policy"]])
    spread.axhline(sessions / workers, color="#374151", linestyle="--", linewidth=1,
                   label="even split")
    most = max(n for r in results for n in r["sessions_per_worker"].values())
    spread.set_ylim(0, most * 1.4)  # room for the legend above the bars
    spread.set_xticks(range(len(worker_ids)), worker_ids)
    spread.set_title("Sessions per worker")
    spread.set_ylabel("sessions")
    spread.legend(fontsize=8, frameon=False, ncol=2, loc="upper left")

    hit = [100 * r["cache_hit_rate"] for r in results]
    bars = cache.bar(policies, hit, color=[colors[p] for p in policies])
    cache.bar_label(bars, [f"{h:.0f}%" for h in hit], padding=2)
    cache.set_ylim(0, 105)
    cache.set_title("Prefix-cache hit rate")
    cache.set_ylabel("cached / prompt tokens (%)")

    x = range(len(results))
    p50 = latency.bar([k - 0.2 for k in x], [r["latency_p50_ms"] for r in results], 0.4,
                      color=[colors[p] for p in policies], alpha=0.55, label="p50")
    p99 = latency.bar([k + 0.2 for k in x], [r["latency_p99_ms"] for r in results], 0.4,
                      color=[colors[p] for p in policies], label="p99")
    latency.bar_label(p50, [f"{r['latency_p50_ms']:.0f}" for r in results], padding=2, fontsize=8)
    latency.bar_label(p99, [f"{r['latency_p99_ms']:.0f}" for r in results], padding=2, fontsize=8)
    latency.set_xticks(list(x), policies)
    latency.set_title("Latency per turn (light: p50, dark: p99)")
    latency.set_ylabel("ms")

    for axes in (spread, cache, latency):
        axes.spines[["top", "right"]].set_visible(False)
        axes.tick_params(axis="x", labelsize=8)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vllm_router.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--policies", nargs="+", default=DEFAULT_POLICIES)
    parser.add_argument("--plot", default=DEFAULT_PLOT, metavar="PNG",
                        help="where to draw the results (default: %(default)s)")
    options = parser.parse_args(argv)
    progress = sys.stdout.isatty()

    workers = MockWorkers(options.workers, MOCK_WORKER_KNOBS)
    try:
        results = []
        for index, policy in enumerate(options.policies):
            if not progress:
                print(f"running {policy} ...", flush=True)
            results.append(run_policy(policy, workers.urls, options.sessions, options.turns,
                                      options.concurrency, warm_up=index == 0, progress=progress))
            if progress:
                print()
    finally:
        workers.close()
    print_report(results, workers.urls, options.sessions, options.turns)
    if write_plot(results, options.plot, options.sessions, options.turns, options.workers):
        print(f"plot: {os.path.abspath(options.plot)}")
    else:
        print("plot: not drawn, matplotlib is missing (pip install 'vllm-router-jvm[demo]')")
    return 1 if any(r["errors"] or r["leftover_sessions"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
