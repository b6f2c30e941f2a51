"""The rollout bench's real-vLLM arm end to end on the two real vLLM workers: a small generated
batch through our router, vLLM's own counters read around it, and the simulator calibrated
against the workers."""

import json
import subprocess
import sys

import setup_vllm
import vllm_process


def test_the_rollout_bench_runs_on_real_vllm_and_simulates_the_same_batch_with_its_costs(vllm_workers):
    run = subprocess.run([sys.executable, "-m", "vllm_router.bench", "rollout",
                          "--worker-urls", ",".join(w.url for w in vllm_workers), "--shape", "small",
                          "--groups", "2", "--samples", "2", "--seed", "1", "--policies", "sticky_least_loaded",
                          "--warm-up", "4", "--calibrate", "--json"],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    (measured,) = report["results"]
    assert measured["policy"] == "sticky_least_loaded"
    assert (measured["turns"], measured["errors"]) == (report["workload"]["turns"], 0)
    assert measured["kv_blocks_per_worker"] == vllm_process.KV_BLOCKS
    # Every trajectory opens with the same 256-token system prompt, two whole blocks: all but the
    # first to reach a worker find them cached.
    assert 0 < measured["prefix_hit_rate"] < 1
    calibration = report["calibration"]
    assert calibration["decode_secs_per_token"] > 0 and calibration["prefill_tokens_per_sec"] > 0
    assert calibration["block_tokens"] == setup_vllm.KV_BLOCK_TOKENS
    assert calibration["kv_tokens_per_worker"] == vllm_process.KV_BLOCKS * setup_vllm.KV_BLOCK_TOKENS
    (simulated,) = report["simulated"]
    assert simulated["policy"] == "sticky_least_loaded"
    assert (simulated["turns"], simulated["kv_blocks_per_worker"]) == (measured["turns"], vllm_process.KV_BLOCKS)
