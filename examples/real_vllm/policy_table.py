"""Prefix-cache hit rate and turn latency per routing policy, on two real vLLM workers.

    make engine-jar packaged-jar && python3 py_test/real_vllm/setup_vllm.py
    PYTHONPATH=python python3 examples/real_vllm/policy_table.py [--sessions 15 --turns 6]
        [--router ours rust-0.1.17] [--choices FILE]

Multi-turn sessions, each turn's prompt the whole conversation so far, sent through our router
to two vLLM workers (vLLM's CPU build, the tiny model of py_test/real_vllm/setup_vllm.py) whose
KV caches hold less than the sessions' live set. Sessions run all at once, then one at a time.
The hit rate is vLLM's own: prefix-cache hits over queries, in tokens, summed over the workers.
Also prints each worker's start-up time and resident memory (its whole process group).

`--router rust-0.1.17` runs the same sessions through the Rust router 0.1.17 (its venv, see
py_test/real_vllm/reference_router.py) as well. `--choices FILE` puts a recording forwarder in
front of each worker and writes one JSON line per turn: router, policy, mode, session, turn and
the worker that served it, so two routers' choices can be compared turn by turn.
"""

import argparse
from http.client import HTTPConnection
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "py_test" / "real_vllm"))

import reference_router  # noqa: E402
import setup_vllm  # noqa: E402
import vllm_process  # noqa: E402
from helpers import http  # noqa: E402
from vllm_router import Router, RouterArgs  # noqa: E402
from vllm_router.bench.real_vllm import metric  # noqa: E402

POLICIES = ("sticky_least_loaded", "kv_aware", "cache_aware", "round_robin")
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
         "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()
HITS, QUERIES, FINISHED = "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", "vllm:request_success_total"


def snapshot(workers):
    texts = [w.metrics() for w in workers]
    return {name: [metric(t, name) for t in texts] for name in (HITS, QUERIES, FINISHED)}


def print_memory(workers, when: str) -> None:
    for i, w in enumerate(workers):
        rss, pss = vllm_process.group_memory_mib(w.process.pid)
        print(f"worker {i} {when}: RSS {rss:.0f} MiB, PSS {pss:.0f} MiB (API server, engine core, worker)")


class RecordingForwarder:
    """A plain HTTP forwarder in front of one worker that notes, per chat turn, the session (its
    first user message: not every router passes X-Session-ID on) and the turn (the count of user
    messages). Answers are read whole, so it is for
    non-streamed traffic only (what this table sends, and the routers' own calls)."""

    def __init__(self, index: int, worker_url: str, served: list):
        target = urlsplit(worker_url)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.path.startswith("/v1/chat/completions") and not self.path.endswith("/render") and body:
                    users = [m["content"] for m in json.loads(body).get("messages", []) if m.get("role") == "user"]
                    served.append((users[0] if users else None, len(users), index))
                upstream = HTTPConnection(target.hostname, target.port, timeout=300)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    reply = upstream.getresponse()
                    payload = reply.read()
                    self.send_response(reply.status)
                    for k, v in reply.getheaders():
                        if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                finally:
                    upstream.close()

            do_GET = do_POST = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.worker_url = worker_url
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def session(router_url: str, name: str, turns: int, user_words: int, answer_tokens: int, latencies: list,
            failures: list):
    try:
        converse(router_url, name, turns, user_words, answer_tokens, latencies)
    except (OSError, RuntimeError) as e:
        failures.append(f"{name}: {e}")


def user_turns(name: str, user_words: int):
    """The user messages of session `name`, one per turn, the same for every router."""
    rng = random.Random(name)
    while True:
        yield " ".join(rng.choice(WORDS) for _ in range(user_words))


def first_message(name: str, user_words: int) -> str:
    return next(user_turns(name, user_words))


def converse(router_url: str, name: str, turns: int, user_words: int, answer_tokens: int, latencies: list):
    messages = []
    for _, content in zip(range(turns), user_turns(name, user_words)):
        messages.append({"role": "user", "content": content})
        body = {"model": setup_vllm.MODEL_NAME, "messages": messages, "max_tokens": answer_tokens,
                "ignore_eos": True, "temperature": 0}
        started = time.monotonic()
        status, _, payload = http("POST", router_url + "/v1/chat/completions", body,
                                  {"X-Session-ID": name}, timeout=300)
        latencies.append(time.monotonic() - started)
        if status != 200:
            raise RuntimeError(f"turn failed: {status} {payload[:200]!r}")
        messages.append({"role": "assistant", "content": json.loads(payload)["choices"][0]["message"]["content"]})


def kv_event_source(worker, url: str) -> str:
    """URL=ENDPOINT for --kv-event-source: the worker's rank-0 publisher at the worker's host, for
    the worker the router knows as `url`."""
    status, _, body = http("GET", worker.url + "/kv_event_sources")
    if status != 200:
        raise RuntimeError(f"{worker.url}/kv_event_sources answered {status}")
    return f"{url}={json.loads(body)['0']['endpoint'].replace('*', '127.0.0.1', 1)}"


