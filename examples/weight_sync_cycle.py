"""A rollout across one weight-sync cycle: the trainer's calls through the router, or fanned out
by the trainer itself to every worker (what SkyRL does). Prints, per pause mode and path, the turns
the sync aborted or failed and the p99 latency of the turns that overlapped it.

    PYTHONPATH=python python3 examples/weight_sync_cycle.py [--sessions 64] [--workers 4]
"""

import argparse
import json
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from vllm_router import Router, RouterArgs
from vllm_router.mock_workers import MockWorkers

TRANSFER_SECS = 0.5  # the trainer's weight broadcast, between pause and resume


def post(url, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, None


def sync_through_router(handle, mode, version):
    handle.pause(mode)
    time.sleep(TRANSFER_SECS)
    handle.update_weights({"weight_version": version})
    handle.resume()


def sync_fanned_out(worker_urls, mode, version):
    with ThreadPoolExecutor(len(worker_urls)) as pool:
        list(pool.map(lambda u: post(f"{u}/pause?mode={mode}"), worker_urls))
        time.sleep(TRANSFER_SECS)
        list(pool.map(lambda u: post(f"{u}/update_weights", {"weight_version": version}), worker_urls))
        list(pool.map(lambda u: post(f"{u}/resume"), worker_urls))


def cycle(handle, sync, sessions):
    turns = []
    lock = threading.Lock()
    stop = threading.Event()

    def session(i):
        while not stop.is_set():
            started = time.monotonic()
            status, body = post(handle.url + "/v1/completions", {"prompt": f"turn of {i}", "max_tokens": 8},
                                {"X-Session-ID": f"s{i}"})
            reason = body["choices"][0].get("finish_reason") if body else None
            with lock:
                turns.append((started, time.monotonic(), status, reason))

    threads = [threading.Thread(target=session, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    sync_start = time.monotonic()
    sync()
    sync_end = time.monotonic()
    time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join()
    overlapping = sorted(end - start for start, end, _, _ in turns if end >= sync_start and start <= sync_end)
    p99 = overlapping[int(0.99 * (len(overlapping) - 1))] if overlapping else 0.0
    return {
        "turns": len(turns),
        "aborted": sum(1 for t in turns if t[3] == "abort"),
        "failed": sum(1 for t in turns if t[2] != 200),
        "p99_overlapping_s": round(p99, 3),
        "sync_s": round(sync_end - sync_start, 3),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--latency-ms", type=int, default=200)
    args = parser.parse_args()
    with MockWorkers(args.workers, {"latency-ms": args.latency_ms}) as workers:
        router_args = RouterArgs(port=0, prometheus_port=0, worker_urls=workers.urls, policy="sticky_least_loaded")
        with Router.from_args(router_args).launch() as handle:
            version = 0
            for mode in ("abort", "keep", "wait"):
                for path in ("router", "fan-out"):
                    version += 1
                    sync = (lambda: sync_through_router(handle, mode, version)) if path == "router" \
                        else (lambda: sync_fanned_out(workers.urls, mode, version))
                    print(json.dumps({"mode": mode, "path": path, **cycle(handle, sync, args.sessions)}), flush=True)


if __name__ == "__main__":
    main()
