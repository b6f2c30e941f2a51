"""Starting and stopping real vLLM workers (vLLM's CPU build serving the tiny model of setup_vllm).

Each worker runs in its own process group (vLLM's API server, engine core and worker processes),
so stopping it stops all three; an atexit hook stops whatever is still running when Python exits,
and a worker whose parent dies without running it (SIGTERM, SIGKILL) gets SIGTERM from the kernel.
"""

import atexit
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # py_test's `helpers`

import setup_vllm  # noqa: E402
from helpers import free_port, http  # noqa: E402

# 160 blocks of setup_vllm.KV_BLOCK_TOKENS tokens hold a few long conversations, not all of a
# benchmark's, so caches evict as they would under real load.
KV_BLOCKS = 160
MAX_MODEL_LEN = 4096
START_TIMEOUT_SECS = 600
STOP_TIMEOUT_SECS = 20
# vLLM's CPU build runs on x86 cores with AVX2 at least.
REQUIRED_CPU_FLAGS = ("avx2",)


@dataclass
class VllmWorker:
    url: str
    process: subprocess.Popen
    log: Path

    def metrics(self) -> str:
        status, _, body = http("GET", self.url + "/metrics")
        assert status == 200, body
        return body.decode()


def missing_cpu_flags() -> List[str]:
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return [flag for flag in REQUIRED_CPU_FLAGS if flag not in flags]


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the worker's process group, SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_SECS), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


PR_SET_PDEATHSIG = 1


def _terminate_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent goes (vLLM then stops its own children)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start(log: Path, kv_blocks: int = KV_BLOCKS, core: int = 0, bench: bool = False) -> VllmWorker:
    """One worker on free loopback ports: prefix caching, ZMQ KV events, the render routes; its
    compute threads bound to `core` (left to itself, every worker binds the same first core).
    With `bench`, also vLLM's development routes (POST /reset_prefix_cache, so a bench empties
    the caches between its runs on the same workers) and cached tokens in each answer's usage."""
    port, events_port, replay_port = free_port(), free_port(), free_port()
    kv_events = {"enable_kv_cache_events": True, "publisher": "zmq", "topic": "",
                 "endpoint": f"tcp://*:{events_port}", "replay_endpoint": f"tcp://*:{replay_port}"}
    command = [
        str(setup_vllm.venv_bin("vllm")), "serve", str(setup_vllm.model_dir()),
        "--served-model-name", setup_vllm.MODEL_NAME,
        "--host", "127.0.0.1", "--port", str(port),
        "--load-format", "dummy",
        "--max-model-len", str(MAX_MODEL_LEN),
        "--enable-prefix-caching",
        "--num-gpu-blocks-override", str(kv_blocks),
        "--kv-events-config", json.dumps(kv_events),
        "--enable-scale-out",
        *(["--enable-prompt-tokens-details"] if bench else []),
    ]
    # VLLM_HOST_IP keeps vLLM's own inter-process sockets on the loopback interface.
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1",
               VLLM_CPU_OMP_THREADS_BIND=str(core), VLLM_HOST_IP="127.0.0.1",
               VLLM_NO_USAGE_STATS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               **({"VLLM_SERVER_DEV_MODE": "1"} if bench else {}))
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   stdin=subprocess.DEVNULL, start_new_session=True,
                                   preexec_fn=_terminate_with_parent)
    atexit.register(stop, process)
    return VllmWorker(f"http://127.0.0.1:{port}", process, log)


def last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def wait_ready(workers: List[VllmWorker]) -> str:
    """Empty when every worker answers /health 200; else why not, in one line."""
    deadline = time.monotonic() + START_TIMEOUT_SECS
    waiting = list(workers)
    while waiting and time.monotonic() < deadline:
        for worker in list(waiting):
            if worker.process.poll() is not None:
                return f"vLLM worker exited with {worker.process.returncode}: {last_line(worker.log)}"
            try:
                if http("GET", worker.url + "/health", timeout=2.0)[0] == 200:
                    waiting.remove(worker)
            except OSError:
                pass
        time.sleep(1.0)
    return f"vLLM worker not healthy within {START_TIMEOUT_SECS} s" if waiting else ""


def start_all(count: int, log_dir: Path, kv_blocks: int = KV_BLOCKS, bench: bool = False) -> List[VllmWorker]:
    """`count` workers started together; raises RuntimeError (one line) and stops them if any fails."""
    reason = setup_vllm.not_ready_reason()
    if reason:
        raise RuntimeError(reason)
    missing = missing_cpu_flags()
    if missing:
        raise RuntimeError(f"this CPU lacks {', '.join(missing)}, which vLLM's CPU build needs")
    cores = sorted(os.sched_getaffinity(0))
    workers = [start(log_dir / f"vllm-{i}.log", kv_blocks, cores[i % len(cores)], bench) for i in range(count)]
    reason = wait_ready(workers)
    if reason:
        stop_all(workers)
        raise RuntimeError(reason)
    return workers


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


def stop_all(workers: List[VllmWorker]) -> None:
    for worker in workers:
        stop(worker.process)
