"""The `Router` class: upstream's blocking `start()`, plus `launch()` for training loops.

`Router(**kwargs)` takes the keyword arguments of upstream's `vllm_router_rs.Router`;
`Router.from_args(args)` maps a RouterArgs onto them exactly as upstream does.

`vllm-router python` programs import this module in an interpreted GraalPy, where each module
costs, so what only `start()` needs (`signal`, `threading`) is imported there, and this module's
annotations are not evaluated.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

# PolicyType and policy_from_str are defined beside the mapping the GraalPy launcher shares
# without importing this module; they are imported here because upstream's users import them
# from `vllm_router.router`.
from .engine_config import (  # noqa: F401
    PolicyType,
    native_router_kwargs,
    policy_from_str,
    router_args_from_native_kwargs,
)
from .engine_control import ControlCallFailed, EngineControl  # noqa: F401
from .router_args import RouterArgs, router_args_to_config_json

# Seconds that `start()`/`launch()` wait for the engine's ready line beyond the worker start-up
# timeout (the engine itself waits up to worker_startup_timeout_secs for workers).
_STARTUP_GRACE_SECS = 60.0


def _bridge():
    """The bridge for this interpreter: the same JVM on GraalPy, a child JVM on CPython."""
    if sys.implementation.name == "graalpy":
        from .bridge import graal

        return graal
    from .bridge import process

    return process


class Router:
    """A router configured with upstream's native-Router keyword arguments.

    `start()` serves until SIGTERM/SIGINT and then returns, as upstream. `launch()` returns a
    `RouterHandle` at once, for programs that keep working while the router runs.
    """

    def __init__(self, router: Router | None = None, **kwargs):
        if router is not None:
            self._args: RouterArgs = router._args
            return
        self._args = router_args_from_native_kwargs(kwargs)

    @staticmethod
    def from_args(args: RouterArgs) -> Router:
        """The Router for a RouterArgs; like upstream, but the passed RouterArgs is not modified."""
        return Router(**native_router_kwargs(args))

    @property
    def config_json(self) -> str:
        """The RouterConfig JSON this router hands to the engine."""
        return router_args_to_config_json(self._args)

    def start(self, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve until SIGTERM/SIGINT (forwarded to the engine), then return after the drain.

        `on_ready`, if given, is called with the router's URL once it serves. Raises ValueError
        if the engine rejects the configuration, RuntimeError if it cannot start or stops on its
        own with a failure status.
        """
        engine_box = []

        def forward_stop(signum, frame):
            if engine_box:
                engine_box[0].request_stop()
            else:
                # Still waiting for the ready line (workers may take minutes): abandon start-up;
                # the bridge stops the half-started engine.
                raise _StopBeforeReady()

        previous = _install_handlers(forward_stop)
        try:
            engine = _bridge().start_engine(self.config_json, self._startup_timeout())
            engine_box.append(engine)
            if on_ready is not None:
                on_ready(engine.url)
            status = engine.wait()
        except _StopBeforeReady:
            return
        finally:
            _restore_handlers(previous)
        if status != 0 and not (engine.stop_requested and _is_stop_status(status)):
            raise RuntimeError(f"Router engine exited with status {status}")

    def launch(self) -> RouterHandle:
        """Start serving in the background and return a handle once the router is ready.

        Keep the handle while the router should run: it owns the engine's lifeline, so
        dropping it (or this process ending) stops the router too.
        """
        engine = _bridge().start_engine(self.config_json, self._startup_timeout())
        return RouterHandle(engine)

    def _startup_timeout(self) -> float:
        return self._args.worker_startup_timeout_secs + _STARTUP_GRACE_SECS


class _StopBeforeReady(Exception):
    """SIGTERM/SIGINT arrived before the engine was ready."""


def _install_handlers(handler):
    """Install `handler` for SIGTERM/SIGINT; outside the main thread signals cannot be caught,
    and the default action (this process dies, the lifeline closes) still stops the engine."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}


def _restore_handlers(previous) -> None:
    import signal

    if previous:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _is_stop_status(status: int) -> bool:
    """Exit statuses of a JVM that stopped because we asked it to."""
    import signal

    stop_signals = (signal.SIGTERM, signal.SIGINT)
    return status in [-s for s in stop_signals] + [128 + s for s in stop_signals]


class RouterHandle(EngineControl):
    """A running router: its URL, session control, the engine-control calls a trainer makes
    between steps (pause, resume, weight sync... from `EngineControl`, each relayed to every
    worker), and shutdown. Also a context manager."""

    def __init__(self, engine):
        super().__init__(engine.url, engine.admin_api_key)
        self._engine = engine
        self.port: int = engine.port
        self.metrics_port: int | None = engine.metrics_port
        self.url: str = engine.url

    def finish_session(self, session_id: str) -> None:
        """Release a session (its worker slot frees up); unknown ids are a no-op."""
        self._engine.finish_session(session_id)

    def sessions(self) -> dict[str, int]:
        """Active sessions per worker URL (the router's `GET /sessions`)."""
        return self.session_stats()["active_by_worker"]

    def session_stats(self) -> dict:
        """Session counters: `active_by_worker`, `active_sessions`, `started`, `released`,
        `expired`, `evicted` (dropped to make room at `max_sessions`), `rebound`."""
        return self._engine.session_stats()

    def is_running(self) -> bool:
        return self._engine.is_running()

    def wait(self, timeout: float | None = None) -> int:
        """Block until the engine exits; returns its exit status."""
        return self._engine.wait(timeout)

    def shutdown(self, timeout: float = 30.0) -> None:
        """Stop accepting, drain in-flight requests, stop the engine. Idempotent."""
        self._engine.stop(timeout)

    def __enter__(self) -> RouterHandle:
        return self

    def __exit__(self, *exc_info) -> None:
        self.shutdown()
