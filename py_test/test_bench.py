"""`python -m vllm_router.bench simulate`: the engine's simulator started from Python, its table,
its --json object and its one-line errors passed through."""

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON_DIR = str(Path(__file__).resolve().parent.parent / "python")
SMALL = ["--workers", "4", "--groups", "4", "--samples", "4"]


def bench_env():
    return dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))


def bench(*args):
    return subprocess.run([sys.executable, "-m", "vllm_router.bench", *args], env=bench_env(),
                          capture_output=True, text=True, timeout=120)


def test_json_has_one_result_per_policy_with_the_agreed_keys(engine_jar):
    run = bench("simulate", *SMALL, "--policies", "sticky_least_loaded,round_robin", "--json")
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)["results"]
    assert [r["policy"] for r in results] == ["sticky_least_loaded", "round_robin"]
    for r in results:
        assert {"policy", "makespan_s", "group_latency_s", "trajectory_latency_s", "prefix_hit_rate",
                "recomputed_tokens", "imbalance", "preemptions", "turns", "errors"} <= set(r)
        assert set(r["group_latency_s"]) == {"p50", "p90", "max"}
        assert set(r["trajectory_latency_s"]) == {"p50", "p90"}
        assert r["errors"] == 0
    assert results[0]["turns"] == results[1]["turns"] > 0


def test_without_json_it_prints_a_table(engine_jar):
    run = bench("simulate", *SMALL, "--policies", "consistent_hash", "--pressure", "low,high")
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""  # no progress line when stderr is not a terminal
    rows = [line.split() for line in run.stdout.splitlines()]
    assert ["low", "consistent_hash"] in [row[:2] for row in rows]
    assert ["high", "consistent_hash"] in [row[:2] for row in rows]


def test_on_a_terminal_a_progress_line_is_kept(engine_jar):
    terminal, child_side = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "vllm_router.bench", "simulate", *SMALL, "--policies",
                                "round_robin"], env=bench_env(), stdout=subprocess.PIPE, stderr=child_side)
    os.close(child_side)
    out, _ = process.communicate(timeout=120)
    shown = b""
    try:
        while True:
            shown += os.read(terminal, 4096)
    except OSError:  # EIO: the child's side is closed and everything was read
        pass
    os.close(terminal)
    assert process.returncode == 0
    assert b"simulate: 1/1 runs done (last: round_robin at moderate pressure)" in shown
    assert b"round_robin" in out


def test_the_same_seed_gives_the_same_results_and_a_trace_replays_them(engine_jar, tmp_path):
    trace = tmp_path / "batch.jsonl"
    first = bench("simulate", *SMALL, "--seed", "5", "--write-trace", str(trace), "--json")
    again = bench("simulate", *SMALL, "--seed", "5", "--json")
    replayed = bench("simulate", "--workers", "4", "--trace", str(trace), "--json")
    assert first.returncode == again.returncode == replayed.returncode == 0, replayed.stderr
    assert json.loads(first.stdout)["results"] == json.loads(again.stdout)["results"]
    assert json.loads(first.stdout)["results"] == json.loads(replayed.stdout)["results"]


@pytest.mark.parametrize("args, message", [
    (["--policies", "sticky_least_loaded,fastest"], "simulate: unknown policy 'fastest'; expected one of "),
    (["--workers", "0"], "simulate: --workers must be > 0, got 0"),
    (["--workers", "-4"], "simulate: --workers must be > 0, got -4"),
    (["--groups", "0"], "simulate: --groups must be > 0, got 0"),
    (["--samples", "-1"], "simulate: --samples must be > 0, got -1"),
    (["--pressure", "extreme"], "simulate: pressure must be low, moderate, high or a ratio > 0, got 'extreme'"),
])
def test_bad_input_is_one_line_and_a_failing_status(engine_jar, args, message):
    run = bench("simulate", *args)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.startswith(message)
    assert run.stderr.count("\n") == 1


def test_a_malformed_trace_line_is_named_and_nothing_runs(engine_jar, tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"session_id":"a_0","turn":0,"delay_s":0,"system_tokens":4,"task_tokens":4,'
                     '"prompt_tokens":8,"output_tokens":2,"abandoned":false}\n'
                     '{"session_id":"a_0","turn":1,"delay_s":0.5,"system_tokens":4,"task_tokens":4,'
                     '"prompt_tokens":9,"output_tokens":2,"abandoned":false}\n')
    run = bench("simulate", "--trace", str(trace), "--json")
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == (f"simulate: {trace}: trace line 2: prompt_tokens 9 is shorter than the previous "
                          "turn's prompt and output (10)\n")


def test_an_unknown_command_is_one_line():
    run = bench("race")
    assert run.returncode == 2
    assert run.stderr == "python -m vllm_router.bench: unknown command 'race'; expected one of: simulate\n"
