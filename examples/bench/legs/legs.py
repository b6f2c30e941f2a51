#!/usr/bin/env python3
"""Where a proxied request's time goes, per request, for each proxy side by side.

wrk reports one latency per request, and corrects it for coordinated omission: wrk 4.1 adds, for every
latency longer than two mean intervals (the run's length over the requests one connection made), samples
at that latency minus one interval, minus two, and so on (stats_correct in its stats.c), so its p99 weighs a
stall by its length. This benchmark keeps both views and splits each request into four legs, with
timestamps the kernel takes (SO_TIMESTAMPING) on the client's and the backend's sockets:

  in    client's write of the request -> the proxy's copy reaches the backend's socket
  back  -> the backend writes its answer (the backend waiting for a CPU and working)
  out   -> the proxy's copy of the answer reaches the client's socket
  cli   -> the client has read the whole answer

A C client (legs_client.c: one thread, epoll, keep-alive, a BODY_BYTES POST with a random X-Session-ID out
of SESSIONS, the next request as soon as the answer is in) drives each arm in front of a C backend
(legs_backend.c: two processes sharing two ports, a fixed answer carrying its timestamps). All arms run at
once and are measured in rounds of one window per arm, the order rotated every round, like load_compare's
ROUNDS mode. Arms: router (this tree's package, started as a user starts it), haproxy, haproxy-1t (one
thread). Needs gcc, and haproxy for its arms; the router arm needs the packaged engine jar (`make`).

  python3 examples/bench/legs/legs.py --arms haproxy router --concurrency 16 64 --rounds 6
  python3 examples/bench/legs/legs.py --analyze FILE...      (legs of recorded client files)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
ARMS = ("router", "haproxy", "haproxy-1t")
LEGS = ("in", "back", "out", "cli")
PERCENTILES = (50, 90, 99, 99.9)


def fail(message: str) -> None:
    print(f"legs.py: {message}", file=sys.stderr)
    sys.exit(2)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(sorted_values: list, p: float):
    """The value at rank round(p% of n + 0.5), as wrk computes it."""
    rank = round(p / 100 * len(sorted_values) + 0.5)
    return sorted_values[min(len(sorted_values), max(rank, 1)) - 1]


def wrk_corrected(latencies_us: list[int], connections: int, runtime_us: int) -> list[int]:
    """The latencies plus the samples wrk 4.1's stats_correct adds (see the module's docstring)."""
    per_connection = len(latencies_us) // connections
    if per_connection == 0:
        return sorted(latencies_us)
    interval = runtime_us // per_connection
    out = list(latencies_us)
    for n in latencies_us:
        if n >= 2 * interval:
            m = n - interval
            while m > interval:
                out.append(m)
                m -= interval
    return sorted(out)


def analyze(path: Path, connections: int) -> dict:
    """Request rate, raw and wrk-corrected latency percentiles and each leg's percentiles (microseconds)."""
    rows = [tuple(map(int, line.split())) for line in path.open()]
    if not rows:
        raise ValueError(f"{path}: no answered request")
    runtime_us = (max(r[1] for r in rows) - min(r[0] for r in rows)) // 1000
    total = sorted((r[1] - r[0]) // 1000 for r in rows)
    corrected = wrk_corrected(total, connections, runtime_us)
    # A fresh backend connection's first request arrives before the backend turns timestamps on: no legs.
    stamped = [r for r in rows if r[4] > 0 and r[2] > 0]
    legs = {
        "in": sorted((r[4] - r[0]) / 1e3 for r in stamped),
        "back": sorted((r[5] - r[4]) / 1e3 for r in stamped),
        "out": sorted((r[2] - r[5]) / 1e3 for r in stamped),
        "cli": sorted((r[1] - r[2]) / 1e3 for r in stamped),
    }
    result = {
        "requests": len(rows),
        "rps": len(rows) / (runtime_us / 1e6),
        "raw": {str(p): percentile(total, p) for p in PERCENTILES},
        "wrk": {str(p): percentile(corrected, p) for p in PERCENTILES},
        "max": total[-1],
    }
    if stamped:
        result["legs"] = {leg: {str(p): percentile(values, p) for p in (99, 99.9)} for leg, values in legs.items()}
    return result


def wait_healthy(url: str, process: subprocess.Popen, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            fail(f"{what} exited with {process.returncode} before it became healthy")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    fail(f"{what} did not become healthy within {seconds:.0f} s")


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path):
        self.args = args
        self.work = work
        self.processes: list[subprocess.Popen] = []
        self.backend_ports = [free_port(), free_port()]

    def spawn(self, command: list[str], name: str, env: dict | None = None) -> subprocess.Popen:
        log = (self.work / f"{name}.log").open("w")
        # A session of its own, so that stopping it also stops what it forked (the backend's workers, the engine).
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.processes.append(process)
        return process

    def stop(self) -> None:
        for process in self.processes:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)

    def build(self) -> None:
        for name in ("legs_client", "legs_backend"):
            subprocess.run(["gcc", "-O2", "-Wall", "-o", str(self.work / name), str(HERE / f"{name}.c")], check=True)

    def start_backend(self) -> None:
        ports = [str(p) for p in self.backend_ports]
        process = self.spawn([str(self.work / "legs_backend"), *ports, "-w", "2"], "backend")
        for port in self.backend_ports:
            self.wait_listening(port, process, "backend")

    def wait_listening(self, port: int, process: subprocess.Popen, name: str) -> None:
        """Waits until something accepts connections on the port; fails with the process's log if it exits first."""
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    fail(f"{name} did not listen on port {port}: {(self.work / f'{name}.log').read_text()[-500:]}")
                time.sleep(0.05)

    def start_arm(self, arm: str) -> int:
        port = free_port()
        urls = [f"http://127.0.0.1:{p}" for p in self.backend_ports]
        if arm.startswith("haproxy"):
            lines = ["global", "    maxconn 4096"] + (["    nbthread 1"] if arm == "haproxy-1t" else []) + [
                "defaults", "    mode http", "    option http-keep-alive", "    http-reuse always",
                "    timeout connect 5s", "    timeout client 60s", "    timeout server 60s",
                "frontend fe", f"    bind 127.0.0.1:{port}", "    default_backend workers",
                "backend workers", "    balance leastconn",
                "    stick-table type string len 128 size 1m expire 2h", "    stick on req.fhdr(x-session-id)",
            ] + [f"    server w{i} 127.0.0.1:{p}" for i, p in enumerate(self.backend_ports, 1)]
            config = self.work / f"{arm}.cfg"
            config.write_text("\n".join(lines) + "\n")
            self.wait_listening(port, self.spawn(["haproxy", "-db", "-f", str(config)], arm), arm)
        else:
            env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
            process = self.spawn([sys.executable, "-m", "vllm_router.launch_router", "--host", "127.0.0.1",
                                  "--port", str(port), "--prometheus-port", str(free_port()),
                                  "--policy", "sticky_least_loaded", "--worker-urls", *urls], arm, env)
            wait_healthy(f"http://127.0.0.1:{port}/health", process, 120, arm)
        return port

    def load(self, port: int, connections: int, seconds: int, out: Path) -> None:
        command = [str(self.work / "legs_client"), str(port), str(connections), str(seconds), str(out),
                   str(self.args.sessions), str(self.args.body_bytes)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"the client failed against port {port}: {done.stderr.strip()}")


