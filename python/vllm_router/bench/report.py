"""The table and the PNG of a rollout benchmark, from the `--json` object both `simulate` and
`rollout` print (the table has the columns of the engine's own `simulate` table)."""

import os
from typing import List, Optional

COLORS = ["#2563eb", "#f59e0b", "#10b981", "#8b5cf6", "#ef4444", "#6b7280", "#0ea5e9", "#84cc16"]


def table(report: dict, workers: int, latency_note: str) -> str:
    """The results as the engine's `simulate` prints them: one row per (pressure, policy)."""
    w = report["workload"]
    # Another router's rows are named ROUTER:POLICY, longer than a policy.
    width = max([20, *(len(r["policy"]) for r in report["results"])])
    origin = f"seed {w['seed']}" if w.get("trace") is None else f"trace {w['trace']}"
    lines = [f"{w['trajectories']} trajectories in {w['groups']} groups, {w['turns']} turns, {origin}; "
             f"{workers} workers",
             f"{'pressure':<9} {'policy':<{width}} {'makespan':>9} {'group50':>9} {'group90':>9} {'groupmax':>9} "
             f"{'traj50':>9} {'traj90':>9} {'hit%':>6} {'recomputed':>12} {'imbal':>6} {'preempt':>8} "
             f"{'errors':>6}"]
    for r in report["results"]:
        g, t = r["group_latency_s"], r["trajectory_latency_s"]
        lines.append(f"{r['pressure']:<9} {r['policy']:<{width}} {r['makespan_s']:>9.1f} {g['p50']:>9.1f} "
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
    """Draws, for each pressure, each result's group latency CDF and its prefix hit rate into a PNG
    at `path`; the reason when it cannot (matplotlib is the `demo` extra). A policy keeps one colour
    throughout; another router's run of it (`ROUTER:POLICY`) is dashed, its bar hatched."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is missing (pip install 'vllm-router-jvm[demo]')"
    results: List[dict] = report["results"]
    pressures = list(dict.fromkeys(r["pressure"] for r in results))
    policies = list(dict.fromkeys(r["policy"].rpartition(":")[2] for r in results))
    color = {p: COLORS[i % len(COLORS)] for i, p in enumerate(policies)}
    # One row per pressure, on one latency axis, so the rows compare.
    figure, panels = plt.subplots(len(pressures), 2, squeeze=False, sharex="col",
                                  figsize=(13, 0.8 + 3.2 * len(pressures)), gridspec_kw={"width_ratios": [1.7, 1]})
    figure.suptitle(title, fontsize=12, fontweight="bold")
    for row, ((cdf, hits), pressure) in enumerate(zip(panels, pressures)):
        rows = [r for r in results if r["pressure"] == pressure]
        for r in rows:
            values = sorted(r.get("group_latencies_s", []))
            if values:
                share = [(i + 1) / len(values) for i in range(len(values))]
                cdf.step(values, share, where="post", label=r["policy"], color=color[_base(r)],
                         linestyle="--" if _foreign(r) else "-", linewidth=1.4, alpha=0.85)
        cdf.axhline(0.9, color="#9ca3af", linewidth=0.8, linestyle=":")
        cdf.text(1.0, 0.9, "p90 ", transform=cdf.get_yaxis_transform(), ha="right", va="bottom", fontsize=7,
                 color="#6b7280")
        cdf.set_title(f"{pressure} pressure: group latency CDF (a group is done when its slowest sample is)",
                      fontsize=9)
        if row == len(pressures) - 1:
            cdf.set_xlabel("group latency (model seconds)", fontsize=8)
            hits.set_xlabel("cached / prompt tokens (%)", fontsize=8)
        cdf.set_ylabel("share of groups", fontsize=8)
        cdf.set_ylim(0, 1.02)
        cdf.legend(fontsize=7, frameon=False, loc="lower right", ncol=2 if len(rows) > 6 else 1)
        rate = [100 * r["prefix_hit_rate"] for r in rows]
        bars = hits.barh(range(len(rows)), rate, color=[color[_base(r)] for r in rows],
                         hatch=[("//" if _foreign(r) else "") for r in rows], edgecolor="white")
        hits.bar_label(bars, [f"{h:.0f}%" for h in rate], padding=2, fontsize=7)
        hits.set_yticks(range(len(rows)), [r["policy"] for r in rows], fontsize=7)
        hits.invert_yaxis()
        hits.set_xlim(0, 110)
        hits.set_title(f"{pressure} pressure: prefix-cache hit rate", fontsize=9)
        for axes in (cdf, hits):
            axes.spines[["top", "right"]].set_visible(False)
            axes.tick_params(labelsize=7)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return None


def _base(result: dict) -> str:
    """The policy of a row, without the router's name another router's rows carry."""
    return result["policy"].rpartition(":")[2]


def _foreign(result: dict) -> bool:
    return ":" in result["policy"]
