"""`python -m vllm_router.bench simulate`: the engine's simulator started from Python, its table,
its --json object and its one-line errors passed through; `rollout`: the same workload live, over
real sockets through a router to mock workers that run the engine model."""

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_router.bench import rollout as live

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


def test_without_json_it_prints_a_table(engine_jar, tmp_path):
    run = bench("simulate", *SMALL, "--policies", "consistent_hash", "--pressure", "low,high",
                "--plot", str(tmp_path / "cdf.png"))
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
    (["--shape", "huge"], "simulate: --shape must be default, small or long, got 'huge'"),
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
    assert run.stderr == ("python -m vllm_router.bench: unknown command 'race'; expected one of: simulate, "
                          "rollout\n")


TINY = ["--workers", "2", "--groups", "2", "--samples", "2", "--time-scale", "0.05"]
RESULT_KEYS = {"policy", "pressure", "workers", "kv_blocks_per_worker", "makespan_s", "group_latency_s",
               "trajectory_latency_s", "turn_latency_s", "prefix_hit_rate", "recomputed_tokens", "imbalance", "preemptions",
               "turns", "errors"}


def rollout(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "vllm_router.bench", "rollout", *args], env=bench_env(),
                          capture_output=True, text=True, timeout=timeout)


def test_a_live_rollout_reports_what_simulate_reports_for_each_policy(engine_jar, tmp_path):
    placements = tmp_path / "trajectories.jsonl"
    run = rollout(*TINY, "--policies", "sticky_least_loaded,kv_aware", "--json", "--trajectories", str(placements))
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    simulated = json.loads(bench("simulate", "--workers", "2", "--groups", "2", "--samples", "2",
                                 "--policies", "sticky_least_loaded,kv_aware", "--json").stdout)
    assert report["workload"] == simulated["workload"]
    assert [r["policy"] for r in report["results"]] == ["sticky_least_loaded", "kv_aware"]
    for live, sim in zip(report["results"], simulated["results"]):
        # Live alone: what each mock worker's engine model did, and whether it kept up with the wall clock.
        engines = live.pop("worker_engines")
        engine_keys = {"worker", "peak_used_blocks", "preemptions", "fell_behind", "behind_s"}
        assert [set(e) for e in engines] == [engine_keys] * 2
        assert sum(e["preemptions"] for e in engines) == live["preemptions"]
        assert all(0 < e["peak_used_blocks"] <= live["kv_blocks_per_worker"] for e in engines)
        assert set(live) == set(sim) == RESULT_KEYS
        assert live["errors"] == 0
        assert live["turns"] == sim["turns"] == report["workload"]["turns"]
        assert live["kv_blocks_per_worker"] == sim["kv_blocks_per_worker"]
        # Every trajectory opens with the shared system prompt, so some sample finds it cached.
        assert 0 < live["prefix_hit_rate"] < 1
        assert live["group_latency_s"]["p50"] <= live["group_latency_s"]["p90"] <= live["group_latency_s"]["max"]
        assert live["makespan_s"] >= live["group_latency_s"]["max"] > 0
    # Each arm's trajectories, each answered by one of the mock workers (sessions stick).
    lines = [json.loads(line) for line in placements.read_text().splitlines()]
    assert [line["policy"] for line in lines] == ["sticky_least_loaded"] * 4 + ["kv_aware"] * 4
    assert {line["session_id"] for line in lines} == {"task00000_0", "task00000_1", "task00001_0", "task00001_1"}
    assert all(len(line["workers"]) >= 1 and line["workers"][0].startswith("worker-") for line in lines)
    assert sum(line["turns"] for line in lines) == 2 * report["workload"]["turns"]
    assert min(line["start_s"] for line in lines) == 0


def test_a_live_rollout_without_json_prints_the_simulate_table(engine_jar, tmp_path):
    run = rollout(*TINY, "--policies", "round_robin", "--abandon", "0.5", "--plot", str(tmp_path / "cdf.png"))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("4 trajectories in 2 groups, ") and lines[0].endswith(", seed 1; 2 workers")
    assert lines[1].split()[:3] == ["pressure", "policy", "makespan"]
    row = lines[2].split()
    assert row[:2] == ["moderate", "round_robin"]
    assert row[-1] == "0"  # errors: an abandoned trajectory is not one
    assert lines[3].startswith("latencies in model seconds (wall seconds / time scale 0.05)")


@pytest.mark.parametrize("args, message", [
    (["--policies", "sticky_least_loaded,fastest"], "unknown policy 'fastest'; expected one of "),
    (["--workers", "0"], "--workers must be > 0, got 0"),
    (["--groups", "-2"], "--groups must be > 0, got -2"),
    (["--samples", "0"], "--samples must be > 0, got 0"),
    (["--time-scale", "0"], "--time-scale must be > 0, got 0.0"),
    (["--router-python", "/nonexistent/python3"], "--router-python /nonexistent/python3: cannot run it"),
])
def test_bad_rollout_input_is_one_line_before_any_traffic(engine_jar, args, message):
    run = rollout(*args)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.startswith(f"python -m vllm_router.bench rollout: {message}"), run.stderr
    assert run.stderr.count("\n") == 1


