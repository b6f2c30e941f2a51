"""The report of a load_compare.sh run: its JSON lines -> tables on stdout and a PNG next to them.

    python examples/bench/load_compare_report.py bench-results/load_compare-<time>.jsonl

One table per run (up to PER_RUN_TABLES runs; a side-by-side run with ROUNDS has a "run" per round),
then the median over runs with ratios of the medians against HAProxy (when it ran), then the paired
ratios (per run, the arm's value over HAProxy's in that run; their median and range), then the SSE
probe. The PNG (same name, .png) has one row per concurrency level: latency percentiles, CPU
per request and RSS per arm. matplotlib is optional: without it the tables are still printed.
"""

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REFERENCE_ARM = "haproxy"
PER_RUN_TABLES = 4


def load(path):
    levels, sse = [], []
    for line in Path(path).read_text().splitlines():
        record = json.loads(line)
        if "sse" in record:
            sse.append(record)
        else:
            levels.append(measures(record))
    return levels, sse


def measures(record):
    w, proxy = record["wrk"], record["proxy"]
    seconds = w["duration_us"] / 1e6
    row = {
        "run": record["run"], "arm": record["arm"], "c": record["concurrency"],
        "rps": w["requests"] / seconds,
        "p50": w["p50_us"] / 1000, "p99": w["p99_us"] / 1000, "p999": w["p999_us"] / 1000,
        # Not in results written before these two were added.
        "p90": w["p90_us"] / 1000 if "p90_us" in w else None,
        "p995": w["p995_us"] / 1000 if "p995_us" in w else None,
        "errors": w["socket_errors"] + w["status_errors"],
        "cpu": None, "rss": None, "idle": None, "start": None, "busiest": None,
        "host_idle": record.get("host_idle"),  # not in results written before it was added
        "own_sessions": record.get("own_sessions"),  # likewise
        # The backends' CPU a request (their whole process tree), likewise.
        "backend_cpu": (record["backend_cpu_ticks"] / record["clk_tck"] * 1e6 / max(1, w["requests"])
                        if "backend_cpu_ticks" in record else None),
    }
    if proxy and "busiest_thread" in proxy:  # not in results written before it was added
        busiest = proxy["busiest_thread"]
        row["busiest"] = (busiest["run_ns"] / 1e9 / seconds, busiest["wait_ns"] / 1e9 / seconds,
                          busiest["busy_threads"])
    if proxy:
        row["cpu"] = proxy["cpu_ticks"] / record["clk_tck"] * 1e6 / max(1, w["requests"])
        row["rss"] = proxy["rss_kib"] / 1024
        row["idle"] = proxy["idle_rss_kib"] / 1024 if proxy["idle_rss_kib"] is not None else None
        row["start"] = proxy["start_s"]
    return row


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


HEADER = (f'{"arm":<14} {"c":>3} {"req/s":>8} {"p50 ms":>7} {"p99 ms":>7} {"p99.9 ms":>8} '
          f'{"cpu us/req":>10} {"RSS MiB":>8} {"idle MiB":>8} {"start s":>7}')


def line(row, suffix=""):
    return (f'{row["arm"]:<14} {row["c"]:>3} {row["rps"]:>8.0f} {row["p50"]:>7.2f} {row["p99"]:>7.2f} '
            f'{row["p999"]:>8.2f} {fmt(row["cpu"], ".1f"):>10} {fmt(row["rss"], ".0f"):>8} '
            f'{fmt(row["idle"], ".0f"):>8} {fmt(row["start"], ".2f"):>7}{suffix}')


def median_rows(levels):
    groups = defaultdict(list)
    for row in levels:
        groups[(row["arm"], row["c"])].append(row)
    medians = []
    for (arm, c), rows in groups.items():
        m = {"arm": arm, "c": c, "runs": len(rows), "errors": sum(r["errors"] for r in rows)}
        for key in ("rps", "p50", "p99", "p999", "cpu", "rss", "idle", "start"):
            values = [r[key] for r in rows if r[key] is not None]
            m[key] = statistics.median(values) if values else None
        medians.append(m)
    return medians


def ratio(value, reference):
    if value is None or not reference:
        return "-"
    return f"{value / reference:.2f}"


