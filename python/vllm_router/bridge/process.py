"""CPython bridge: the engine runs in a child JVM.

Protocol (see docs/architecture.md, "The process bridge"):
1. `java <jvm options> -cp <engine jar> org.vllmrouter.host.Main serve --config -`
   (`engine_command`).
2. The config JSON and a newline go to the child's stdin, which then stays open: it is the
   lifeline. EOF (this process died, even by SIGKILL) makes the engine drain and exit.
3. The child prints exactly one JSON line on stdout: `{"event":"ready","url":...,
   "client_url":...,"port":...,"metrics_port":...}` or `{"event":"error","kind":...,"message":...}`
   followed by a non-zero exit (read by `engine_command.read_event`).
4. Logs go to stderr, which the child inherits, so a caller that redirected fd 2 captures them.

The child runs in a session (and so a process group) of its own, as PySpark's gateway JVM does: a
terminal's Ctrl-C, which goes to the foreground process group, reaches only this process, which
decides. A training loop that catches KeyboardInterrupt keeps its router; `launch_router` turns
SIGINT/SIGTERM into a drain (SIGTERM to the child); and if this process ends, the lifeline stops
the child.

`exec_engine` is the other way in, for the `vllm-router` command: the engine takes this
process's place and reports as upstream's command does.
"""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Optional

from . import EngineStartupError, class_cache
from .engine_command import engine_command, engine_jar, error_of, jvm_options, read_event
from .java_runtime import find_java

SERVE_FROM_STDIN = ["serve", "--config", "-"]
# How often the wait for the ready line checks that the child is still alive.
CHILD_POLL_INTERVAL_SECS = 0.02
# Extra time for a graceful drain beyond what the engine bounds itself to.
DEFAULT_STOP_TIMEOUT_SECS = 30.0
ADMIN_HTTP_TIMEOUT_SECS = 10.0

# Write ends of the lifelines this process holds. A child made by fork() without exec (a
# multiprocessing "fork" worker, say) would inherit them and keep the engine alive after this
# process died, so each forked child points its copies at /dev/null straight away. The fd is
# replaced rather than closed: the child's copy of the file object still refers to that number
# and would otherwise close an unrelated fd that reused it.
_lifeline_fds: set = set()
_lifeline_fds_lock = threading.Lock()


def _release_inherited_lifelines() -> None:
    if not _lifeline_fds:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in _lifeline_fds:
            try:
                os.dup2(devnull, fd)
            except OSError:
                pass
    finally:
        os.close(devnull)
    _lifeline_fds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_release_inherited_lifelines)


def _hold_lifeline(fd: int) -> None:
    with _lifeline_fds_lock:
        _lifeline_fds.add(fd)


def _drop_lifeline(fd: int) -> None:
    with _lifeline_fds_lock:
        _lifeline_fds.discard(fd)


