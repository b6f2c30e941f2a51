"""`vllm-router python SCRIPT`: the training-loop example, mock workers included, prints the same
under CPython (engine in a child JVM) and inside the launcher's JVM (engine in-process)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAUNCHER = REPO / "java" / "host" / "target" / "vllm-router-dist" / "bin" / "vllm-router"
TRAINING_LOOP = REPO / "examples" / "training_loop.py"
RUN_TIMEOUT_SECS = 600


@pytest.fixture(scope="module")
def launcher():
    """The distribution's launcher (GraalPy inside). Missing => the test fails, with the reason."""
    if not LAUNCHER.is_file():
        pytest.fail(f"{LAUNCHER} is not built: `mvn package` (or `make test`) builds it", pytrace=False)
    return LAUNCHER


def run(command: list) -> subprocess.CompletedProcess:
    # No start-up caches: the launcher would keep its class-data archive in the user's home.
    env = {**os.environ, "VLLM_ROUTER_STARTUP_CACHE": "off"}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_SECS)


def test_training_loop_prints_the_same_under_cpython_and_the_launcher(launcher, engine_jar):
    cpython = run([sys.executable, str(TRAINING_LOOP)])
    hosted = run([str(launcher), "python", str(TRAINING_LOOP)])
    assert cpython.returncode == 0, cpython.stderr
    assert hosted.returncode == 0, hosted.stderr
    # 6 trajectories over 4 workers, one at a time: least-loaded spreads them 2/2/1/1, each
    # trajectory's turns stay on its worker, and finish_session frees every slot.
    assert "active sessions per worker: [2, 2, 1, 1]\nafter finish_session: [0, 0, 0, 0]\n" in cpython.stdout
    assert "3 turns on 1 worker(s)" in cpython.stdout
    assert hosted.stdout == cpython.stdout
