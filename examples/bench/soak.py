"""Soak: mixed traffic through a router with faults injected at random, for N minutes.

Not a test (nothing here asserts): it prints, every --report-secs, the requests served, the 5xx
answers (those within a few seconds of a worker kill apart from the others), responses cut short
(io-err: a stream whose worker was killed), the sessions kept and evicted, whether the per-worker
session counts add up to the total and the smallest of them (min/w, never negative), the workers'
in-flight loads and the router JVM's RSS; then a summary once the traffic has stopped.

Traffic (--clients threads): multi-turn sessions with X-Session-ID, streamed or not, finished with
/finish_session; one-off requests that carry only a gateway-style x-request-id (each one a session
under the default --session-id-headers, so --max-sessions is what bounds them).
Faults, one every --fault-every-secs on average: a worker SIGKILLed and restarted on its port
after a few seconds; 50 clients that hang up mid-stream; a body just over --max-payload-size; 20
slow-loris connections held for a while; a flood of 2,000 one-off ids.

Both modes end by checking that the router is healthy and serves a new session, and count the
answers a client read that carry a Java stack trace (there should be none).

--million-ids sends --ids requests (1,000,000 by default), each with an X-Session-ID of its own,
over keep-alive connections with HTTP/1.1 pipelining, to a router started with --max-sessions
(100,000 in this mode) and prints the evictions (vllm_router_sticky_sessions_evicted_total), the
live sessions and the engine's RSS every --report-secs: once the table is full, every new id evicts
one. The RSS then grows only while the JVM grows its heap (its default limit is a quarter of the
machine's memory) and levels off at the limit; VLLM_ROUTER_JVM_OPTS=-Xmx192m shows that within a
run (recorded runs: docs/perf/memory.md).

    make engine-jar python-install
    python examples/bench/soak.py --minutes 2
    python examples/bench/soak.py --million-ids

Everything runs on 127.0.0.1; every loop is bounded by the duration or by the number of ids.
"""

import argparse
import asyncio
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

from vllm_router import Router, RouterArgs
from vllm_router.bridge.engine_command import engine_command, engine_jar, read_event
from vllm_router.bridge.java_runtime import find_java

KILL_BLAME_SECS = 5.0
# What a Java stack trace looks like in an answer: a frame line, or an exception's class name.
STACK_TRACE_MARKS = (b"\tat ", b"Exception:", b"java.lang.")


def worker_port(rng: random.Random) -> int:
    """A free port below Linux's ephemeral range (32768 and up). A killed worker's port inside it
    can be taken, before the worker restarts, by an outgoing connection (the router's health check
    to that very port can even connect to itself)."""
    while True:
        port = rng.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue


class MockWorker:
    """One mock vLLM worker in a process of its own, so that it can be SIGKILLed and restarted."""

    def __init__(self, port: int):
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.process = None
        self.start()

    def start(self) -> None:
        command = engine_command(find_java(), engine_jar(),
                                 ["mock-worker", "--ports", str(self.port), "--lifeline",
                                  "--slow-stream-ms=20", "--stream-chunks=10"])
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        ready = read_event(self.process.stdout)
        if ready is None or ready["event"] != "ready":
            raise RuntimeError(f"mock worker on port {self.port} did not start: {ready}")
        threading.Thread(target=self.process.stdout.read, daemon=True).start()

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def restart(self) -> None:
        """Start again on the same port; the kernel may still hold it for a moment."""
        for attempt in range(10):
            try:
                self.start()
                return
            except RuntimeError:
                time.sleep(0.5)
        print(f"worker on port {self.port} could not be restarted", flush=True)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = 0
        self.by_status = {}
        self.five_xx_near_kill = 0
        self.five_xx_other = 0
        self.transport_errors = 0
        self.stack_traces = 0
        self.last_kill = -1e9

    def status(self, code: int) -> None:
        with self.lock:
            self.by_status[code] = self.by_status.get(code, 0) + 1
            if 200 <= code < 300:
                self.ok += 1
            elif code >= 500:
                if time.monotonic() - self.last_kill < KILL_BLAME_SECS:
                    self.five_xx_near_kill += 1
                else:
                    self.five_xx_other += 1

    def transport_error(self) -> None:
        with self.lock:
            self.transport_errors += 1

    def answer(self, code: int, body: bytes) -> None:
        self.status(code)
        if any(mark in body for mark in STACK_TRACE_MARKS):
            with self.lock:
                self.stack_traces += 1


