"""`vllm-router python SCRIPT`: the training-loop example, mock workers included, prints the same
under CPython (engine in a child JVM) and inside the launcher's JVM (engine in-process)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAUNCHER = REPO / "java" / "host" / "target" / "vllm-router-dist" / "bin" / "vllm-router"
TRAINING_LOOP = REPO / "examples" / "training_loop.py"
STDLIB_POSIX = Path(__file__).resolve().parent / "programs" / "stdlib_posix.py"
SESSION_ANSWERS = Path(__file__).resolve().parent / "programs" / "session_answers.py"
LAUNCH_IMPORTS = Path(__file__).resolve().parent / "programs" / "launch_imports.py"
RUN_TIMEOUT_SECS = 600


@pytest.fixture(scope="module")
def launcher():
    """The distribution's launcher (GraalPy inside). Missing => the test fails, with the reason."""
    if not LAUNCHER.is_file():
        pytest.fail(f"{LAUNCHER} is not built: `mvn package` (or `make test`) builds it", pytrace=False)
    return LAUNCHER


def run(command: list, **extra_env) -> subprocess.CompletedProcess:
    # No start-up caches: the launcher would keep its class-data archive in the user's home.
    env = {**os.environ, "VLLM_ROUTER_STARTUP_CACHE": "off", **extra_env}
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


def test_sockets_processes_signals_and_proc_behave_as_under_cpython(launcher, engine_jar):
    """One program runs every case (the launcher's start is the slow part) and prints a report."""
    command = [str(STDLIB_POSIX)]
    cpython = run([sys.executable, *command], EXPECTED_PPID=str(os.getpid()))
    hosted = run([str(launcher), "python", *command], EXPECTED_PPID=str(os.getpid()))
    assert cpython.returncode == 0, cpython.stderr
    assert hosted.returncode == 0, hosted.stderr
    ok = json.dumps({"status": "ok"})
    assert json.loads(cpython.stdout) == {
        "bound_port_before_listen": True,
        "http_server_on_port_zero": {"port_known": True, "get": [200, ok]},
        "create_server_echo": {"port_known": True, "echo": "PING"},
        "selectors_readiness": {"idle": 0, "ready": ["a"], "read": "x"},
        "subprocess_pipes": {"sh": [3, "THROUGH A PIPE"], "cat": [0, "cat says hi"]},
        "socketserver_thread": "LINE\n",
        "router_over_stdlib_workers": [[200, ok], [200, ok]],
        "signal_handler": {"received": ["SIGUSR1"], "previous_default": True},
        "parent_pid": True,
        "proc_self": {"stat_pid": True, "status_pid": True, "ppid": True},
    }
    assert json.loads(hosted.stdout) == json.loads(cpython.stdout)


def test_session_answers_have_the_process_bridges_keys_types_and_order(launcher, mock_workers):
    """In-process, the answers are made in Java; through the process bridge, decoded from JSON."""
    command = [str(SESSION_ANSWERS), *mock_workers]
    cpython = run([sys.executable, *command])
    hosted = run([str(launcher), "python", *command])
    assert cpython.returncode == 0, cpython.stderr
    assert hosted.returncode == 0, hosted.stderr
    report = json.loads(cpython.stdout)
    stats = dict((key, item) for _, key, item in report["session_stats"]["dict"])
    assert stats["active_sessions"] == ["int", 1]
    assert stats["released"] == ["int", 1]
    assert stats["degraded"] == ["bool", False]
    assert stats["session_store"] == ["str", "memory"]
    assert report["sessions"] == stats["active_by_worker"]
    assert sorted(key for _, key, _ in report["sessions"]["dict"]) == sorted(mock_workers)
    assert json.loads(hosted.stdout) == report


def test_an_in_process_launch_leaves_the_other_paths_modules_unimported(launcher, mock_workers):
    """Under GraalPy each module is interpreted at import; the command-line parser, the control
    calls' urllib and `start()`'s signal handling are not needed to launch (as on CPython:
    py_test/unit/test_launcher_imports.py)."""
    hosted = run([str(launcher), "python", str(LAUNCH_IMPORTS), *mock_workers])
    assert hosted.returncode == 0, hosted.stderr
    imported = json.loads(hosted.stdout)
    assert "vllm_router.bridge.graal" in imported
    assert [m for m in ("argparse", "urllib.parse", "ipaddress", "signal", "logging") if m in imported] == []