def launch(router: str, policy: str, workers, urls, args):
    """Our router (in this process's package) or the Rust reference, in front of `urls`."""
    named = policy == "kv_aware" and (args.kv_named_publishers or router != "ours")
    sources = [kv_event_source(w, u) for w, u in zip(workers, urls)] if named else []
    if router == "ours":
        extra = dict(kv_event_source=sources, kv_event_block_size=setup_vllm.KV_BLOCK_TOKENS,
                     kv_event_model=setup_vllm.MODEL_NAME) if named else {}
        return Router.from_args(RouterArgs(port=0, prometheus_port=0, policy=policy, worker_urls=list(urls),
                                           worker_startup_check_interval=1, session_id_headers=["x-session-id"],
                                           session_id_body_fields=[], **extra)).launch()
    argv = ["--policy", policy, "--worker-urls", *urls]
    for source in sources:
        argv += ["--kv-event-source", source]
    if named:
        argv += ["--kv-event-block-size", str(setup_vllm.KV_BLOCK_TOKENS), "--kv-event-model", setup_vllm.MODEL_NAME]
    return reference_router.ReferenceRouter(argv)


def run(workers, urls, router: str, policy: str, concurrent: bool, args) -> dict:
    tag = f"{router}-{policy}-{'all' if concurrent else 'one'}-{time.monotonic_ns()}"
    names = [f"{tag}-{i}" for i in range(args.sessions)]
    latencies, failures = [], []
    with launch(router, policy, workers, urls, args) as front:
        before = snapshot(workers)
        started = time.monotonic()
        if concurrent:
            threads = [threading.Thread(target=session, args=(front.url, n, args.turns, args.user_words,
                                                                args.answer_tokens, latencies, failures)) for n in names]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            for n in names:
                session(front.url, n, args.turns, args.user_words, args.answer_tokens, latencies, failures)
        wall = time.monotonic() - started
        after = snapshot(workers)
        unrendered = render_failures(front.metrics_port) if policy == "kv_aware" else 0
    if failures:
        raise RuntimeError(f"{len(failures)} sessions failed, first: {failures[0]}")
    delta = {k: [a - b for a, b in zip(after[k], before[k])] for k in after}
    return {"hit_rate": sum(delta[HITS]) / max(1.0, sum(delta[QUERIES])),
            "requests": [int(x) for x in delta[FINISHED]],
            "p50": statistics.median(latencies), "p90": statistics.quantiles(latencies, n=10)[-1],
            "wall": wall, "names": names, "unrendered": unrendered}


def render_failures(metrics_port: int) -> int:
    """kv_aware requests placed without their tokens (the render call failed or timed out, or no
    KV source): both routers count inputs under the same name, tokens found as `tokens` (ours) or
    `render` (the Rust router)."""
    status, _, body = http("GET", f"http://127.0.0.1:{metrics_port}/metrics")
    if status != 200:
        return -1
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in body.decode().splitlines()
                   if line.startswith("vllm_router_kv_routing_inputs_total{")
                   and 'result="tokens"' not in line and 'result="render"' not in line))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=15)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--user-words", type=int, default=160)
    parser.add_argument("--answer-tokens", type=int, default=32)
    parser.add_argument("--kv-blocks", type=int, default=vllm_process.KV_BLOCKS)
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--kv-named-publishers", action="store_true",
                        help="our kv_aware is told the publishers by --kv-event-source instead of finding them "
                             "itself (the Rust router is always told)")
    parser.add_argument("--router", nargs="+", choices=("ours", "rust-0.1.17"), default=["ours"])
    parser.add_argument("--modes", nargs="+", choices=("all", "one"), default=["all", "one"],
                        help="sessions all at once, one at a time")
    parser.add_argument("--choices", type=Path, help="write the worker that served each turn here (JSON lines)")
    args = parser.parse_args()
    if "rust-0.1.17" in args.router and reference_router.not_ready_reason():
        parser.error(reference_router.not_ready_reason())

    log_dir = Path(tempfile.mkdtemp(prefix="real-vllm-table-"))
    started = time.monotonic()
    workers = vllm_process.start_all(2, log_dir, args.kv_blocks)
    print(f"2 vLLM workers healthy in {time.monotonic() - started:.0f} s (started together; logs in {log_dir})")
    try:
        print_memory(workers, "after start-up")
        served = []
        forwarders = [RecordingForwarder(i, w.url, served) for i, w in enumerate(workers)] if args.choices else []
        urls = [f.url for f in forwarders] or [w.url for w in workers]
        print(f"\n{args.sessions} sessions x {args.turns} turns, {args.user_words} words per user turn, "
              f"{args.answer_tokens}-token answers, {args.kv_blocks} KV blocks of "
              f"{setup_vllm.KV_BLOCK_TOKENS} tokens per worker\n")
        print(f"{'router':<12} {'policy':<20} {'sessions':<9} {'hit rate':>8} {'turn p50 s':>10} {'turn p90 s':>10} "
              f"{'wall s':>7}  requests per worker, kv_aware turns placed without tokens")
        for mode in args.modes:
            for policy in args.policies:
                for router in args.router:
                    del served[:]
                    r = run(workers, urls, router, policy, mode == "all", args)
                    if args.choices:
                        with open(args.choices, "a") as out:
                            first = {first_message(n, args.user_words): i for i, n in enumerate(r["names"])}
                            for opening, turn, worker in served:
                                out.write(json.dumps({"router": router, "policy": policy, "mode": mode,
                                                      "session": first.get(opening), "turn": turn,
                                                      "worker": worker}) + "\n")
                    print(f"{router:<12} {policy:<20} {mode:<9} {r['hit_rate']:>8.1%} {r['p50']:>10.3f} "
                          f"{r['p90']:>10.3f} {r['wall']:>7.1f}  {r['requests']} {r['unrendered'] or ''}", flush=True)
        print_memory(workers, "after the runs")
    finally:
        for f in forwarders:
            f.server.shutdown()
        vllm_process.stop_all(workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
