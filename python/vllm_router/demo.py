"""The main job: a small RL rollout batch through the router, per routing policy, by group latency.

    python -m vllm_router.demo [--workers 4] [--groups 8] [--samples 4] [--seed 1]
                               [--time-scale 0.1] [--policies P ...] [--plot demo-output/rollout.png]

A GRPO rollout batch is prompts x samples: the samples of one prompt (a group) share it, each runs
turns of generation and tool calls until done, and the group is done when its slowest sample is.
This runs such a batch live (`python -m vllm_router.bench rollout`, small): mock vLLM workers that
run the engine's cost model on the wall clock (continuous batching, a prefix cache in a KV cache
shared with the running requests, preemption; `--time-scale 0.1` runs it ten times faster than
modelled), and for each policy fresh workers and a router started with `Router.launch()`, driven
with `X-Session-ID` on every turn and `POST /finish_session` at each trajectory's end. Prints each
policy's group latency (p50, p90) beside its prefix-cache hit rate (cached / prompt tokens, from
the answers' `usage`), and draws group latency CDFs and hit rates in a PNG (with the `demo` extra,
which brings matplotlib). On a terminal, a progress line counts the trajectories done.
"""

import argparse
import os
import sys
import time
from typing import List, Optional

from .bench import report
from .bench import rollout

DEFAULT_POLICIES = ["sticky_least_loaded", "kv_aware", "cache_aware", "round_robin", "consistent_hash"]
DEFAULT_PLOT = os.path.join("demo-output", "rollout.png")


def print_report(outcome: dict, workers: int, time_scale: float, wall_s: float) -> None:
    w = outcome["workload"]
    print()
    print(f"{w['trajectories']} trajectories ({w['groups']} groups of {w['trajectories'] // w['groups']} "
          f"samples), {w['turns']} turns, over {workers} engine-model mock workers at moderate KV "
          f"pressure; {wall_s:.0f} s wall")
    print()
    header = f"{'policy':<21}{'group p50':>11}{'group p90':>11}{'hit rate':>10}{'preempt':>9}{'errors':>8}"
    print(header)
    print("-" * len(header))
    for r in outcome["results"]:
        g = r["group_latency_s"]
        print(f"{r['policy']:<21}{g['p50']:>10.1f}s{g['p90']:>10.1f}s{r['prefix_hit_rate']:>10.0%}"
              f"{r['preemptions']:>9}{r['errors']:>8}")
    print()
    print(f"group: from a prompt's first sample's start to its last sample's end, in modelled seconds "
          f"(wall / {time_scale:g}). hit rate: cached / prompt tokens in the workers' answers.")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vllm_router.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-scale", type=float, default=rollout.DEFAULT_TIME_SCALE)
    parser.add_argument("--policies", nargs="+", default=DEFAULT_POLICIES)
    parser.add_argument("--plot", default=DEFAULT_PLOT, metavar="PNG",
                        help="where to draw the results (default: %(default)s)")
    options = parser.parse_args(argv)
    try:
        prepared = rollout.prepare(
            ["--workers", str(options.workers), "--groups", str(options.groups), "--samples",
             str(options.samples), "--seed", str(options.seed), "--time-scale", str(options.time_scale),
             "--policies", ",".join(options.policies)])
    except rollout.BadInput as e:
        parser.error(str(e))
    started = time.monotonic()
    outcome = prepared.run(progress=sys.stdout.isatty())
    print_report(outcome, options.workers, options.time_scale, time.monotonic() - started)
    reason = report.write_plot(outcome, options.plot,
                               f"Rollout over {options.workers} engine-model mock workers, per policy")
    print(f"plot: {os.path.abspath(options.plot)}" if reason is None else f"plot: not drawn, {reason}")
    return 1 if any(r["errors"] for r in outcome["results"]) else 0


if __name__ == "__main__":
    sys.exit(main())
