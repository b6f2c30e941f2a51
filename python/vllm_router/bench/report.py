"""The table and the PNG of a rollout benchmark, from the `--json` object both `simulate` and
`rollout` print (the table has the columns of the engine's own `simulate` table)."""

import os
from typing import List, Optional

COLORS = ["#2563eb", "#f59e0b", "#10b981", "#8b5cf6", "#ef4444", "#6b7280", "#0ea5e9", "#84cc16"]


def table(report: dict, workers: int, latency_note: str) -> str:
    """The results as the engine's `simulate` prints them: one row per (pressure, policy)."""
    w = report["workload"]
    origin = f"seed {w['seed']}" if w.get("trace") is None else f"trace {w['trace']}"
    lines = [f"{w['trajectories']} trajectories in {w['groups']} groups, {w['turns']} turns, {origin}; "
             f"{workers} workers",
             f"{'pressure':<9} {'policy':<20} {'makespan':>9} {'group50':>9} {'group90':>9} {'groupmax':>9} "
             f"{'traj50':>9} {'traj90':>9} {'hit%':>6} {'recomputed':>12} {'imbal':>6} {'preempt':>8} "
             f"{'errors':>6}"]
    for r in report["results"]:
        g, t = r["group_latency_s"], r["trajectory_latency_s"]
        lines.append(f"{r['pressure']:<9} {r['policy']:<20} {r['makespan_s']:>9.1f} {g['p50']:>9.1f} "
                     f"{g['p90']:>9.1f} {g['max']:>9.1f} {t['p50']:>9.1f} {t['p90']:>9.1f} "
                     f"{100 * r['prefix_hit_rate']:>6.1f} {r['recomputed_tokens']:>12d} {r['imbalance']:>6.2f} "
                     f"{r['preemptions']:>8d} {r['errors']:>6d}")
    lines.append(latency_note)
    return "\n".join(lines) + "\n"


def without_latency_lists(report: dict) -> dict:
    """The report as `--json` prints it: each group's latency is for the PNG only."""
    return {**report, "results": [{k: v for k, v in r.items() if k != "group_latencies_s"}
                                  for r in report["results"]]}


def write_plot(report: dict, path: str, title: str) -> Optional[str]:
    """Draws each result's group latency CDF and its prefix hit rate into a PNG at `path`; the
    reason when it cannot (matplotlib is the `demo` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is missing (pip install 'vllm-router-jvm[demo]')"
    results: List[dict] = report["results"]
    pressures = sorted({r["pressure"] for r in results}, key=[r["pressure"] for r in results].index)
    labels = [r["policy"] if len(pressures) == 1 else f"{r['policy']} ({r['pressure']})" for r in results]
    policies = list(dict.fromkeys(r["policy"] for r in results))
    color = {p: COLORS[i % len(COLORS)] for i, p in enumerate(policies)}
    styles = ["-", "--", ":", "-."]
    figure, (cdf, hits) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [1.6, 1]})
    figure.suptitle(title, fontsize=12, fontweight="bold")
    for r, label in zip(results, labels):
        values = sorted(r.get("group_latencies_s", []))
        if not values:
            continue
        share = [(i + 1) / len(values) for i in range(len(values))]
        cdf.step(values, share, where="post", label=label, color=color[r["policy"]],
                 linestyle=styles[pressures.index(r["pressure"]) % len(styles)])
    cdf.axhline(0.9, color="#9ca3af", linewidth=0.8, linestyle=":")
    cdf.set_title("Group latency CDF (a group is done when its slowest sample is)")
    cdf.set_xlabel("group latency (model seconds)")
    cdf.set_ylabel("share of groups")
    cdf.legend(fontsize=8, frameon=False)
    rate = [100 * r["prefix_hit_rate"] for r in results]
    bars = hits.bar(range(len(results)), rate, color=[color[r["policy"]] for r in results])
    hits.bar_label(bars, [f"{h:.0f}%" for h in rate], padding=2, fontsize=8)
    hits.set_xticks(range(len(results)), labels, rotation=30, ha="right", fontsize=8)
    hits.set_ylim(0, 105)
    hits.set_title("Prefix-cache hit rate")
    hits.set_ylabel("cached / prompt tokens (%)")
    for axes in (cdf, hits):
        axes.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return None
