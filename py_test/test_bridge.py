"""The process bridge against the real engine: handshake, errors, signals, lifeline, logs."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from helpers import child_pids, free_port, http, pid_alive, wait_healthy, wait_until
from vllm_router import Router, RouterArgs

STOP_WITHIN_SECS = 10.0


@pytest.fixture(scope="module")
def idle_router(engine_jar):
    """One router with no workers on ephemeral ports, shared by the read-only checks."""
    with Router.from_args(RouterArgs(port=0, prometheus_port=0)).launch() as handle:
        yield handle


def test_ready_handshake_with_port_zero(idle_router):
    assert idle_router.port > 0
    assert idle_router.metrics_port and idle_router.metrics_port > 0
    assert idle_router.metrics_port != idle_router.port
    assert idle_router.url == f"http://127.0.0.1:{idle_router.port}"
    assert http("GET", idle_router.url + "/health")[0] == 200


def test_bad_config_is_value_error_with_engine_message(engine_jar):
    with pytest.raises(ValueError) as excinfo:
        Router.from_args(RouterArgs(port=0, prometheus_port=0, cache_threshold=1.5)).launch()
    assert str(excinfo.value).startswith("Configuration validation failed")


@pytest.mark.parametrize("field, value, reason", [
    ("sticky_balanced_group_margin", -0.5, "Must be finite and >= 0.0"),
    ("sticky_balanced_move_margin", -0.25, "Must be finite and >= 0.0"),
    ("sticky_balanced_move_kv_usage", 1.5, "Must be finite and between 0.0 and 1.0"),
    ("sticky_balanced_tool_hold_secs", -0.5, "Must be finite and between 0.0 and 3600.0"),
])
def test_bad_sticky_balanced_flag_is_value_error_naming_it(engine_jar, field, value, reason):
    with pytest.raises(ValueError) as excinfo:
        Router.from_args(RouterArgs(port=0, prometheus_port=0, policy="sticky_balanced", **{field: value})).launch()
    assert str(excinfo.value) == f"Configuration validation failed: Invalid value for field '{field}': {value} - {reason}"


@pytest.mark.parametrize("url, reason", [
    ("ftp://w:1", "URL must start with http://, https://, or grpc://"),
    ("http://127.0.0.1:0", "Port must be between 1 and 65535"),
    ("http://:8000", "URL must have a valid host"),
])
def test_invalid_worker_url_is_value_error_naming_it(engine_jar, url, reason):
    with pytest.raises(ValueError) as excinfo:
        Router.from_args(RouterArgs(port=0, prometheus_port=0, worker_urls=[url])).launch()
    assert str(excinfo.value) == f"Configuration validation failed: Invalid value for field 'worker_url': {url} - {reason}"


def test_port_in_use_is_runtime_error(engine_jar):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError) as excinfo:
            Router.from_args(RouterArgs(port=port, prometheus_port=0)).launch()
        assert not isinstance(excinfo.value, ValueError)


def test_unknown_transport_is_runtime_error_naming_the_accepted_ones(engine_jar, monkeypatch):
    monkeypatch.setenv("VLLM_ROUTER_TRANSPORT", "uring")
    with pytest.raises(RuntimeError) as excinfo:
        Router.from_args(RouterArgs(port=0, prometheus_port=0)).launch()
    assert "VLLM_ROUTER_TRANSPORT must be one of auto, io_uring, epoll, nio; got 'uring'" in str(excinfo.value)


@pytest.mark.parametrize("loops", ["0", "two"])
def test_a_bad_event_loop_count_is_runtime_error_naming_the_variable(engine_jar, monkeypatch, loops):
    monkeypatch.setenv("TOKIO_WORKER_THREADS", loops)
    with pytest.raises(RuntimeError) as excinfo:
        Router.from_args(RouterArgs(port=0, prometheus_port=0)).launch()
    assert f"TOKIO_WORKER_THREADS must be a positive whole number of event loops; got '{loops}'" in str(excinfo.value)


def test_a_set_event_loop_count_is_the_one_the_engine_runs(engine_jar, monkeypatch, capfd):
    monkeypatch.setenv("TOKIO_WORKER_THREADS", "3")
    with Router.from_args(RouterArgs(port=0, prometheus_port=0)).launch() as handle:
        assert http("GET", handle.url + "/health")[0] == 200
    assert "Event loops: 3 on " in capfd.readouterr().err


@pytest.mark.parametrize("transport", ["epoll", "nio"])
def test_a_named_transport_serves(engine_jar, monkeypatch, transport):
    monkeypatch.setenv("VLLM_ROUTER_TRANSPORT", transport)
    with Router.from_args(RouterArgs(port=0, prometheus_port=0)).launch() as handle:
        assert http("GET", handle.url + "/health")[0] == 200


LAUNCH_SCRIPT = textwrap.dedent("""
    import sys
    from vllm_router.launch_router import launch_router
    from vllm_router.router_args import RouterArgs
    launch_router(RouterArgs(port=int(sys.argv[1]), prometheus_port=0, policy="sticky_least_loaded"))