def test_a_router_python_without_the_package_is_one_line(engine_jar, tmp_path):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'vllm_router'\" >&2\nexit 1\n")
    python.chmod(0o755)
    run = rollout("--router-python", str(python))
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == (f"python -m vllm_router.bench rollout: --router-python {python}: cannot import "
                          "vllm_router.launch_router (ModuleNotFoundError: No module named 'vllm_router')\n")


def test_a_live_rollout_has_the_engine_class_cache_before_its_first_arm(engine_jar, monkeypatch):
    # A router started without its class cache starts the cache's build beside it, which would
    # share the CPU with the timed arms.
    events = []
    monkeypatch.setattr(live.class_cache, "ready", lambda java, jar: events.append("class cache ready"))
    monkeypatch.setattr(live, "run_arm", lambda arm, *rest: events.append(arm.label) or {})
    live.prepare([*SMALL, "--seed", "1", "--policies", "consistent_hash"]).run(progress=False)
    assert events[0] == "class cache ready"
    assert events[1:] and set(events[1:]) == {"consistent_hash"}


def test_a_malformed_trace_line_stops_a_live_rollout_before_it_starts(engine_jar, tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"session_id":"a_0","turn":0,"delay_s":0,"system_tokens":4,"task_tokens":4,'
                     '"prompt_tokens":8,"output_tokens":2,"abandoned":false}\n'
                     'not json\n')
    run = rollout("--trace", str(trace), "--workers", "2")
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.startswith(f"python -m vllm_router.bench rollout: {trace}: trace line 2: ")
    assert run.stderr.count("\n") == 1


RUST_PYTHON = (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
               / "vllm-router" / "rust-router-0.1.17" / "bin" / "python")
needs_rust = pytest.mark.skipif(not RUST_PYTHON.exists(),
                                reason=f"upstream's Rust router 0.1.17 is not installed at {RUST_PYTHON}")


