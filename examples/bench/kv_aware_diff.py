"""kv_aware beside upstream vllm-router 0.1.17: the same requests to the same mock workers, the
chosen worker compared; then the render call's share of a request's latency. A benchmark, not a
test: nothing here is asserted.

    python3 -m venv /tmp/up117 && /tmp/up117/bin/pip -q install vllm-router==0.1.17
    make engine-jar python-install
    python examples/bench/kv_aware_diff.py [--upstream-python /tmp/up117/bin/python]
                                           [--workers 3] [--prefixes 8] [--requests 48]
                                           [--latency-secs 10]

The mock workers (one JVM) publish vLLM KV events and answer the render API. Each router runs the
same sequence alone, one request at a time, after the workers' caches were flushed: a request
either starts a new long prefix or repeats one already sent (with a new tail). Between requests
the script waits `--settle-ms`, so each router has ingested the events of the previous one and
no request is in flight. The worker that answered is the mock's `worker_id`.

A disagreement is classed by what each router did in its own run:
  idle tie-break   a new prefix that no worker holds went to different idle workers;
  earlier placement both sent a repeat to a worker that held it, but the prefix had been
                   placed on different workers before;
  <router> missed  that router sent a repeat to a worker that did not hold it.

`--load-probe` (instead of the two parts above) puts in-flight load against a held prefix: a
prompt of about `--probe-tokens` (400) tokens is sent straight to w0, then K streams repeating it are opened through
the router and kept open (the mock answers their first chunk at once, then one a second), then
the prompt is sent again through the router. Printed per router and K: how many of the K streams
went to w0 (the holder) and where the last request went. With `--probe-fresh` the streams are
prompts nobody holds instead, so they spread by load and weigh as whole prefills.

The latency part runs only this router (0.1.17 has no render-time metric): closed-loop clients at
concurrency 1 and 16 for `--latency-secs` each, whole-request latency measured by the client,
the render call by the router's `vllm_router_kv_render_seconds` summary.
"""

import argparse
import http.client
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Dict, List, Tuple

from vllm_router.mock_workers import MockWorkers
from vllm_router.router import Router
from vllm_router.router_args import RouterArgs


def flush_caches(worker_urls):
    """Empties every worker's prefix cache, so no policy inherits the previous one's hits."""
    for url in worker_urls:
        urllib.request.urlopen(urllib.request.Request(url + "/flush_cache", data=b"", method="POST"),
                               timeout=10).close()


BLOCK = 16
WORKER_KNOBS = {"kv-events": "true", "block-size": str(BLOCK)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 5) -> Tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_until(check, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


class Upstream:
    """vllm-router 0.1.17 from its own venv, on free ports."""

    def __init__(self, python: str, worker_urls: List[str]):
        self.port, self.metrics_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [python, "-m", "vllm_router.launch_router", "--policy", "kv_aware", "--router-temperature", "0",
             "--worker-urls", *worker_urls, "--host", "127.0.0.1", "--port", str(self.port),
             "--prometheus-port", str(self.metrics_port), "--log-level", "warning"],
            # Its own package, not ours: a PYTHONPATH set for this script must not reach it.
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            stdout=subprocess.DEVNULL, stderr=open("/tmp/kv_aware_diff_upstream.log", "w"))
        wait_until(lambda: get(self.url + "/health")[0] == 200, 60, "0.1.17 to answer /health")

    def metrics(self) -> str:
        return get(f"http://127.0.0.1:{self.metrics_port}/metrics")[1]

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def ours(worker_urls: List[str]):
    args = RouterArgs(port=0, prometheus_port=0, policy="kv_aware", router_temperature=0.0,
                      worker_urls=worker_urls, worker_startup_check_interval=1, log_level="warning")
    return Router.from_args(args).launch()


