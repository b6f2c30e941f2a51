"""The rollout bench's real-vLLM arm, calibrated: starts two real vLLM workers (vLLM's CPU build,
the tiny model of py_test/real_vllm/setup_vllm.py, with the development routes the bench needs),
runs `python -m vllm_router.bench rollout --worker-urls ...` on them with the given arguments,
prints each worker's start-up time and resident memory (its whole process group), and stops them.

    make engine-jar packaged-jar && python3 py_test/real_vllm/setup_vllm.py
    PYTHONPATH="python:$HOME/.cache/vllm-router/router-deps" python3 examples/real_vllm/rollout_arm.py \\
        --shape small --groups 4 --samples 4 --seed 1 --calibrate \\
        [--router-python ~/.cache/vllm-router/rust-router-0.1.17/bin/python --policies P,... --ours P,...]
"""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "py_test" / "real_vllm"))

import vllm_process  # noqa: E402
from vllm_router.bench.__main__ import main as bench  # noqa: E402

WORKERS = 2


def memory(workers, when: str) -> None:
    for i, w in enumerate(workers):
        rss, pss = vllm_process.group_memory_mib(w.process.pid)
        print(f"worker {i} {when}: RSS {rss:.0f} MiB, PSS {pss:.0f} MiB (its process group)")


def main() -> int:
    started = time.monotonic()
    try:
        workers = vllm_process.start_all(WORKERS, Path(tempfile.mkdtemp(prefix="rollout-arm-")), bench=True)
    except RuntimeError as e:
        print(f"rollout_arm: {e}", file=sys.stderr)
        return 2
    try:
        print(f"{WORKERS} real vLLM workers healthy in {time.monotonic() - started:.0f} s")
        memory(workers, "started")
        status = bench(["rollout", "--worker-urls", ",".join(w.url for w in workers), *sys.argv[1:]])
        memory(workers, "after the runs")
        return status
    finally:
        vllm_process.stop_all(workers)


if __name__ == "__main__":
    sys.exit(main())