def request(url: str, body: dict, headers: dict, timeout: float = 30.0):
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST")
    req.add_header("Content-Type", "application/json")
    for name, value in headers.items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def client_loop(router_url: str, tally: Tally, stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    n = 0
    while not stop.is_set():
        n += 1
        try:
            if rng.random() < 0.3:
                tally.answer(*request(router_url + "/v1/completions", {"prompt": "one-off", "max_tokens": 2},
                                      {"x-request-id": f"gw-{seed}-{n}"}))
                continue
            session = f"traj-{seed}-{n}"
            for turn in range(rng.randint(2, 5)):
                if stop.is_set():
                    break
                body = {"prompt": f"turn {turn} of {session}", "max_tokens": 4,
                        "stream": rng.random() < 0.5}
                tally.answer(*request(router_url + "/v1/completions", body, {"X-Session-ID": session}))
            tally.answer(*request(router_url + f"/finish_session?session_id={session}", {}, {}))
        except (OSError, http.client.HTTPException):
            # A stream cut short (its worker was killed): the client saw a broken response, not a 5xx.
            tally.transport_error()


def hang_up_mid_stream(port: int, count: int) -> None:
    body = json.dumps({"prompt": "hang up", "max_tokens": 10, "stream": True})
    for i in range(count):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           f"X-Session-ID: gone-{time.monotonic_ns()}-{i}\r\nContent-Length: {len(body)}\r\n\r\n"
                           + body).encode())
                s.recv(1)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        except OSError:
            pass