def paired_ratios(levels):
    """Per (arm, level): the median, lowest and highest over runs of the arm's value over the reference's in the
    same run. Noise shared by neighbouring windows cancels in each ratio, which ratios of medians cannot do."""
    reference = {(r["run"], r["c"]): r for r in levels if r["arm"] == REFERENCE_ARM}
    groups = defaultdict(list)
    for row in levels:
        ref = reference.get((row["run"], row["c"]))
        if row["arm"] != REFERENCE_ARM and ref:
            groups[(row["arm"], row["c"])].append((row, ref))
    if not groups:
        return []
    ordered = sorted(groups.items(), key=lambda item: (item[0][1], item[0][0]))
    out = ["", f"paired ratios against {REFERENCE_ARM} in the same run: median [lowest, highest] over runs",
           f'{"arm":<14} {"c":>3} {"runs":>4} {"x cpu":>17} {"x req/s":>17} {"x p99":>17}']
    for (arm, c), pairs in ordered:
        cells = []
        for key in ("cpu", "rps", "p99"):
            ratios = pair_ratios(pairs, key)
            cells.append(f"{statistics.median(ratios):.2f} [{ratios[0]:.2f}, {ratios[-1]:.2f}]" if ratios else "-")
        out.append(f"{arm:<14} {c:>3} {len(pairs):>4} {cells[0]:>17} {cells[1]:>17} {cells[2]:>17}")
    # Where in the distribution an arm's latency parts from the reference's: all through it (a slower proxy), or
    # only in the last percent (pauses, preemption).
    shape = (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p995", "p99.5"), ("p999", "p99.9"))
    out += ["", f"paired latency ratios against {REFERENCE_ARM} in the same run, by percentile: median over runs",
            f'{"arm":<14} {"c":>3} ' + " ".join(f"{label:>6}" for _, label in shape)]
    for (arm, c), pairs in ordered:
        cells = []
        for key, _ in shape:
            ratios = pair_ratios(pairs, key)
            cells.append(f"{statistics.median(ratios):>6.2f}" if ratios else f'{"-":>6}')
        out.append(f"{arm:<14} {c:>3} " + " ".join(cells))
    return out


def pair_ratios(pairs, key):
    """The arm's value over the reference's, per run where both have it; sorted."""
    return sorted(row[key] / ref[key] for row, ref in pairs if row[key] is not None and ref[key])


def busiest_threads(levels):
    """Per (arm, level), medians over runs: how much of the window the proxy's busiest thread ran and spent
    runnable but waiting for a CPU, how many threads ran over a tenth of its time, and the share of the machine's
    CPU time nothing used. A thread that runs and waits nearly all the window is where requests queue, and while it
    works through a round the client and the workers wait on it with a CPU idle; haproxy-1t, HAProxy on one thread,
    shows what that costs a proxy that is not ours. Last, the backends' CPU a request: the same backends serve every
    arm, so a proxy that makes them work harder a request shows here, and on a saturated host that is throughput the
    proxy's own CPU column does not account for."""
    groups = defaultdict(list)
    for row in levels:
        if row["busiest"]:
            groups[(row["arm"], row["c"])].append(row)
    if not groups:
        return []
    out = ["", "busiest thread of each proxy: share of the window running / waiting for a CPU; host CPU time idle;"
           " the backends' CPU a request (median over runs)",
           f'{"arm":<14} {"c":>3} {"running":>8} {"waiting":>8} {"busy threads":>12} {"host idle":>9}'
           f' {"backend us/req":>14}']
    for (arm, c), rows in sorted(groups.items(), key=lambda item: (item[0][1], item[0][0])):
        running = statistics.median(r["busiest"][0] for r in rows)
        waiting = statistics.median(r["busiest"][1] for r in rows)
        threads = statistics.median(r["busiest"][2] for r in rows)
        idles = [r["host_idle"] for r in rows if r["host_idle"] is not None]
        idle = statistics.median(idles) if idles else None
        backends = [r["backend_cpu"] for r in rows if r["backend_cpu"] is not None]
        backend = statistics.median(backends) if backends else None
        out.append(f"{arm:<14} {c:>3} {running:>8.0%} {waiting:>8.0%} {threads:>12.0f} {fmt(idle, '.0%'):>9}"
                   f" {fmt(backend, '.1f'):>14}")
    return out


def report(levels, sse):
    out = []
    modes = {r["own_sessions"] for r in levels if r["own_sessions"] is not None}
    if modes:
        out.append("backends and proxies " + " / ".join(
            "each in a session of their own (OWN_SESSIONS=1)" if mode else "in the script's session (OWN_SESSIONS=0)"
            for mode in sorted(modes, reverse=True)))
        out.append("")
    runs = sorted({r["run"] for r in levels})
    if len(runs) > PER_RUN_TABLES:
        out.append(f"{len(runs)} runs (rounds); every window is a line of the .jsonl")
        out.append("")
        runs = []
    for run in runs:
        out.append(f"run {run}")
        out.append(HEADER)
        for row in (r for r in levels if r["run"] == run):
            out.append(line(row, f'  ({row["errors"]} errors)' if row["errors"] else ""))
        out.append("")
    medians = median_rows(levels)
    out.append(f'median of {max(m["runs"] for m in medians)} run(s); ratios against {REFERENCE_ARM} '
               f'(cpu, req/s, p99, RSS)')
    out.append(HEADER + "   x cpu  x req/s  x p99  x RSS")
    reference = {m["c"]: m for m in medians if m["arm"] == REFERENCE_ARM}
    for m in sorted(medians, key=lambda m: (m["c"], [r["arm"] for r in levels].index(m["arm"]))):
        ref = reference.get(m["c"], {})
        out.append(line(m) + f'   {ratio(m["cpu"], ref.get("cpu")):>5} {ratio(m["rps"], ref.get("rps")):>7} '
                   f'{ratio(m["p99"], ref.get("p99")):>6} {ratio(m["rss"], ref.get("rss")):>6}'
                   + (f'  ({m["errors"]} errors)' if m["errors"] else ""))
    out.extend(paired_ratios(levels))
    out.extend(busiest_threads(levels))
    if sse:
        out.append("")
        out.append("SSE: time to first byte of a 2 KiB SSE answer (median of 200 after 2,000 unmeasured, one keep-alive connection),")
        out.append("the part the proxy adds (minus direct), and the rate of a 256 MiB SSE answer relayed (median of 5 after 3 unmeasured)")
        out.append(f'{"arm":<14} {"ttfb us":>8} {"added us":>8} {"MiB/s":>8}')
        by_arm = defaultdict(list)
        for record in sse:
            if record["sse"]:
                by_arm[record["arm"]].append(record)
        for arm, records in by_arm.items():
            ttfb = statistics.median(r["sse"]["ttfb_us"] for r in records)
            directs = [r["direct_sse"]["ttfb_us"] for r in records if r["direct_sse"]]
            added = ttfb - statistics.median(directs) if directs else None
            rate = statistics.median(r["sse"]["sse_bytes_per_s"] for r in records) / (1 << 20)
            out.append(f"{arm:<14} {ttfb:>8.0f} {fmt(added, '.0f'):>8} {rate:>8.0f}")
    return "\n".join(out), medians


def plot(medians, path):
    """Draws the median table; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    levels = sorted({m["c"] for m in medians})
    arms = list(dict.fromkeys(m["arm"] for m in medians))
    figure, axes = plt.subplots(len(levels), 3, figsize=(16, 4.2 * len(levels)), squeeze=False)
    colors = ["#2563eb", "#f59e0b", "#10b981", "#8b5cf6", "#ef4444", "#6b7280", "#0ea5e9"]
    for row, c in enumerate(levels):
        at = {m["arm"]: m for m in medians if m["c"] == c}
        shown = [a for a in arms if a in at]
        latency, cpu, rss = axes[row]
        width = 0.8 / 3
        for k, (key, label) in enumerate((("p50", "p50"), ("p99", "p99"), ("p999", "p99.9"))):
            latency.bar([i + (k - 1) * width for i in range(len(shown))], [at[a][key] for a in shown], width,
                        label=label, color=colors[k])
        latency.set_xticks(range(len(shown)), shown, rotation=20)
        latency.set_ylabel("ms")
        latency.set_title(f"latency, c={c}")
        latency.legend()
        with_proxy = [a for a in shown if at[a]["cpu"] is not None]
        cpu.bar(with_proxy, [at[a]["cpu"] for a in with_proxy],
                color=[colors[arms.index(a) % len(colors)] for a in with_proxy])
        cpu.set_ylabel("CPU us per request (proxy's process tree)")
        cpu.set_title(f"CPU per request, c={c}")
        cpu.tick_params(axis="x", rotation=20)
        rss.bar(with_proxy, [at[a]["rss"] for a in with_proxy],
                color=[colors[arms.index(a) % len(colors)] for a in with_proxy])
        rss.set_ylabel("MiB")
        rss.set_title(f"RSS of the process tree under load, c={c}")
        rss.tick_params(axis="x", rotation=20)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True


def main():
    results = Path(sys.argv[1])
    levels, sse = load(results)
    if not levels:
        print("no results")
        return 1
    text, medians = report(levels, sse)
    print(text)
    png = results.with_suffix(".png")
    if plot(medians, png):
        print(f"\nplot: {png}")
    else:
        print("\nplot: not drawn, matplotlib is missing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