""")


def start_launcher(port: int, stderr, stdout=subprocess.DEVNULL) -> subprocess.Popen:
    """A Python process that calls launch_router, as a trainer's child process does."""
    return subprocess.Popen([sys.executable, "-c", LAUNCH_SCRIPT, str(port)], stdout=stdout, stderr=stderr)


def launched_jvm(launcher: subprocess.Popen) -> int:
    """The launcher's engine JVM; not the class-cache builder a first start after an install
    also starts as its child."""
    def engines():
        return [pid for pid in child_pids(launcher.pid) if _is_engine_jvm(pid)]

    assert wait_until(engines, 10), "no engine JVM started"
    return engines()[0]


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_drains_and_exits_zero(engine_jar, tmp_path, stop_signal):
    port = free_port()
    with open(tmp_path / "router.log", "wb") as log:
        launcher = start_launcher(port, log)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", alive=lambda: launcher.poll() is None)
        jvm = launched_jvm(launcher)
        launcher.send_signal(stop_signal)
        assert launcher.wait(STOP_WITHIN_SECS) == 0
        assert wait_until(lambda: not pid_alive(jvm), 2), "engine JVM outlived launch_router"
    finally:
        if launcher.poll() is None:
            launcher.kill()


def test_a_stop_signal_ends_the_router_when_its_drain_fails(engine_jar, tmp_path, monkeypatch):
    """A jar copied over while the router runs makes the drain's first new class fail to load; the
    router must still stop, with status 1, instead of ignoring every later stop signal."""
    jar = tmp_path / "engine.jar"
    jar.write_bytes(engine_jar.read_bytes())
    monkeypatch.setenv("VLLM_ROUTER_ENGINE_JAR", str(jar))
    monkeypatch.setenv("VLLM_ROUTER_STARTUP_CACHE", "off")  # every class from the jar, none from a cache
    port = free_port()
    with open(tmp_path / "router.log", "wb") as log, open(tmp_path / "router.out", "wb") as out:
        launcher = start_launcher(port, log, stdout=out)
    try:
        # The last line a start prints comes after the handshake: past it the engine only serves.
        assert wait_until(lambda: b"Dashboard: " in (tmp_path / "router.out").read_bytes()
                          or launcher.poll() is not None, 30)
        assert http("GET", f"http://127.0.0.1:{port}/health")[0] == 200
        jvm = launched_jvm(launcher)
        with open(jar, "r+b") as overwritten:
            overwritten.truncate(0)
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(STOP_WITHIN_SECS) == 1
        assert wait_until(lambda: not pid_alive(jvm), 2), "engine JVM outlived launch_router"
        assert "Draining failed; stopping without it" in (tmp_path / "router.log").read_text()
    finally:
        if launcher.poll() is None:
            launcher.kill()