def oversized_body(port: int, limit: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        size = limit + 13
        s.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {size}\r\nConnection: close\r\n\r\n").encode())
        try:
            s.sendall(b"x" * size)
            return s.recv(64).split(b"\r\n", 1)[0].decode(errors="replace")
        except OSError as e:
            return f"client error: {e}"


def slow_loris(port: int, count: int, hold_secs: float, stop: threading.Event) -> None:
    sockets = []
    for _ in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
            sockets.append(s)
        except OSError:
            pass
    deadline = time.monotonic() + hold_secs
    while time.monotonic() < deadline and not stop.is_set():
        for s in sockets:
            try:
                s.sendall(b"X")
            except OSError:
                pass
        time.sleep(1.0)
    for s in sockets:
        s.close()


def flood(router_url: str, tally: Tally, count: int) -> None:
    for i in range(count):
        try:
            tally.answer(*request(router_url + "/v1/completions", {"prompt": "flood", "max_tokens": 1},
                                  {"x-request-id": f"flood-{time.monotonic_ns()}-{i}"}))
        except (OSError, http.client.HTTPException):
            tally.transport_error()


def start_thread(target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def worker_loads(metrics_port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    loads = {}
    for line in text.splitlines():
        if line.startswith("vllm_router_worker_load{"):
            worker = line.split('worker="', 1)[1].split('"', 1)[0]
            loads[worker] = float(line.rsplit(" ", 1)[1])
    return loads


def check_counts(stats: dict, anomalies: dict) -> tuple:
    """Whether the per-worker counts add up to the live sessions, and the smallest; tallies what is wrong."""
    counts = stats["active_by_worker"].values()
    total_ok = sum(counts) == stats["active_sessions"]
    smallest = min(counts, default=0)
    anomalies["count_mismatch"] += 0 if total_ok else 1
    anomalies["negative_count"] += 1 if smallest < 0 else 0
    return total_ok, smallest


def engine_rss_mib() -> float:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"org.vllmrouter.host.Main\x00serve" not in f.read():
                    continue
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) != os.getpid():
                    continue
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            continue
    return float("nan")


def soak(opts: argparse.Namespace) -> None:
    rng = random.Random(opts.seed)

    workers = [MockWorker(worker_port(rng)) for _ in range(opts.workers)]
    args = router_args(workers, opts)
    tally = Tally()
    stop = threading.Event()
    faults = {}
    rss = []
    anomalies = {"count_mismatch": 0, "negative_count": 0}
    with Router.from_args(args).launch() as router:
        threads = [threading.Thread(target=client_loop, args=(router.url, tally, stop, opts.seed * 1000 + i),
                                    daemon=True) for i in range(opts.clients)]
        for t in threads:
            t.start()
        start = time.monotonic()
        end = start + opts.minutes * 60
        next_report = start + opts.report_secs
        next_fault = start + rng.expovariate(1 / opts.fault_every_secs)
        helpers = []
        print(f"{'t(s)':>6} {'ok':>8} {'5xx':>5} {'5xx@kill':>8} {'io-err':>6} {'sessions':>8} "
              f"{'evicted':>8} {'sum ok':>6} {'min/w':>5} {'loads':>12} {'RSS MiB':>8}  faults", flush=True)
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_fault:
                fault = rng.choice(["kill", "hang-up", "oversized", "slow-loris", "flood"])
                faults[fault] = faults.get(fault, 0) + 1
                if fault == "kill":
                    # One worker at a time: a worker killed again while it restarts would race for its port.
                    live = [w for w in workers if w.alive()]
                    if len(live) < len(workers):
                        faults["kill-skipped"] = faults.get("kill-skipped", 0) + 1
                    else:
                        victim = rng.choice(live)
                        with tally.lock:
                            tally.last_kill = time.monotonic()
                        victim.kill()
                        restart = threading.Timer(3.0, victim.restart)
                        restart.start()
                        helpers.append(restart)
                elif fault == "hang-up":
                    helpers.append(start_thread(hang_up_mid_stream, router.port, 50))
                elif fault == "oversized":
                    answer = oversized_body(router.port, opts.max_payload_size)
                    if not answer.startswith("HTTP/1.1 413"):
                        faults["oversized-not-413"] = faults.get("oversized-not-413", 0) + 1
                elif fault == "slow-loris":
                    helpers.append(start_thread(slow_loris, router.port, 20, 10.0, stop))
                else:
                    helpers.append(start_thread(flood, router.url, tally, 2000))
                next_fault = now + rng.expovariate(1 / opts.fault_every_secs)
            if now >= next_report:
                next_report = now + opts.report_secs
                stats = router.session_stats()
                total_ok, smallest = check_counts(stats, anomalies)
                mib = engine_rss_mib()
                rss.append(mib)
                loads = worker_loads(router.metrics_port)
                with tally.lock:
                    print(f"{now - start:6.0f} {tally.ok:8d} {tally.five_xx_other:5d} {tally.five_xx_near_kill:8d} "
                          f"{tally.transport_errors:6d} {stats['active_sessions']:8d} {stats['evicted']:8d} "
                          f"{'yes' if total_ok else 'NO':>6} {smallest:5d} "
                          f"{'/'.join(str(int(v)) for v in loads.values()):>12} {mib:8.0f}  {faults}", flush=True)
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join(60)
        for h in helpers:
            h.join(60)
        for w in workers:
            if not w.alive():
                w.restart()
        settle = time.monotonic() + 30
        while time.monotonic() < settle and any(v != 0 for v in worker_loads(router.metrics_port).values()):
            time.sleep(0.2)
        loads = worker_loads(router.metrics_port)
        stats = router.session_stats()
        print(f"summary: {opts.minutes:g} min, {tally.ok} ok, statuses {dict(sorted(tally.by_status.items()))}, "
              f"5xx {tally.five_xx_other} (+{tally.five_xx_near_kill} within {KILL_BLAME_SECS:g} s of a kill), "
              f"transport errors {tally.transport_errors}, faults {faults}")
        print(f"summary: sessions active {stats['active_sessions']} (max {opts.max_sessions}), started "
              f"{stats['started']}, released {stats['released']}, evicted {stats['evicted']}, expired "
              f"{stats['expired']}, rebound {stats['rebound']}; counts add up: "
              f"{sum(stats['active_by_worker'].values()) == stats['active_sessions']}; lifetime counters add up: "
              f"{stats['started'] - stats['released'] - stats['expired'] - stats['evicted'] == stats['active_sessions']}; "
              f"count mismatches seen {anomalies['count_mismatch']}, negative counts seen {anomalies['negative_count']}")
        print(f"summary: worker loads after the traffic {loads}; engine RSS MiB first {rss[0] if rss else 'n/a':.0f}, "
              f"max {max(rss) if rss else float('nan'):.0f}, last {rss[-1] if rss else float('nan'):.0f}")
        print(f"summary: {end_check(router)}; answers with a stack trace {tally.stack_traces}")
    for w in workers:
        w.close()


def router_args(workers: list, opts: argparse.Namespace) -> RouterArgs:
    return RouterArgs(port=0, prometheus_port=0, policy="sticky_least_loaded",
                      worker_urls=[w.url for w in workers], worker_startup_check_interval=1,
                      health_check_interval_secs=1, health_failure_threshold=1,
                      health_success_threshold=1, request_timeout_secs=10,
                      max_sessions=opts.max_sessions, max_payload_size=opts.max_payload_size,
                      log_level="warning")


def end_check(router) -> str:
    """The router's /health and a new session's answer once the run is over."""
    with urllib.request.urlopen(router.url + "/health", timeout=10) as response:
        health = response.status
    code, _ = request(router.url + "/v1/completions", {"prompt": "after", "max_tokens": 1},
                      {"X-Session-ID": f"after-{time.monotonic_ns()}"})
    return f"after the run /health {health}, a new session {code}"


def metric(metrics_port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.rsplit(" ", 1)[1])
    return float("nan")


async def read_answer(reader: asyncio.StreamReader):
    """One HTTP/1.1 response: its status and body, framed by Content-Length or chunked."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = 0
    chunked = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
    if not chunked:
        return status, await reader.readexactly(length)
    body = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass
            return status, bytes(body)
        body += (await reader.readexactly(size + 2))[:-2]


async def distinct_ids_connection(port: int, ids: range, depth: int, tally: Tally) -> None:
    """Sends one request per id, `depth` at a time pipelined on one keep-alive connection; a connection the router
    closes is counted (the unanswered requests as transport errors) and opened again."""
    body = json.dumps({"prompt": "x", "max_tokens": 1}).encode()
    head = (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nX-Session-ID: million-" % len(body))
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for start in range(ids.start, ids.stop, depth):
        batch = range(start, min(start + depth, ids.stop))
        writer.write(b"".join(head + b"%d\r\n\r\n" % i + body for i in batch))
        answered = 0
        try:
            for _ in batch:
                tally.answer(*await read_answer(reader))
                answered += 1
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            for _ in range(len(batch) - answered):
                tally.transport_error()
            writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.close()


async def send_distinct_ids(port: int, ids: int, connections: int, depth: int, tally: Tally) -> None:
    share = -(-ids // connections)
    await asyncio.gather(*(distinct_ids_connection(port, range(c * share, min((c + 1) * share, ids)), depth, tally)
                           for c in range(connections)))


def million_ids(opts: argparse.Namespace) -> None:
    rng = random.Random(opts.seed)
    workers = [MockWorker(worker_port(rng)) for _ in range(opts.workers)]
    tally = Tally()
    rss = []
    anomalies = {"count_mismatch": 0, "negative_count": 0}
    with Router.from_args(router_args(workers, opts)).launch() as router:
        start = time.monotonic()
        sender = threading.Thread(target=asyncio.run, args=(send_distinct_ids(router.port, opts.ids, opts.connections,
                                                                              opts.pipeline, tally),), daemon=True)
        sender.start()
        full_at = None
        print(f"{'t(s)':>6} {'answered':>9} {'req/s':>6} {'non-200':>7} {'io-err':>6} {'sessions':>8} "
              f"{'evicted':>8} {'sum ok':>6} {'min/w':>5} {'RSS MiB':>8}", flush=True)
        last_answered, last_t = 0, start
        while sender.is_alive():
            sender.join(opts.report_secs)
            now = time.monotonic()
            stats = router.session_stats()
            total_ok, smallest = check_counts(stats, anomalies)
            evicted = metric(router.metrics_port, "vllm_router_sticky_sessions_evicted_total")
            mib = engine_rss_mib()
            rss.append((now - start, mib, stats["active_sessions"] >= opts.max_sessions))
            if full_at is None and stats["active_sessions"] >= opts.max_sessions:
                full_at = now - start
            with tally.lock:
                answered = sum(tally.by_status.values())
                print(f"{now - start:6.0f} {answered:9d} {(answered - last_answered) / (now - last_t):6.0f} "
                      f"{answered - tally.ok:7d} {tally.transport_errors:6d} {stats['active_sessions']:8d} "
                      f"{evicted:8.0f} {'yes' if total_ok else 'NO':>6} {smallest:5d} {mib:8.0f}", flush=True)
            last_answered, last_t = answered, now
        elapsed = time.monotonic() - start
        stats = router.session_stats()
        evicted = metric(router.metrics_port, "vllm_router_sticky_sessions_evicted_total")
        after_full = [mib for _, mib, full in rss if full]
        print(f"summary: {opts.ids} distinct session ids in {elapsed:.0f} s ({opts.ids / elapsed:.0f} req/s) over "
              f"{opts.connections} connections pipelining {opts.pipeline}; statuses "
              f"{dict(sorted(tally.by_status.items()))}, transport errors {tally.transport_errors}")
        print(f"summary: sessions active {stats['active_sessions']} (max {opts.max_sessions}), started "
              f"{stats['started']}, evicted {stats['evicted']} (metric {evicted:.0f}, expected "
              f"{stats['started'] - opts.max_sessions}); counts add up: "
              f"{sum(stats['active_by_worker'].values()) == stats['active_sessions']}; lifetime counters add up: "
              f"{stats['started'] - stats['released'] - stats['expired'] - stats['evicted'] == stats['active_sessions']}; "
              f"count mismatches seen {anomalies['count_mismatch']}, negative counts seen {anomalies['negative_count']}")
        if after_full:
            print(f"summary: engine RSS MiB when the table filled (t={full_at:.0f} s) {after_full[0]:.0f}, after it "
                  f"min {min(after_full):.0f} max {max(after_full):.0f} last {after_full[-1]:.0f}")
        else:
            print("summary: the table never filled")
        print(f"summary: {end_check(router)}; answers with a stack trace {tally.stack_traces}")
    for w in workers:
        w.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--max-sessions", type=int,
                        help="the router's session bound (default 5,000; 100,000 with --million-ids)")
    parser.add_argument("--max-payload-size", type=int, default=1024 * 1024)
    parser.add_argument("--fault-every-secs", type=float, default=5.0)
    parser.add_argument("--report-secs", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--million-ids", action="store_true",
                        help="instead of the soak, send --ids requests with distinct session ids")
    parser.add_argument("--ids", type=int, default=1_000_000)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--pipeline", type=int, default=16, help="requests in flight on each connection")
    opts = parser.parse_args()
    if opts.max_sessions is None:
        opts.max_sessions = 100_000 if opts.million_ids else 5_000
    if opts.million_ids:
        million_ids(opts)
    else:
        soak(opts)


if __name__ == "__main__":
    main()