@needs_rust
def test_the_rust_router_is_an_arm_beside_ours_with_its_rows_named(engine_jar):
    run = rollout(*TINY, "--router-python", str(RUST_PYTHON), "--policies", "sticky_least_loaded,consistent_hash",
                  "--ours", "consistent_hash", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert [r["policy"] for r in report["results"]] == [
        "consistent_hash", "rust-0.1.17:sticky_least_loaded", "rust-0.1.17:consistent_hash"]
    assert len(report["worker_ports"]) == 2
    for r in report["results"]:
        assert r["errors"] == 0
        assert r["turns"] == report["workload"]["turns"]
        assert 0 < r["prefix_hit_rate"] < 1


@needs_rust
def test_consistent_hash_places_each_session_alike_under_both_routers(engine_jar):
    import urllib.request

    from vllm_router.bench.rollout import other_router, our_router, stable_ports
    from vllm_router.mock_workers import MockWorkers

    def placements(url):
        workers = []
        for session in (f"task{i}_{j}" for i in range(6) for j in range(2)):
            request = urllib.request.Request(url + "/v1/completions", data=json.dumps(
                {"model": "mock", "prompt": "hello", "max_tokens": 1}).encode(),
                headers={"Content-Type": "application/json", "X-Session-ID": session})
            with urllib.request.urlopen(request, timeout=30) as answer:
                workers.append(answer.headers["x-worker-id"])
        return workers

    ports = stable_ports(4)
    with MockWorkers(4, ports=ports) as workers:
        with our_router("consistent_hash", workers.urls) as url:
            ours = placements(url)
    with MockWorkers(4, ports=ports) as workers:
        with other_router(str(RUST_PYTHON), "consistent_hash", workers.urls) as url:
            theirs = placements(url)
    assert ours == theirs
    assert len(set(ours)) > 1


@needs_rust
def test_a_policy_the_other_router_lacks_is_one_line_before_any_traffic(engine_jar):
    run = rollout(*TINY, "--router-python", str(RUST_PYTHON), "--policies", "sticky_balanced")
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.startswith(f"python -m vllm_router.bench rollout: --router-python {RUST_PYTHON}: unknown "
                                 "policy 'sticky_balanced'; expected one of ")
    assert run.stderr.count("\n") == 1


@pytest.mark.parametrize("args, message", [
    (["--workers", "-4"], "--workers must be > 0, got -4"),
    (["--pressure", "extreme"], "pressure must be low, moderate, high or a ratio > 0, got 'extreme'"),
    (["--warm-up", "-1"], "--warm-up must be >= 0, got -1"),
    (["--shape", "huge"], "--shape must be default, small or long, got 'huge'"),
    (["--ours", "round_robin"], "--ours names this package's policies beside --router-python's; "
                                "give --router-python"),
])
def test_more_bad_rollout_input_is_one_line(engine_jar, args, message):
    run = rollout(*args)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == f"python -m vllm_router.bench rollout: {message}\n"


def test_an_unwritable_trajectories_file_stops_the_run_before_any_router_starts(engine_jar, tmp_path):
    started = tmp_path / "started"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\ntouch {started}\nexit 1\n")
    python.chmod(0o755)
    placements = tmp_path / "missing" / "trajectories.jsonl"
    run = rollout("--workers", "2", "--router-python", str(python), "--trajectories", str(placements))
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == (f"python -m vllm_router.bench rollout: --trajectories {placements}: "
                          "No such file or directory\n")
    assert not started.exists()


def test_a_malformed_trace_line_stops_the_run_before_any_router_starts(engine_jar, tmp_path):
    started = tmp_path / "started"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\ntouch {started}\nexit 1\n")
    python.chmod(0o755)
    trace = tmp_path / "trace.jsonl"
    trace.write_text("{}\n")
    run = rollout("--trace", str(trace), "--workers", "2", "--router-python", str(python))
    assert run.returncode == 2
    assert run.stderr.startswith(f"python -m vllm_router.bench rollout: {trace}: trace line 1: ")
    assert not started.exists()


def tiny_trace(path: Path) -> Path:
    """Two trajectories of one group, two turns each, a tenth of a second apart."""
    lines = [{"session_id": f"task00000_{s}", "turn": k, "delay_s": 0.0 if k == 0 else 0.1, "system_tokens": 128,
              "task_tokens": 64, "prompt_tokens": 192 + 48 * k, "output_tokens": 16, "abandoned": False}
             for s in range(2) for k in range(2)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_real_vllm_arm_runs_every_arm_on_the_workers_it_is_given(engine_jar, tmp_path):
    """The arm's plumbing on mock workers that answer the routes it reads of a vLLM (its cache
    config and prefix-cache counters in /metrics, /v1/models, POST /reset_prefix_cache)."""
    from vllm_router.mock_workers import MockWorkers

    with MockWorkers(2, {"engine-model": "true", "cache-blocks": "512", "kv-events": "true"}) as workers:
        run = rollout("--worker-urls", ",".join(workers.urls), "--trace", str(tiny_trace(tmp_path / "t.jsonl")),
                      "--policies", "sticky_least_loaded,round_robin", "--warm-up", "4", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["worker_urls"] == workers.urls
    assert [r["policy"] for r in report["results"]] == ["sticky_least_loaded", "round_robin"]
    for r in report["results"]:
        assert r["pressure"] == "real"
        assert r["workers"] == 2
        assert r["kv_blocks_per_worker"] == 512
        assert (r["turns"], r["errors"]) == (4, 0)
        assert 0 <= r["prefix_hit_rate"] <= 1 and 0 <= r["answered_hit_rate"] <= 1
        assert 0 < r["turn_latency_s"]["p50"] <= r["turn_latency_s"]["p90"]


def test_calibrating_needs_vllm_latency_histograms_and_says_so_in_one_line(engine_jar, tmp_path):
    from vllm_router.mock_workers import MockWorkers

    with MockWorkers(1, {"engine-model": "true", "cache-blocks": "4096"}) as workers:
        run = rollout("--worker-urls", workers.urls[0], "--trace", str(tiny_trace(tmp_path / "t.jsonl")),
                      "--policies", "round_robin", "--warm-up", "0", "--calibrate")
    assert run.returncode == 1
    assert run.stderr == (f"python -m vllm_router.bench rollout: {workers.urls[0]}: its /metrics did not count the "
                          "probes' inter-token latency and prefill time (vLLM's vllm:inter_token_latency_seconds_count"
                          " and vllm:request_prefill_time_seconds_sum); cannot calibrate\n")


@pytest.mark.parametrize("args, message", [
    (["--worker-urls", "http://127.0.0.1:9", "--time-scale", "0.1"],
     "real vLLM workers run in real time: drop --time-scale (got 0.1)"),
    (["--worker-urls", "http://127.0.0.1:9", "--pressure", "high"],
     "real vLLM workers hold the KV cache they were started with: drop --pressure"),
    (["--worker-urls", "http://127.0.0.1:9", "--workers", "3"], "--workers 3 but --worker-urls names 1"),
    (["--model", "tiny-llama"], "--model is for real workers; give --worker-urls"),
    (["--calibrate"], "--calibrate is for real workers; give --worker-urls"),
    (["--worker-urls", "http://127.0.0.1:9", "--trajectories", "t.jsonl"],
     "--trajectories names the mock workers that answered each trajectory; drop --worker-urls"),
])
def test_bad_real_vllm_arm_input_is_one_line(engine_jar, args, message):
    run = rollout(*args)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == f"python -m vllm_router.bench rollout: {message}\n"


def test_a_worker_url_that_is_not_vllm_is_one_line_before_any_traffic(engine_jar):
    run = rollout("--worker-urls", "http://127.0.0.1:9", "--policies", "round_robin")
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.startswith("python -m vllm_router.bench rollout: http://127.0.0.1:9: not a vLLM answering "
                                 "/metrics and /v1/models (")
    assert run.stderr.count("\n") == 1
