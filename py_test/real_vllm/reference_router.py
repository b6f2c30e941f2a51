"""The Rust vLLM router 0.1.17 (upstream's, the reference peer) started from its own venv, with the
same launch_router arguments our router takes, for the real-vLLM tests and the policy table.

Its venv is looked for at $VLLM_ROUTER_REFERENCE or under the user's cache directory
(vllm-router/rust-router-0.1.17); `not_ready_reason()` says in one line why it cannot run.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # py_test's `helpers`

from helpers import free_port, http  # noqa: E402

VERSION = "0.1.17"
START_TIMEOUT_SECS = 60


def venv() -> Path:
    explicit = os.environ.get("VLLM_ROUTER_REFERENCE")
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "vllm-router" / f"rust-router-{VERSION}"


def not_ready_reason() -> str:
    python = venv() / "bin" / "python"
    return "" if python.exists() else f"the Rust router {VERSION} is not installed ({python} is missing)"


class ReferenceRouter:
    """`python -m vllm_router.launch_router ARGS` from the reference venv, in its own process group;
    a context manager that waits for /health and stops the group on exit."""

    def __init__(self, args: List[str]):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.metrics_port = free_port()
        self._args = ["--host", "127.0.0.1", "--port", str(self.port), "--prometheus-port", str(self.metrics_port),
                      "--worker-startup-check-interval", "1", "--log-level", "warning"] + args
        self._process: Optional[subprocess.Popen] = None
        self.log = Path(tempfile.mkstemp(prefix="rust-router-", suffix=".log")[1])

    def __enter__(self) -> "ReferenceRouter":
        with open(self.log, "wb") as out:
            self._process = subprocess.Popen([str(venv() / "bin" / "python"), "-m", "vllm_router.launch_router"]
                                             + self._args, stdout=out, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_SECS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"Rust router {VERSION} exited with {self._process.returncode}; log {self.log}")
            try:
                if http("GET", self.url + "/health", timeout=1.0)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        self.__exit__(None, None, None)
        raise RuntimeError(f"Rust router {VERSION} not healthy within {START_TIMEOUT_SECS} s; log {self.log}")

    def __exit__(self, *exc) -> None:
        if self._process is None or self._process.poll() is not None:
            return
        os.killpg(self._process.pid, signal.SIGTERM)
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(5)