def prefix_text(seed: int, tokens: int) -> str:
    """About `tokens` mock tokens (a mock token is up to 3 bytes) no other prefix starts with."""
    words = random.Random(seed).choices(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"], k=tokens)
    return f"conversation {seed}: " + " ".join(words)


def sequence(seeded: int, prefixes: int, requests: int, seed: int = 7) -> List[Tuple[str, int, str]]:
    """(kind, prefix number, prompt): 'new' starts a prefix, 'repeat' extends one already sent.

    Prefixes 0 .. seeded-1 are placed on the workers directly before the run (see run_sequence).
    """
    rng = random.Random(seed)
    started: List[int] = list(range(seeded))
    plan = []
    for i in range(requests):
        if len(started) < seeded + prefixes and (not started or rng.random() < 0.25):
            p = len(started)
            started.append(p)
            plan.append(("new", p, prefix_text(p, 600) + " first"))
        else:
            p = rng.choice(started)
            plan.append(("repeat", p, prefix_text(p, 600) + f" follow-up {i}"))
    return plan


def complete(url: str, prompt: str) -> str:
    body = json.dumps({"model": "mock", "prompt": prompt, "max_tokens": 1}).encode()
    request = urllib.request.Request(url + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read())["worker_id"]


def run_sequence(router_url: str, worker_urls: List[str], seeded: int, plan,
                 settle_s: float) -> Tuple[Dict[int, str], List[str]]:
    """Flushes the caches, places the seeded prefixes round-robin on the workers directly (so
    holders differ), then sends the plan through the router; the seeds' workers and the choices."""
    flush_caches(worker_urls)
    time.sleep(1.0)  # the flush's AllBlocksCleared reaches the router
    seeds = {p: complete(worker_urls[p % len(worker_urls)], prefix_text(p, 600) + " seed") for p in range(seeded)}
    time.sleep(1.0)
    chosen = []
    for _, _, prompt in plan:
        chosen.append(complete(router_url, prompt))
        time.sleep(settle_s)
    return seeds, chosen


def classify(plan, seeds: Dict[int, str], up: List[str], ours_: List[str]) -> Dict[str, int]:
    held_up: Dict[int, set] = {p: {w} for p, w in seeds.items()}
    held_ours: Dict[int, set] = {p: {w} for p, w in seeds.items()}
    classes: Dict[str, int] = {}
    for (kind, p, _), a, b in zip(plan, up, ours_):
        holders_up, holders_ours = held_up.setdefault(p, set()), held_ours.setdefault(p, set())
        if a != b:
            if kind == "new":
                reason = "idle tie-break"
            elif a not in holders_up:
                reason = "0.1.17 missed the holder"
            elif b not in holders_ours:
                reason = "ours missed the holder"
            else:
                reason = "earlier placement"
            classes[reason] = classes.get(reason, 0) + 1
        holders_up.add(a)
        holders_ours.add(b)
    return classes


def metric_lines(text: str, name: str) -> List[str]:
    return [line for line in text.splitlines() if line.startswith(name)]


def differential(args, mock: MockWorkers) -> None:
    plan = sequence(args.seeded, args.prefixes, args.requests)
    upstream = Upstream(args.upstream_python, mock.urls)
    try:
        time.sleep(3)  # its subscribers connect
        seeds, up = run_sequence(upstream.url, mock.urls, args.seeded, plan, args.settle_ms / 1000)
        up_metrics = upstream.metrics()
    finally:
        upstream.close()
    with ours(mock.urls) as router:
        time.sleep(3)
        seeds_again, mine = run_sequence(router.url, mock.urls, args.seeded, plan, args.settle_ms / 1000)
    assert seeds == seeds_again
    # A mock worker's default id is worker-PORT.
    short = {f"worker-{url.rsplit(':', 1)[1]}": f"w{i}" for i, url in enumerate(mock.urls)}
    agree = sum(a == b for a, b in zip(up, mine))
    print(f"differential: {len(plan)} requests over {len(mock.urls)} workers (w0 first in --worker-urls): "
          f"{args.seeded} prefixes placed on w0, w1, ... directly first, "
          f"{sum(k == 'new' for k, _, _ in plan)} new prefixes, the rest repeats")
    print(f"  agreement {agree}/{len(plan)} = {agree / len(plan):.0%}")
    for kind in ("new", "repeat"):
        pairs = [(a, b) for (k, _, _), a, b in zip(plan, up, mine) if k == kind]
        print(f"  {kind:6}: {sum(a == b for a, b in pairs)}/{len(pairs)} agree")
    for reason, count in sorted(classify(plan, seeds, up, mine).items()):
        print(f"  disagreement: {reason}: {count}")
    print("  kinds          :", " ".join("N " if k == "new" else f"r{p}" for k, p, _ in plan))
    print("  0.1.17 sequence:", " ".join(f"{short.get(w, w):2}" for w in up))
    print("  ours   sequence:", " ".join(f"{short.get(w, w):2}" for w in mine))
    for name in ("vllm_router_kv_placement_lookups_total", "vllm_router_kv_routing_inputs_total",
                 "vllm_router_prefix_routing_decisions_total"):
        for line in metric_lines(up_metrics, name):
            print("  0.1.17", line)


def open_stream(router_url: str, prompt: str):
    """A streaming completion through the router, left open once its first chunk came; (connection, worker)."""
    host, port = re.match(r"http://([^:]+):(\d+)", router_url).groups()
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    body = json.dumps({"model": "mock", "prompt": prompt, "max_tokens": 200, "stream": True})
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    while True:
        raw = response.fp.readline()
        if not raw:
            return conn, None
        line = raw.decode().strip()
        if line.startswith("data:") and "worker_id" in line:
            return conn, json.loads(line[5:])["worker_id"]


def probe_router(router_url: str, worker_urls: List[str], loads: List[int],
                 tokens: int, fresh: bool) -> List[Tuple[int, int, str]]:
    """(K, streams that went to the holder, where the repeat went) for each K."""
    rows = []
    for k in loads:
        flush_caches(worker_urls)
        time.sleep(1.0)
        prompt = prefix_text(1000 + k, tokens)
        holder = complete(worker_urls[0], prompt + " seed")
        time.sleep(1.0)
        streams = [open_stream(router_url, (prefix_text(2000 + j, tokens) if fresh else prompt) + f" stream {j}")
                   for j in range(k)]
        time.sleep(0.5)  # the streams' KV events are in; their first chunks have been answered
        repeat = complete(router_url, prompt + " again")
        rows.append((k, sum(w == holder for _, w in streams), "holder" if repeat == holder else "other"))
        for conn, _ in streams:
            conn.close()
        time.sleep(1.5)  # the closed streams leave both routers' in-flight counts
    return rows


def load_probe(args, mock: MockWorkers) -> None:
    loads = [0, 1, 2, 3, 4, 6, 8, 12, 16]
    upstream = Upstream(args.upstream_python, mock.urls)
    try:
        time.sleep(3)
        up = probe_router(upstream.url, mock.urls, loads, args.probe_tokens, args.probe_fresh)
    finally:
        upstream.close()
    with ours(mock.urls) as router:
        time.sleep(3)
        mine = probe_router(router.url, mock.urls, loads, args.probe_tokens, args.probe_fresh)
    print(f"load probe: about {args.probe_tokens} tokens held by w0, K streams opened through the router, then the prompt again")
    print("   K | 0.1.17: streams on w0, repeat | ours: streams on w0, repeat")
    for (k, up_on, up_repeat), (_, our_on, our_repeat) in zip(up, mine):
        print(f"  {k:2} | {up_on:2} of {k:2}, {up_repeat:6} | {our_on:2} of {k:2}, {our_repeat:6}")


def percentile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def closed_loop(router_url: str, concurrency: int, seconds: float, prompts: List[str]) -> List[float]:
    host, port = re.match(r"http://([^:]+):(\d+)", router_url).groups()
    latencies: List[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(n: int) -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        rng = random.Random(n)
        mine = []
        while time.monotonic() < stop:
            body = json.dumps({"model": "mock", "prompt": rng.choice(prompts), "max_tokens": 1})
            started = time.perf_counter()
            conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            conn.getresponse().read()
            mine.append(time.perf_counter() - started)
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def render_share(args, mock: MockWorkers) -> None:
    prompts = [prefix_text(p, 600) for p in range(args.prefixes)]
    print(f"render call vs whole request (this router, kv_aware, mock workers with no latency, "
          f"{args.latency_secs:g} s per level, prompts of about 600 tokens):")
    for concurrency in (1, 16):
        flush_caches(mock.urls)
        with ours(mock.urls) as router:
            time.sleep(2)
            closed_loop(router.url, concurrency, 2, prompts)  # warm-up, counted in neither figure below
            metrics_url = f"http://127.0.0.1:{router.metrics_port}/metrics"
            before = render_count(get(metrics_url)[1])
            latencies = closed_loop(router.url, concurrency, args.latency_secs, prompts)
            text = get(metrics_url)[1]
        quantiles = {q: float(v) for q, v in re.findall(
            r'vllm_router_kv_render_seconds\{quantile="([0-9.]+)"\} ([0-9.eE+-]+)', text)}
        print(f"  c={concurrency:2}: {len(latencies)} requests ({render_count(text) - before:.0f} render calls); "
              f"request p50 {statistics.median(latencies) * 1000:.2f} ms, p99 {percentile(latencies, 0.99) * 1000:.2f} ms; "
              f"render p50 {quantiles.get('0.5', float('nan')) * 1000:.2f} ms, "
              f"p99 {quantiles.get('0.99', float('nan')) * 1000:.2f} ms "
              f"(render p50 / request p50 = {quantiles.get('0.5', float('nan')) / statistics.median(latencies):.0%})")


def render_count(text: str) -> float:
    match = re.search(r"^vllm_router_kv_render_seconds_count ([0-9.eE+-]+)", text, re.M)
    return float(match.group(1)) if match else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream-python", default="/tmp/up117/bin/python")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--seeded", type=int, default=6)
    parser.add_argument("--prefixes", type=int, default=6)
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--settle-ms", type=int, default=300)
    parser.add_argument("--latency-secs", type=float, default=10)
    parser.add_argument("--skip-differential", action="store_true")
    parser.add_argument("--load-probe", action="store_true")
    parser.add_argument("--probe-tokens", type=int, default=400)
    parser.add_argument("--probe-fresh", action="store_true")
    args = parser.parse_args()
    if args.load_probe:
        with MockWorkers(args.workers, {**WORKER_KNOBS, "slow-stream-ms": "1000"}) as mock:
            load_probe(args, mock)
        return
    mock = MockWorkers(args.workers, WORKER_KNOBS)
    try:
        if not args.skip_differential:
            differential(args, mock)
        if args.latency_secs > 0:
            render_share(args, mock)
    finally:
        mock.close()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