class EngineProcess:
    """A running engine JVM. Create with `start_engine`."""

    def __init__(self, process: subprocess.Popen, ready: dict, config: dict):
        self._process = process
        self.port: int = ready["port"]
        self.metrics_port: Optional[int] = ready.get("metrics_port")
        # The URL a client can connect to (a wildcard bind address becomes loopback): the engine's rule.
        self.url: str = ready["client_url"]
        self.pid: int = process.pid
        self.admin_api_key: Optional[str] = config.get("admin_api_key")
        self._stop_requested = False

    def finish_session(self, session_id: str) -> None:
        """`POST /finish_session?session_id=...`; an unknown id is a no-op."""
        from urllib.parse import quote

        self._admin_request("POST", "/finish_session?session_id=" + quote(session_id, safe=""), b"")

    def session_stats(self) -> dict:
        """The router's `GET /sessions` answer."""
        return json.loads(self._admin_request("GET", "/sessions"))

    def _admin_request(self, method: str, path: str, body: Optional[bytes] = None) -> bytes:
        # Imported here: urllib.request is a costly import, and the blocking launch_router path
        # never needs it.
        import urllib.error
        import urllib.request

        request = urllib.request.Request(self.url + path, data=body, method=method)
        if self.admin_api_key:
            request.add_header("Authorization", f"Bearer {self.admin_api_key}")
        try:
            with urllib.request.urlopen(request, timeout=ADMIN_HTTP_TIMEOUT_SECS) as response:
                return response.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", errors="replace")
            raise RuntimeError(f"{method} {path} failed with HTTP {e.code}: {detail}") from None
        except urllib.error.URLError as e:
            raise RuntimeError(f"{method} {path} failed: {e.reason}") from None

    def is_running(self) -> bool:
        return self._process.poll() is None

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Ask the engine to stop accepting and drain (SIGTERM); returns at once."""
        self._stop_requested = True
        if self._process.poll() is None:
            try:
                self._process.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass

    def wait(self, timeout: Optional[float] = None) -> int:
        """Block until the engine exits; its exit status (negative: killed by that signal)."""
        return self._process.wait(timeout)

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT_SECS) -> int:
        """Graceful drain, then SIGKILL if the engine is still running after `timeout`."""
        self.request_stop()
        try:
            status = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            status = self._process.wait()
        self._close_lifeline()
        return status

    def _close_lifeline(self) -> None:
        _close_stdin(self._process)


def start_engine(config_json: str, startup_timeout: Optional[float] = None) -> EngineProcess:
    """Start the engine with this RouterConfig JSON and wait for its ready line.

    Raises EngineConfigError (a ValueError) when the engine rejects the configuration,
    EngineStartupError (a RuntimeError) on any other failure, including the child dying first
    and `startup_timeout` seconds passing without a ready line.
    """
    config = json.loads(config_json)
    java, command = _engine_command(SERVE_FROM_STDIN)
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # inherited: engine logs land wherever this process's fd 2 goes
            start_new_session=True,
        )
    except OSError as e:
        raise EngineStartupError(f"Could not run {java.executable}: {e}") from e
    _hold_lifeline(process.stdin.fileno())

    try:
        process.stdin.write(config_json.encode("utf-8") + b"\n")
        process.stdin.flush()
    except BrokenPipeError:
        pass  # the child died at once; the wait below reports how

    events: "queue.Queue[dict]" = queue.Queue()
    threading.Thread(
        target=_read_engine_stdout, args=(process.stdout, events), name="vllm-router-engine-stdout",
        daemon=True,
    ).start()

    try:
        ready = _wait_for_ready_line(process, events, startup_timeout)
    except BaseException:
        _terminate(process)
        raise
    return EngineProcess(process, ready, config)


def exec_engine(config_json: str, process_title: str) -> None:
    """Replace this process with the engine JVM (exec), configured by `config_json`.

    Returns only by raising EngineStartupError (no usable Java, exec refused). The engine reports
    as upstream's launcher does (`serve --report upstream`) and has no lifeline: it is the process
    that a supervisor or a terminal signals. The configuration reaches it in a memfd it inherits,
    opened as /dev/fd/N, rather than in its argv, which other users see (it may hold API keys).
    `process_title` becomes argv[0], the name `ps` shows first, as setproctitle names upstream's.
    """
    config_fd = os.memfd_create("vllm-router-config", 0)  # without MFD_CLOEXEC: the JVM inherits it
    try:
        data = config_json.encode("utf-8")
        while data:
            data = data[os.write(config_fd, data):]
        java, command = _engine_command(
            ["serve", "--config", f"/dev/fd/{config_fd}", "--report", "upstream"])
        # exec keeps ignored signals ignored. CPython ignores SIGPIPE and SIGXFSZ (subprocess
        # restores them for a child too), and a shell without job control starts a background
        # command with SIGINT ignored: launch_router drains on SIGINT/SIGTERM whatever it
        # inherited, so the engine must see them too.
        restore = {sig: signal.signal(sig, signal.SIG_DFL)
                   for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM)}
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execv(java.executable, [process_title, *command[1:]])
        except OSError as e:
            for sig, handler in restore.items():
                signal.signal(sig, handler)
            raise EngineStartupError(f"Could not run {java.executable}: {e}") from e
    finally:
        os.close(config_fd)


def _engine_command(arguments):
    """The Java that runs the engine, and the command line that runs it with `arguments` (using the
    class cache when there is one)."""
    java = find_java()
    jar = engine_jar()
    cache_options = class_cache.jvm_options(java, jar, jvm_options())
    return java, engine_command(java, jar, arguments, cache_options)


def _read_engine_stdout(stdout, events: "queue.Queue[dict]") -> None:
    """Deliver the protocol line; pass any other stdout output through to ours."""
    event = read_event(stdout, echo=_echo)
    if event is not None:
        events.put(event)
    for raw in stdout:
        _echo(raw)
    stdout.close()


def _echo(raw: bytes) -> None:
    try:
        sys.stdout.write(raw.decode("utf-8", errors="replace"))
        sys.stdout.flush()
    except (OSError, ValueError):
        pass  # our stdout is gone; keep draining so the child never blocks on a full pipe


def _wait_for_ready_line(process: subprocess.Popen, events: "queue.Queue[dict]",
                         startup_timeout: Optional[float]) -> dict:
    """Wait for the ready line, failing fast if the child exits first (as PySpark's gateway)."""
    deadline = None if startup_timeout is None else time.monotonic() + startup_timeout
    while True:
        try:
            event = events.get(timeout=CHILD_POLL_INTERVAL_SECS)
        except queue.Empty:
            status = process.poll()
            if status is not None:
                # The reader may still hold the child's last line; give it a moment.
                try:
                    event = events.get(timeout=1.0)
                except queue.Empty:
                    raise EngineStartupError(
                        f"Router engine exited with status {status} before it was ready "
                        "(its log is on stderr)"
                    ) from None
            elif deadline is not None and time.monotonic() > deadline:
                raise EngineStartupError(
                    f"Router engine was not ready within {startup_timeout:g} s"
                ) from None
            else:
                continue
        if event["event"] == "error":
            raise error_of(event)
        return event


def _terminate(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    _close_stdin(process)


def _close_stdin(process: subprocess.Popen) -> None:
    if process.stdin and not process.stdin.closed:
        _drop_lifeline(process.stdin.fileno())
        try:
            process.stdin.close()
        except OSError:
            pass
