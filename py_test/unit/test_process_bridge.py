"""The process bridge's side of the protocol, against scripted stand-in engines (no JVM needed).

The real engine is exercised in py_test/test_bridge.py; these cover the failure paths that a
real engine cannot be made to take on demand.
"""

import json
import stat
import sys
import textwrap
import time

import pytest

from helpers import wait_until
from vllm_router.bridge import EngineConfigError, EngineStartupError
from vllm_router.bridge.process import start_engine


@pytest.fixture
def scripted_engine(tmp_path, monkeypatch):
    """Install a stand-in 'java' that runs the given Python body instead of the engine."""

    def install(body: str):
        home = tmp_path / "java-home"
        (home / "bin").mkdir(parents=True)
        (home / "release").write_text('JAVA_VERSION="25.0.0"\n')
        script = tmp_path / "engine.py"
        script.write_text("import json, sys, time\nconfig = json.loads(sys.stdin.readline())\n"
                          + textwrap.dedent(body))
        java = home / "bin" / "java"
        java.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
        java.chmod(java.stat().st_mode | stat.S_IXUSR)
        jar = tmp_path / "engine.jar"
        jar.write_bytes(b"")
        monkeypatch.setenv("VLLM_ROUTER_JAVA", str(java))
        monkeypatch.setenv("VLLM_ROUTER_ENGINE_JAR", str(jar))
        monkeypatch.setenv("VLLM_ROUTER_STARTUP_CACHE", "off")
        monkeypatch.delenv("VLLM_ROUTER_JVM_OPTS", raising=False)

    return install


READY = ('print(json.dumps({"event": "ready", "url": "http://127.0.0.1:4321", '
         '"client_url": "http://127.0.0.1:4321", "port": 4321, "metrics_port": 4322}), flush=True)\n')


def test_ready_line_after_other_stdout_output(scripted_engine, capfd):
    scripted_engine('print("some library chatter", flush=True)\n' + READY + """
print("after ready", flush=True)
sys.stdin.read()  # lifeline
""")
    engine = start_engine('{"port": 0}')
    assert (engine.port, engine.metrics_port, engine.url) == (4321, 4322, "http://127.0.0.1:4321")
    engine._close_lifeline()
    assert engine.wait(5) == 0
    # The bridge's reader thread may still be passing the last line through after the exit.
    out = []

    def passed_through() -> bool:
        out.append(capfd.readouterr().out)
        return "after ready" in "".join(out)

    assert wait_until(passed_through, 5), "".join(out)
    assert "some library chatter" in "".join(out)


def test_config_gets_the_json_line_and_lifeline_eof_stops(scripted_engine):
    scripted_engine(READY + """
sys.stdin.read()
sys.exit(0 if config == {"policy": "sticky_least_loaded"} else 3)
""")
    engine = start_engine('{"policy": "sticky_least_loaded"}')
    engine._close_lifeline()
    assert engine.wait(5) == 0


def error_line(**fields) -> str:
    return f"print(json.dumps({dict(event='error', **fields)!r}), flush=True)\nsys.exit(2)\n"


def test_config_error_is_value_error(scripted_engine):
    scripted_engine(error_line(kind="config", message="Invalid config JSON: expected a JSON object"))
    with pytest.raises(EngineConfigError, match="^Invalid config JSON: expected a JSON object$") as excinfo:
        start_engine("{}")
    assert isinstance(excinfo.value, ValueError)


@pytest.mark.parametrize("fields", [
    dict(kind="startup", message="Address already in use"),
    # The kind decides, not the wording.
    dict(kind="startup", message="Configuration validation failed: looks like a config error"),
    dict(message="Configuration validation failed: an engine that names no kind"),
])
def test_other_error_is_runtime_error(scripted_engine, fields):
    scripted_engine(error_line(**fields))
    with pytest.raises(EngineStartupError) as excinfo:
        start_engine("{}")
    assert str(excinfo.value) == fields["message"]
    assert not isinstance(excinfo.value, ValueError)


def test_jvm_opts_reach_the_engine_jvm(scripted_engine, monkeypatch, tmp_path):
    argv_file = tmp_path / "argv.json"
    scripted_engine(f"json.dump(sys.argv[1:], open({str(argv_file)!r}, 'w'))\n" + READY + "sys.stdin.read()\n")
    monkeypatch.setenv("VLLM_ROUTER_JVM_OPTS", "'-Dvllm.test=a b' -Xmx64m")
    engine = start_engine("{}")
    engine._close_lifeline()
    assert engine.wait(5) == 0
    argv = json.loads(argv_file.read_text())
    options = argv[:argv.index("-cp")]
    # After the bridge's own options, so that a user's flag overrides ours.
    assert options.index("-Dvllm.test=a b") > options.index("-XX:+UseSerialGC")
    assert options.index("-Xmx64m") == options.index("-Dvllm.test=a b") + 1


def test_death_before_ready_fails_fast(scripted_engine):
    scripted_engine("sys.exit(7)\n")
    started = time.monotonic()
    with pytest.raises(EngineStartupError, match="exited with status 7 before it was ready"):
        start_engine("{}")
    assert time.monotonic() - started < 3


def test_startup_timeout(scripted_engine):
    scripted_engine("time.sleep(30)\n")
    with pytest.raises(EngineStartupError, match="not ready within 0.5 s"):
        start_engine("{}", startup_timeout=0.5)


def test_sigterm_requests_drain(scripted_engine):
    scripted_engine("""
import signal
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
""" + READY + """
while True:
    time.sleep(0.05)
""")
    engine = start_engine("{}")
    assert engine.is_running()
    assert engine.stop(5) == 0
