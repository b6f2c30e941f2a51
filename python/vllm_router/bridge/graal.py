"""The GraalPy bridge: Python running inside the router's JVM drives the engine in-process.

`Router.launch()` / `Router.start()` use it when the interpreter is GraalPy (`start_engine`): the
engine starts in this JVM (`InProcessEngines.start(RouterConfig.fromJson(json))`) and session
calls are direct Java calls instead of HTTP. `vllm-router python SCRIPT` runs a whole program this
way. (The `vllm-router launch` / `print-config` launcher only parses its argv under GraalPy, with
`vllm_router.engine_config.config_json_from_argv`.)

`start_engine` returns the engine handle every bridge returns (see `bridge/__init__.py`), plus
`finish_session(id)` and `session_stats()` as direct calls (see docs/architecture.md, 'The process
bridge'). An engine still running when the JVM shuts down (the program ended, or SIGTERM) drains
its in-flight requests first, as the process bridge's child JVM does when its lifeline closes.
`java_executable()` and `class_path()` say how to start another JVM with the engine's classes.
`java` is imported inside the functions that need it, so this module imports on any runtime.
"""

from __future__ import annotations

import json
import threading

from vllm_router.bridge import EngineConfigError, EngineStartupError

_IN_PROCESS_ENGINES = "org.vllmrouter.host.InProcessEngines"
_ROUTER_CONFIG = "org.vllmrouter.core.config.RouterConfig"
_CONFIG_EXCEPTION = "org.vllmrouter.core.config.ConfigException"
_START_EXCEPTION = "org.vllmrouter.server.RouterStartException"
_HOST_JVM = "org.vllmrouter.host.HostJvm"
_PYTHON_DICTS = "org.vllmrouter.host.PythonDicts"


def java_executable() -> str:
    """The `java` that runs this JVM."""
    import java

    return str(java.type(_HOST_JVM).javaExecutable())


def class_path() -> str:
    """This JVM's class path: the launcher's jars, the engine's classes among them."""
    import java

    return str(java.type(_HOST_JVM).classPath())


def start_engine(config_json: str, startup_timeout: float | None = None) -> InProcessEngine:
    """Start the engine in this JVM; returns once it listens.

    `startup_timeout` is accepted for the bridge interface: `RouterServer.start` returns when the
    engine is bound, there is no child process to wait for.
    """
    import java

    try:
        config = java.type(_ROUTER_CONFIG).fromJson(config_json)
        engines = java.type(_IN_PROCESS_ENGINES)
        server = engines.start(config)
    except java.type(_CONFIG_EXCEPTION) as e:
        raise EngineConfigError(str(e.getMessage())) from None
    except java.type(_START_EXCEPTION) as e:
        raise EngineStartupError(str(e.getMessage())) from None
    try:
        return InProcessEngine(engines, server, java.type(_PYTHON_DICTS), json.loads(config_json).get("admin_api_key"))
    except BaseException:
        # A stop signal that arrived while the engine started (Router.start raises out of its
        # handler): the engine was never handed out, so it stops here, as the process bridge
        # stops a half-started child.
        engines.stop(server)
        raise


class InProcessEngine:
    """A `RouterServer` running in this JVM."""

    def __init__(self, engines, server, python_dicts, admin_api_key: str | None):
        self._engines = engines
        self._server = server
        self._python_dicts = python_dicts
        # Control calls (pause, weight sync) go through the router's own HTTP API, which fans them out.
        self.admin_api_key = admin_api_key
        self.port: int = int(server.port())
        self.metrics_port: int = int(server.metricsPort())
        self.url: str = str(server.url())
        self.stop_requested = False
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()

    def finish_session(self, session_id: str) -> None:
        """Release a session now, as `POST /finish_session`; an unknown id is a no-op."""
        self._server.finishSession(str(session_id))

    def session_stats(self) -> dict:
        """The router's `GET /sessions` answer, from the map its JSON is written from, made a dict
        in Java: the process bridge's `json.loads` result, without the text."""
        return self._python_dicts.of(self._server.sessionsAnswer(), dict)

    def is_running(self) -> bool:
        return not self._stopped.is_set()

    def request_stop(self) -> None:
        """Begin the graceful drain on a background thread and return at once."""
        with self._stop_lock:
            if self.stop_requested:
                return
            self.stop_requested = True
        threading.Thread(target=self._close, name="vllm-router-stop", daemon=True).start()

    def wait(self, timeout: float | None = None) -> int:
        """Block until the engine has stopped; returns its status, 0. TimeoutError on timeout."""
        if not self._stopped.wait(timeout):
            raise TimeoutError(f"router engine still running after {timeout} s")
        return 0

    def stop(self, timeout: float | None = None) -> int:
        """Drain and stop; `RouterServer.close` bounds the drain itself."""
        self.request_stop()
        return self.wait(timeout)

    def _close(self) -> None:
        try:
            self._engines.stop(self._server)
        finally:
            self._stopped.set()
