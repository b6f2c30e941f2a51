"""Prefix-cache hit rate and turn latency per routing policy, on two real vLLM workers.

    make engine-jar packaged-jar && python3 py_test/real_vllm/setup_vllm.py
    PYTHONPATH=python python3 examples/real_vllm/policy_table.py [--sessions 15 --turns 6]

Multi-turn sessions, each turn's prompt the whole conversation so far, sent through our router
to two vLLM workers (vLLM's CPU build, the tiny model of py_test/real_vllm/setup_vllm.py) whose
KV caches hold less than the sessions' live set. Sessions run all at once, then one at a time.
The hit rate is vLLM's own: prefix-cache hits over queries, in tokens, summed over the workers.
Also prints each worker's start-up time and resident memory (its whole process group).
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "py_test" / "real_vllm"))

import setup_vllm  # noqa: E402
import vllm_process  # noqa: E402
from helpers import http  # noqa: E402
from vllm_router import Router, RouterArgs  # noqa: E402

POLICIES = ("sticky_least_loaded", "kv_aware", "cache_aware", "round_robin")
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
         "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()
HITS, QUERIES, FINISHED = "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", "vllm:request_success_total"


def metric(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and line[len(name):len(name) + 1] in ("{", " "))


def snapshot(workers):
    texts = [w.metrics() for w in workers]
    return {name: [metric(t, name) for t in texts] for name in (HITS, QUERIES, FINISHED)}


def group_memory_mib(pgid: int) -> tuple:
    """(RSS, PSS) summed over every process in the process group, MiB. RSS counts the pages the
    processes share (libraries) once per process, PSS splits them."""
    rss = pss = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getpgid(int(entry)) != pgid:
                continue
            with open(f"/proc/{entry}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, pss / 1024


def print_memory(workers, when: str) -> None:
    for i, w in enumerate(workers):
        rss, pss = group_memory_mib(w.process.pid)
        print(f"worker {i} {when}: RSS {rss:.0f} MiB, PSS {pss:.0f} MiB (API server, engine core, worker)")


def session(router_url: str, name: str, turns: int, user_words: int, answer_tokens: int, latencies: list,
            failures: list):
    try:
        converse(router_url, name, turns, user_words, answer_tokens, latencies)
    except (OSError, RuntimeError) as e:
        failures.append(f"{name}: {e}")


def converse(router_url: str, name: str, turns: int, user_words: int, answer_tokens: int, latencies: list):
    rng = random.Random(name)
    messages = []
    for _ in range(turns):
        messages.append({"role": "user", "content": " ".join(rng.choice(WORDS) for _ in range(user_words))})
        body = {"model": setup_vllm.MODEL_NAME, "messages": messages, "max_tokens": answer_tokens,
                "ignore_eos": True, "temperature": 0}
        started = time.monotonic()
        status, _, payload = http("POST", router_url + "/v1/chat/completions", body,
                                  {"X-Session-ID": name}, timeout=300)
        latencies.append(time.monotonic() - started)
        if status != 200:
            raise RuntimeError(f"turn failed: {status} {payload[:200]!r}")
        messages.append({"role": "assistant", "content": json.loads(payload)["choices"][0]["message"]["content"]})


def kv_event_source(worker) -> str:
    """URL=ENDPOINT for --kv-event-source: the worker's rank-0 publisher at the worker's host."""
    status, _, body = http("GET", worker.url + "/kv_event_sources")
    if status != 200:
        raise RuntimeError(f"{worker.url}/kv_event_sources answered {status}")
    return f"{worker.url}={json.loads(body)['0']['endpoint'].replace('*', '127.0.0.1', 1)}"


def run(workers, policy: str, concurrent: bool, args) -> dict:
    extra = {}
    if policy == "kv_aware" and args.kv_named_publishers:
        extra = dict(kv_event_source=[kv_event_source(w) for w in workers],
                     kv_event_block_size=setup_vllm.KV_BLOCK_TOKENS, kv_event_model=setup_vllm.MODEL_NAME)
    router_args = RouterArgs(port=0, prometheus_port=0, policy=policy, worker_urls=[w.url for w in workers],
                             worker_startup_check_interval=1, session_id_headers=["x-session-id"],
                             session_id_body_fields=[], **extra)
    tag = f"{policy}-{'all' if concurrent else 'one'}-{time.monotonic_ns()}"
    names = [f"{tag}-{i}" for i in range(args.sessions)]
    latencies, failures = [], []
    with Router.from_args(router_args).launch() as router:
        before = snapshot(workers)
        started = time.monotonic()
        if concurrent:
            threads = [threading.Thread(target=session, args=(router.url, n, args.turns, args.user_words,
                                                                args.answer_tokens, latencies, failures)) for n in names]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            for n in names:
                session(router.url, n, args.turns, args.user_words, args.answer_tokens, latencies, failures)
        wall = time.monotonic() - started
        after = snapshot(workers)
    if failures:
        raise RuntimeError(f"{len(failures)} sessions failed, first: {failures[0]}")
    delta = {k: [a - b for a, b in zip(after[k], before[k])] for k in after}
    return {"hit_rate": sum(delta[HITS]) / max(1.0, sum(delta[QUERIES])),
            "requests": [int(x) for x in delta[FINISHED]],
            "p50": statistics.median(latencies), "p90": statistics.quantiles(latencies, n=10)[-1],
            "wall": wall}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=15)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--user-words", type=int, default=160)
    parser.add_argument("--answer-tokens", type=int, default=32)
    parser.add_argument("--kv-blocks", type=int, default=vllm_process.KV_BLOCKS)
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--kv-named-publishers", action="store_true",
                        help="kv_aware is told the publishers by --kv-event-source instead of finding them itself")
    args = parser.parse_args()

    log_dir = Path(tempfile.mkdtemp(prefix="real-vllm-table-"))
    started = time.monotonic()
    workers = vllm_process.start_all(2, log_dir, args.kv_blocks)
    print(f"2 vLLM workers healthy in {time.monotonic() - started:.0f} s (started together; logs in {log_dir})")
    try:
        print_memory(workers, "after start-up")
        print(f"\n{args.sessions} sessions x {args.turns} turns, {args.user_words} words per user turn, "
              f"{args.answer_tokens}-token answers, {args.kv_blocks} KV blocks of "
              f"{setup_vllm.KV_BLOCK_TOKENS} tokens per worker\n")
        print(f"{'policy':<20} {'sessions':<9} {'hit rate':>8} {'turn p50 s':>10} {'turn p90 s':>10} "
              f"{'wall s':>7}  requests per worker")
        for concurrent in (True, False):
            for policy in args.policies:
                r = run(workers, policy, concurrent, args)
                print(f"{policy:<20} {'all' if concurrent else 'one':<9} {r['hit_rate']:>8.1%} {r['p50']:>10.3f} "
                      f"{r['p90']:>10.3f} {r['wall']:>7.1f}  {r['requests']}", flush=True)
        print_memory(workers, "after the runs")
    finally:
        vllm_process.stop_all(workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
