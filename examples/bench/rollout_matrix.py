"""The rollout bench's tables in docs/perf/rollout-live.md: each policy at each pressure over
several seeds, live (`python -m vllm_router.bench rollout`) and simulated (`... simulate`) on the
same workload, reported as medians over the seeds.

    python examples/bench/rollout_matrix.py run OUT --workers 8 --seeds 1,2,3 [--draws K] [--time-scale S] [--rust PYTHON] -- ARGS...
    python examples/bench/rollout_matrix.py report OUT

`run` writes one JSON per (arm set, workers, seed, draw) into OUT as each finishes, with the
machine's `uptime` before and after it (the bench times wall-clock work, so the load beside a
figure matters); `report` prints the median tables, each policy's figures over
sticky_least_loaded's (each seed's draws folded to their median first, so every seed weighs the
same) and the simulated-vs-live calibration as markdown. A live run of a seed is one draw: which
sessions share a worker follows the order in which the batch's concurrent openings reach the
router, so a sticky policy's figures move from one run of the same seed to the next
(docs/perf/rollout-live.md). `--draws K` runs each seed live K times (the simulation,
deterministic, once), and the report's medians and group p90 ranges are over every draw of every
seed. Run it with PYTHONPATH=python from the source tree.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict

RUST_POLICIES = "sticky_least_loaded,cache_aware,consistent_hash"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def bench(command: str, arguments):
    done = subprocess.run([sys.executable, "-m", "vllm_router.bench", command, *arguments, "--json"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{command} {' '.join(arguments)} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got '{text}'")
    return value


def run(o) -> None:
    os.makedirs(o.out, exist_ok=True)
    for seed in o.seeds.split(","):
        shape = ["--workers", str(o.workers), "--seed", seed, *o.bench_args]
        live = shape + ["--time-scale", o.time_scale] + (["--router-python", o.rust, "--policies", RUST_POLICIES, "--ours", o.ours]
                        if o.rust else ["--policies", o.ours])
        simulated = None
        for draw in range(1, o.draws + 1):
            before, started = uptime(), time.time()
            outcome = bench("rollout", live)
            record = {"command": ["python", "-m", "vllm_router.bench", "rollout", *live, "--json"],
                      "uptime_before": before, "uptime_after": uptime(), "wall_s": round(time.time() - started),
                      "draw": draw, "live": outcome}
            simulated = simulated or bench("simulate", [*shape, "--policies", o.ours])
            record["simulated"] = simulated
            name = f"w{o.workers}-seed{seed}" + (f"-draw{draw}" if o.draws > 1 else "")
            path = os.path.join(o.out, f"{name}.json")
            with open(path, "w") as f:
                json.dump(record, f)
            print(f"{path}: {record['wall_s']} s; {record['uptime_after']}", flush=True)


# The figures the tables read from one policy's result: their column headings and readers, in the tables' order.
METRICS = {
    "makespan": ("makespan", lambda x: x["makespan_s"]),
    "g50": ("group p50", lambda x: x["group_latency_s"]["p50"]),
    "g90": ("group p90", lambda x: x["group_latency_s"]["p90"]),
    "gmax": ("group max", lambda x: x["group_latency_s"]["max"]),
    "t50": ("traj p50", lambda x: x["trajectory_latency_s"]["p50"]),
    "t90": ("traj p90", lambda x: x["trajectory_latency_s"]["p90"]),
    "hit": ("hit %", lambda x: 100 * x["prefix_hit_rate"]),
    "imbal": ("imbal", lambda x: x["imbalance"]),
    "preempt": ("preempt", lambda x: x["preemptions"]),
    "errors": ("errors", lambda x: x["errors"]),
}
BASELINE = "sticky_least_loaded"


def median_rows(records, side):
    """{(pressure, policy): {metric: median over every record}}."""
    values = defaultdict(lambda: defaultdict(list))
    for r in records:
        for x in r[side]["results"]:
            v = values[(x["pressure"], x["policy"])]
            for metric, (_, read) in METRICS.items():
                v[metric].append(read(x))
    return {k: {m: statistics.median(v) for m, v in ms.items()}
            | {"n": len(ms["g90"]), "g90_min": min(ms["g90"]), "g90_max": max(ms["g90"])}
            for k, ms in values.items()}


def seed_medians(records):
    """{(pressure, policy): {metric: median over the seeds of each seed's median over its live draws}}: the
    issue's "3 seeds, medians" with every seed's draws folded first, so a seed run five times counts once."""
    by_seed = defaultdict(list)
    for r in records:
        by_seed[r["live"]["workload"]["seed"]].append(r)
    per_seed = [median_rows(draws, "live") for draws in by_seed.values()]
    keys = set().union(*per_seed)
    return {k: {m: statistics.median(s[k][m] for s in per_seed if k in s) for m in METRICS} for k in keys}


def report(o) -> None:
    by_workers = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(o.out, "**", "w*-seed*.json"), recursive=True)):
        with open(path) as f:
            record = json.load(f)
        by_workers[record["live"]["results"][0]["workers"]].append(record)
    for workers, records in sorted(by_workers.items()):
        seeds = ", ".join(dict.fromkeys(str(r["live"]["workload"]["seed"]) for r in records))
        draws = f", {len(records)} draws" if any(r.get("draw", 1) > 1 for r in records) else ""
        w = records[0]["live"]["workload"]
        print(f"### Live, {workers} workers: {w['trajectories']} trajectories in {w['groups']} groups, "
              f"seeds {seeds}{draws} (medians)\n")
        for r in records:
            print(f"- `{' '.join(r['command'])}`: {r['wall_s']} s wall; before `{r['uptime_before']}`, "
                  f"after `{r['uptime_after']}`")
        print("\n| pressure | policy | makespan | group p50 | group p90 | group p90 range | group max | traj p50 "
              "| traj p90 | hit % | imbal | preempt | errors |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for (pressure, policy), m in median_rows(records, "live").items():
            print(f"| {pressure} | {policy} | {m['makespan']:.1f} | {m['g50']:.1f} | {m['g90']:.1f} | "
                  f"{m['g90_min']:.1f}-{m['g90_max']:.1f} | {m['gmax']:.1f} | {m['t50']:.1f} | {m['t90']:.1f} | "
                  f"{m['hit']:.1f} | {m['imbal']:.2f} | {m['preempt']:g} | {m['errors']:g} |")
        against_baseline(records, workers, seeds)
        simulated = median_rows(records, "simulated")
        live = median_rows(records, "live")
        print(f"\n### Calibration, {workers} workers: simulated vs live (medians over seeds {seeds})\n")
        print("| pressure | policy | group p90 sim | group p90 live | diff | hit % sim | hit % live | diff (points) |"
              "\n|---|---|---:|---:|---:|---:|---:|---:|")
        for key, s in simulated.items():
            if key not in live:
                continue
            l = live[key]
            print(f"| {key[0]} | {key[1]} | {s['g90']:.1f} | {l['g90']:.1f} | {100 * (l['g90'] / s['g90'] - 1):+.0f}% | "
                  f"{s['hit']:.1f} | {l['hit']:.1f} | {l['hit'] - s['hit']:+.1f} |")
        print()


def against_baseline(records, workers, seeds) -> None:
    """Each policy's seed medians over sticky_least_loaded's at the same pressure, metric by metric
    (above 1: higher than sticky_least_loaded's)."""
    medians = seed_medians(records)
    rows = [(k, m) for k, m in sorted(medians.items()) if k[1] != BASELINE and (k[0], BASELINE) in medians]
    if not rows:
        return
    shown = [m for m in METRICS if m not in ("preempt", "errors")]
    print(f"\n### Against {BASELINE}, {workers} workers: each seed's median over its draws, then the median over "
          f"seeds {seeds}; ratio to {BASELINE}'s\n")
    print("| pressure | policy | " + " | ".join(METRICS[k][0] for k in shown) + " |\n|---|---|" + "---:|" * len(shown))
    for (pressure, policy), m in rows:
        base = medians[(pressure, BASELINE)]
        print(f"| {pressure} | {policy} | "
              + " | ".join(f"{m[k] / base[k]:.3f}" if base[k] else "-" for k in shown) + " |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = p.add_subparsers(dest="command", required=True)
    r = commands.add_parser("run")
    r.add_argument("out")
    r.add_argument("--workers", type=int, default=8)
    r.add_argument("--seeds", default="1,2,3")
    r.add_argument("--draws", type=positive, default=1, metavar="K", help="live runs of each seed (default: 1)")
    r.add_argument("--ours", default="sticky_least_loaded,sticky_balanced,kv_aware,cache_aware,round_robin,"
                                      "consistent_hash", help="this package's policies")
    r.add_argument("--rust", default=None, metavar="PYTHON", help="the Rust router's python, for its arms")
    r.add_argument("--time-scale", default="0.1", help="the live run's (simulate runs in virtual time)")
    commands.add_parser("report").add_argument("out")
    argv = sys.argv[1:]
    # After `--`: the shape and pressures, given to both rollout and simulate as they are.
    split = argv.index("--") if "--" in argv else len(argv)
    o = p.parse_args(argv[:split])
    o.bench_args = argv[split + 1:]
    run(o) if o.command == "run" else report(o)


if __name__ == "__main__":
    main()
