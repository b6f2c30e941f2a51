"""examples/bench/rollout_matrix.py: its report over several live draws of each seed, its ratios to
sticky_least_loaded with each seed's draws folded first, and its refusal of a draw count that is not a
whole number >= 1 (no live run here: `report` reads records)."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "rollout_matrix.py"


def result(policy: str, g90: float) -> dict:
    return {"policy": policy, "pressure": "high", "workers": 8, "makespan_s": g90 + 50,
            "group_latency_s": {"p50": g90 / 2, "p90": g90, "max": g90 + 50},
            "trajectory_latency_s": {"p50": 20.0, "p90": 150.0}, "prefix_hit_rate": 0.9,
            "imbalance": 1.2, "preemptions": 0, "errors": 0}


def write_record(out: Path, seed: int, draw: int, live_g90: float, balanced_g90: float = None) -> None:
    workload = {"trajectories": 16, "groups": 2, "turns": 40, "seed": seed}
    live = [result("sticky_least_loaded", live_g90)]
    if balanced_g90 is not None:
        live.append(result("sticky_balanced", balanced_g90))
    record = {"command": ["python", "-m", "vllm_router.bench", "rollout"], "uptime_before": "u0",
              "uptime_after": "u1", "wall_s": 1, "draw": draw,
              "live": {"workload": workload, "results": live},
              "simulated": {"workload": workload, "results": [result("sticky_least_loaded", 300.0)]}}
    (out / f"w8-seed{seed}-draw{draw}.json").write_text(json.dumps(record))


def matrix(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_the_report_takes_medians_and_the_range_over_every_draw_of_every_seed(tmp_path):
    for seed, draws in ((1, (330.0, 480.0, 360.0)), (2, (380.0, 780.0, 480.0))):
        for draw, g90 in enumerate(draws, start=1):
            write_record(tmp_path, seed, draw, g90)
    done = matrix("report", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "seeds 1, 2, 6 draws (medians)" in done.stdout
    # Six draws: 330, 360, 380, 480, 480, 780; median 430, range 330-780.
    assert "| high | sticky_least_loaded | 480.0 | 215.0 | 430.0 | 330.0-780.0 | 480.0 |" in done.stdout
    assert "| high | sticky_least_loaded | 300.0 | 430.0 | +43% |" in done.stdout
    assert "Against sticky_least_loaded" not in done.stdout, "no other policy to compare"


def test_the_ratios_to_sticky_least_loaded_fold_each_seeds_draws_before_the_median_over_seeds(tmp_path):
    # Seed medians of group p90: sticky_least_loaded 330, 400, 500 (median 400); sticky_balanced 330, 440,
    # 450 (median 440): 1.100. Pooled over the six draws instead, it would be 385 against 450, 0.856.
    runs = {1: ((300.0, 330.0), (600.0, 330.0), (330.0, 330.0)), 2: ((400.0, 440.0), (400.0, 440.0)),
            3: ((500.0, 450.0),)}
    for seed, draws in runs.items():
        for draw, (least_loaded, balanced) in enumerate(draws, start=1):
            write_record(tmp_path, seed, draw, least_loaded, balanced)
    done = matrix("report", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert ("### Against sticky_least_loaded, 8 workers: each seed's median over its draws, then the median "
            "over seeds 1, 2, 3") in done.stdout
    # makespan and group max are group p90 + 50 (seed medians 450 and 490), group p50 half of it.
    assert "| high | sticky_balanced | 1.089 | 1.100 | 1.100 | 1.089 | 1.000 | 1.000 | 1.000 | 1.000 |" in done.stdout


def test_a_draw_count_below_one_or_not_a_number_is_refused_before_any_run(tmp_path):
    for bad in ("0", "-2", "two"):
        done = matrix("run", str(tmp_path / "out"), "--draws", bad)
        assert done.returncode == 2
        assert f"argument --draws: must be a whole number >= 1, got '{bad}'" in done.stderr
        assert not (tmp_path / "out").exists(), "nothing was written"