def test_terminal_ctrl_c_stops_launch_router_through_python(engine_jar, tmp_path):
    """A terminal's Ctrl-C signals the whole foreground process group; the engine is not in it."""
    port = free_port()
    with open(tmp_path / "router.log", "wb") as log:
        launcher = subprocess.Popen([sys.executable, "-c", LAUNCH_SCRIPT, str(port)],
                                    stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", alive=lambda: launcher.poll() is None)
        jvm = launched_jvm(launcher)
        assert os.getpgid(jvm) != os.getpgid(launcher.pid), "engine shares the terminal's process group"
        os.killpg(launcher.pid, signal.SIGINT)
        assert launcher.wait(STOP_WITHIN_SECS) == 0
        assert wait_until(lambda: not pid_alive(jvm), 2), "engine JVM outlived launch_router"
    finally:
        if launcher.poll() is None:
            launcher.kill()


TRAINING_LOOP_SCRIPT = textwrap.dedent("""
    import sys, time
    from vllm_router import Router, RouterArgs
    handle = Router.from_args(RouterArgs(port=0, prometheus_port=0)).launch()
    print(handle.url, flush=True)
    try:
        time.sleep(120)  # a training step
    except KeyboardInterrupt:
        print("interrupted", flush=True)  # the loop decides to go on, router and all
    sys.stdin.readline()
    handle.shutdown()
""")


def test_ctrl_c_caught_by_a_training_loop_keeps_its_router(engine_jar):
    trainer = subprocess.Popen([sys.executable, "-c", TRAINING_LOOP_SCRIPT], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, start_new_session=True)
    try:
        url = trainer.stdout.readline().decode().strip()
        assert url.startswith("http://"), url
        assert http("GET", url + "/health")[0] == 200
        jvm = [pid for pid in child_pids(trainer.pid) if _is_engine_jvm(pid)][0]
        assert os.getpgid(jvm) != os.getpgid(trainer.pid), "engine shares the terminal's process group"
        os.killpg(trainer.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
        assert trainer.stdout.readline().strip() == b"interrupted"
        time.sleep(1.0)  # the engine would drain and exit within this if the signal had reached it
        assert pid_alive(jvm), "the engine stopped although the training loop caught the interrupt"
        assert http("GET", url + "/health")[0] == 200
        trainer.stdin.close()
        assert trainer.wait(STOP_WITHIN_SECS) == 0
        assert wait_until(lambda: not pid_alive(jvm), 5)
    finally:
        if trainer.poll() is None:
            trainer.kill()


def test_sigkill_of_parent_leaves_no_jvm(engine_jar, tmp_path):
    port = free_port()
    with open(tmp_path / "router.log", "wb") as log:
        launcher = start_launcher(port, log)
    wait_healthy(f"http://127.0.0.1:{port}", alive=lambda: launcher.poll() is None)
    jvm = launched_jvm(launcher)
    launcher.kill()
    launcher.wait()
    try:
        assert wait_until(lambda: not pid_alive(jvm), 5), "engine JVM orphaned after SIGKILL of its parent"
    finally:
        if pid_alive(jvm):
            os.kill(jvm, signal.SIGKILL)


FORKING_SCRIPT = textwrap.dedent("""
    import os, sys, time
    from vllm_router import Router, RouterArgs
    handle = Router.from_args(RouterArgs(port=0, prometheus_port=0)).launch()
    if os.fork() == 0:
        time.sleep(120)  # a forked worker that outlives its parent
        os._exit(0)
    print("ready", flush=True)
    time.sleep(120)
""")


def _is_engine_jvm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"org.vllmrouter.host.Main" in f.read()
    except OSError:
        return False


def test_forked_child_does_not_keep_the_engine_alive(engine_jar):
    """A child forked without exec inherits the lifeline's write end unless the bridge drops it."""
    parent = subprocess.Popen([sys.executable, "-c", FORKING_SCRIPT], stdout=subprocess.PIPE)
    forked = []
    try:
        assert parent.stdout.readline().strip() == b"ready"
        children = child_pids(parent.pid)
        jvms = [pid for pid in children if _is_engine_jvm(pid)]
        forked = [pid for pid in children if pid not in jvms]
        assert len(jvms) == 1 and forked, f"expected the engine and one forked child, got {children}"
        jvm = jvms[0]
        parent.kill()
        parent.wait()
        assert wait_until(lambda: not pid_alive(jvm), STOP_WITHIN_SECS), \
            "engine JVM kept alive by a forked child holding its lifeline"
    finally:
        for pid in forked:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()


def test_engine_logs_reach_redirected_stderr(engine_jar, tmp_path):
    port = free_port()
    log_path = tmp_path / "router.log"
    with open(log_path, "wb") as log:
        launcher = start_launcher(port, log)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", alive=lambda: launcher.poll() is None)
        launcher.terminate()
        launcher.wait(STOP_WITHIN_SECS)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    text = log_path.read_text(errors="replace")
    assert str(port) in text, f"engine log lines missing from the redirected stderr:\n{text}"


def test_engine_death_is_nonzero_exit(engine_jar, tmp_path):
    port = free_port()
    with open(tmp_path / "router.log", "wb") as log:
        launcher = start_launcher(port, log)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", alive=lambda: launcher.poll() is None)
        os.kill(launched_jvm(launcher), signal.SIGKILL)
        assert launcher.wait(STOP_WITHIN_SECS) != 0
    finally:
        if launcher.poll() is None:
            launcher.kill()


def test_startup_fails_fast_when_java_is_unusable(monkeypatch, tmp_path):
    monkeypatch.setenv("VLLM_ROUTER_JAVA", str(tmp_path / "no-java"))
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="VLLM_ROUTER_JAVA"):
        Router.from_args(RouterArgs(port=0)).launch()
    assert time.monotonic() - started < 5


def test_module_cli_reports_bad_config_and_exits_nonzero(engine_jar):
    completed = subprocess.run(
        [sys.executable, "-m", "vllm_router.launch_router", "--port", "0", "--prometheus-port", "0",
         "--worker-urls", "ftp://w:1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
    )
    assert completed.returncode == 1
    assert "Error starting router: Configuration validation failed" in completed.stderr
    assert completed.stdout == ""


def _ignoring(signum):
    """A preexec_fn: start the command with `signum` ignored, as a shell without job control
    starts a background command with SIGINT."""
    return lambda: signal.signal(signum, signal.SIG_IGN)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_module_cli_prints_router_and_dashboard_urls_once_ready(engine_jar, tmp_path, stop_signal):
    """The command becomes the engine (exec): one process, drained by the signal whatever the
    command inherited for it, and exiting 0, as upstream's command does."""
    with open(tmp_path / "router.log", "wb") as log:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "vllm_router.launch_router", "--host", "0.0.0.0", "--port", "0",
             "--prometheus-port", "0", "--admin-api-key", "cli-key"],
            stdout=subprocess.PIPE, stderr=log, text=True, preexec_fn=_ignoring(stop_signal))
    try:
        # readline blocks; a broken launcher that prints nothing ends (and closes stdout) or is
        # killed by the timer, so the test cannot hang.
        killer = threading.Timer(60, launcher.kill)
        killer.start()
        router_line = launcher.stdout.readline()
        dashboard_line = launcher.stdout.readline()
        killer.cancel()
        assert router_line.startswith("Router: http://127.0.0.1:"), router_line
        url = router_line.split(" ", 1)[1].strip()
        assert dashboard_line == f"Dashboard: {url}/dashboard (asks for the admin API key)\n"
        assert http("GET", url + "/health")[0] == 200
        status, headers, page = http("GET", url + "/dashboard")
        assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
        assert b"<title>vLLM router status</title>" in page
        with open(f"/proc/{launcher.pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        assert argv[0] == b"vllm::router" and b"org.vllmrouter.host.Main" in argv, argv
        assert not any(b"cli-key" in arg for arg in argv), "the admin API key is in the engine's argv"
        assert child_pids(launcher.pid) == [], "the command kept a child process"
        launcher.send_signal(stop_signal)
        assert launcher.wait(STOP_WITHIN_SECS) == 0
        assert launcher.stdout.read() == "", "nothing else on stdout"
        assert "Received terminate signal, draining in-flight requests" in \
            (tmp_path / "router.log").read_text(errors="replace")
    finally:
        if launcher.poll() is None:
            launcher.kill()
        launcher.stdout.close()


def test_console_script_help():
    completed = subprocess.run(["vllm-router", "--help"], stdout=subprocess.PIPE, text=True, timeout=30)
    assert completed.returncode == 0
    assert "--policy" in completed.stdout and "sticky_least_loaded" in completed.stdout
