"""Real vLLM workers (vLLM's CPU build serving a tiny random-weight model) for the tests here.

These tests run only under `make real-vllm-test`, which installs the real vLLM first
(setup_vllm.py) and sets REAL_VLLM_TESTS=1; in any other run of py_test they are skipped. A
missing install, a CPU without what vLLM's CPU build needs or a worker that does not start skips
these tests with a one-line reason, never the rest of py_test.
"""

import os
import sys
import tempfile
from pathlib import Path
from typing import List

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # setup_vllm, vllm_process

import vllm_process  # noqa: E402

ENABLE_VARIABLE = "REAL_VLLM_TESTS"
WORKER_COUNT = 2


def pytest_runtest_setup(item):
    if os.environ.get(ENABLE_VARIABLE) != "1":
        pytest.skip(f"real-vLLM tests run with `make real-vllm-test` ({ENABLE_VARIABLE}=1)")


@pytest.fixture(scope="session")
def vllm_workers() -> List[vllm_process.VllmWorker]:
    """WORKER_COUNT real vLLM workers on free loopback ports, stopped when the session ends; with
    the routes the rollout bench's real-vLLM arm needs (its test runs on them too)."""
    try:
        workers = vllm_process.start_all(WORKER_COUNT, Path(tempfile.mkdtemp(prefix="real-vllm-")), bench=True)
    except RuntimeError as e:
        pytest.skip(str(e))
    try:
        yield workers
    finally:
        vllm_process.stop_all(workers)
