"""How Python reaches the Java engine, without JNI.

Two bridges share one shape, so `vllm_router.router` does not care which one runs:

* `process` (CPython): the engine in a child JVM, configured over stdin, which also serves as
  the lifeline; or, for the `vllm-router` command, in this process's place (`exec_engine`). `engine_command` builds that JVM's command line and reads its ready line;
  `class_cache` makes the JVM start faster; `java_runtime` finds the Java that runs it.
* `graal` (GraalPy): the engine in the same JVM, owned by the launcher module
  (`vllm-router python SCRIPT` runs a program there).

Each bridge module provides `start_engine(config_json: str, startup_timeout: Optional[float])`
returning an engine handle with `url`, `port`, `metrics_port`, `wait(timeout=None) -> int`
(blocks until the engine has stopped, returns its exit status), `request_stop()` (begin the
graceful drain, returns at once), `stop(timeout) -> int` (drain, then force), `is_running()`,
`stop_requested`, `finish_session(session_id)` and `session_stats() -> dict` (shaped like the
router's `GET /sessions` answer: `active_by_worker`, `active_sessions`, `started`, `released`,
`expired`, `evicted`, `rebound`). `start_engine` raises `EngineConfigError` when the engine rejects the
configuration and `EngineStartupError` for any other start-up failure.
"""


class EngineConfigError(ValueError):
    """The engine rejected the configuration; the message is the engine's own text."""


class EngineStartupError(RuntimeError):
    """The engine could not start (no Java, cannot bind, died early, ...)."""


