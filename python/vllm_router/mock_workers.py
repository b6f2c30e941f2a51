"""Mock vLLM workers and the mock module's multi-turn workload driver, both from the engine jar.

The demo runs them to compare policies; the class-cache builder runs them to train the engine's
JIT on the proxy path; the tests run them as workers.
"""

import subprocess
import threading
from typing import List, Optional, Sequence

from .bridge.engine_command import engine_class_path, engine_command, read_event
from .bridge.java_runtime import JavaRuntime, find_java

WORKLOAD_MAIN_CLASS = "org.vllmrouter.mock.WorkloadMain"


class MockWorkers:
    """Mock vLLM workers in one JVM (the engine jar's `mock-worker` command): `count` of them on
    ephemeral ports, or one on each of `ports` (a worker's URL is its identity to hashing
    policies, so a comparison across runs keeps them). `java` and `class_path` default to the
    ones the router would use."""

    def __init__(self, count: int, knobs: Optional[dict] = None, java: Optional[JavaRuntime] = None,
                 class_path: Optional[str] = None, ports: Optional[Sequence[int]] = None):
        knob_args = [f"--{name}={value}" for name, value in (knobs or {}).items()]
        where = ["--ports", ",".join(map(str, ports))] if ports else ["--count", str(count)]
        command = engine_command(java or find_java(), class_path or engine_class_path(),
                                 ["mock-worker", *where, "--lifeline", *knob_args])
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        ready = read_event(self._process.stdout)
        if ready is None or ready["event"] != "ready":
            self.close()
            reason = ready.get("message") if ready else "no ready line before the process ended"
            raise RuntimeError(f"mock workers did not start: {reason}")
        self.urls: List[str] = ready["urls"]
        # Keep draining stdout so the workers never block on a full pipe.
        threading.Thread(target=self._process.stdout.read, daemon=True).start()

    def close(self) -> None:
        self._process.stdin.close()  # lifeline: EOF stops the workers
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def __enter__(self) -> "MockWorkers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def workload_command(router_url: str, arguments: Sequence[str], java: Optional[JavaRuntime] = None,
                     class_path: Optional[str] = None) -> List[str]:
    """The command that runs the workload driver (`WorkloadMain --router URL ARGS...`)."""
    return engine_command(java or find_java(), class_path or engine_class_path(),
                          ["--router", router_url, *arguments], main_class=WORKLOAD_MAIN_CLASS)