def report(results: dict, arms: list[str], concurrencies: list[int]) -> str:
    base = arms[0]
    lines = []
    for c in concurrencies:
        lines.append(f"c={c}: medians over rounds; (x) = median of the paired ratio to {base} in the same round")
        for arm in arms:
            rounds = results[c][arm]

            def med(get):
                return statistics.median(get(r) for r in rounds)

            def ratio(get):
                return statistics.median(get(r) / get(b) for r, b in zip(rounds, results[c][base]) if get(b))

            def cell(label, get):
                text = f"{label} {med(get):.0f}"
                return text if arm == base else f"{text} ({ratio(get):.2f})"

            lines.append(f"  {arm:11s} " + "  ".join([cell("req/s", lambda r: r["rps"])] + [
                cell(f"p{p:g}", lambda r, p=p: r["raw"][str(p)]) for p in PERCENTILES] + [
                cell("wrk p99", lambda r: r["wrk"]["99"]), cell("wrk p99.9", lambda r: r["wrk"]["99.9"])]))
            if all("legs" in r for r in rounds):
                lines.append(f"  {'':11s} legs p99/p99.9 us: " + "  ".join(
                    f"{leg} {med(lambda r, leg=leg: r['legs'][leg]['99']):.0f}/"
                    f"{med(lambda r, leg=leg: r['legs'][leg]['99.9']):.0f}" for leg in LEGS))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", nargs="+", default=["haproxy", "router"], choices=ARMS,
                        help="proxies to compare; ratios are against the first (default: haproxy router)")
    parser.add_argument("--concurrency", nargs="+", type=int, default=[16, 64])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=int, default=6, help="seconds per window")
    parser.add_argument("--warmup-s", type=int, default=240,
                        help="load on each router arm before measuring (the JIT settles for minutes)")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--body-bytes", type=int, default=2048)
    parser.add_argument("--out", type=Path, help="directory for the client files and the JSON (default: a temporary one)")
    parser.add_argument("--analyze", nargs="+", type=Path, metavar="FILE", help="only analyze recorded client files")
    parser.add_argument("--connections", type=int, default=16, help="with --analyze: the files' connection count")
    args = parser.parse_args()

    if args.analyze:
        for path in args.analyze:
            if not path.is_file():
                fail(f"no such file: {path}")
            print(path, json.dumps(analyze(path, args.connections)))
        return
    if len(set(args.arms)) != len(args.arms):
        fail(f"an arm is named twice: {' '.join(args.arms)}")
    if not 1 <= args.rounds <= 100 or not 1 <= args.seconds <= 600 or args.warmup_s < 0:
        fail("--rounds must be 1-100, --seconds 1-600, --warmup-s 0 or more")
    if any(not 1 <= c <= 4096 for c in args.concurrency):
        fail("each --concurrency must be 1-4096")
    if not 1 <= args.sessions <= 999999 or not 64 <= args.body_bytes <= 262144:
        fail("--sessions must be 1-999999 and --body-bytes 64-262144")
    if args.sessions * (args.body_bytes + 512) > 1 << 30:
        fail("the client holds one built request per session: --sessions x --body-bytes must stay within 1 GiB")
    if shutil.which("gcc") is None:
        fail("gcc is needed to build the client and the backend")
    if any(a.startswith("haproxy") for a in args.arms) and shutil.which("haproxy") is None:
        fail("the haproxy arms need haproxy on PATH")
    if "router" in args.arms and not (ROOT / "python/vllm_router/_engine/vllm-router-engine.jar").is_file():
        fail("the router arm needs the packaged engine jar: run `make` (or `make packaged-jar`) first")

    out = args.out or Path(tempfile.mkdtemp(prefix="legs-"))
    out.mkdir(parents=True, exist_ok=True)
    bench = Bench(args, out)
    try:
        bench.build()
        bench.start_backend()
        ports = {arm: bench.start_arm(arm) for arm in args.arms}
        for arm in args.arms:
            warm = args.warmup_s if arm == "router" else 5
            print(f"{arm}: warm-up {warm} s", file=sys.stderr)
            for chunk in range(0, warm, 10):
                c = args.concurrency[(chunk // 10) % len(args.concurrency)]
                bench.load(ports[arm], c, min(10, warm - chunk), Path(os.devnull))
        results = {c: {arm: [] for arm in args.arms} for c in args.concurrency}
        for c in args.concurrency:
            for r in range(args.rounds):
                order = args.arms[r % len(args.arms):] + args.arms[:r % len(args.arms)]
                for arm in order:
                    path = out / f"c{c}-{arm}-{r + 1}.out"
                    bench.load(ports[arm], c, args.seconds, path)
                    results[c][arm].append(analyze(path, c))
                    path.unlink()
                print(f"c={c} round {r + 1}/{args.rounds} done", file=sys.stderr)
        (out / "legs.json").write_text(json.dumps({str(c): v for c, v in results.items()}, indent=1))
        print(report(results, args.arms, args.concurrency))
        print(f"(per-window results in {out / 'legs.json'})")
    finally:
        bench.stop()


if __name__ == "__main__":
    main()
