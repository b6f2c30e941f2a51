"""Where a `vllm-router python` program's first routed request spends its seconds, phase by phase:
spawn to the program's first line (the JVM, GraalPy's context and `site`), the program's own
`import urllib.request`, the package's imports, building the arguments, `launch()` over the given
workers, the first routed response and a second one. Prints each phase's seconds on one line.

    SPAWN_NS=$(date +%s%N) vllm-router python java/host/scripts/python-start-phases.py WORKER_URL...

SPAWN_NS is the wall clock in ns just before the command starts (the shell's, as above); the same
program runs under CPython (PYTHONPATH=python python3 ...) with the process bridge.
"""
import os
import sys
import time

marks = [("to the first line", time.time_ns())]
import urllib.request  # noqa: E402  (timed: the program's own standard-library import)

marks.append(("import urllib.request", time.time_ns()))
from vllm_router import Router, RouterArgs  # noqa: E402

marks.append(("import vllm_router", time.time_ns()))
args = RouterArgs(worker_urls=sys.argv[1:], port=0, prometheus_port=0, worker_startup_check_interval=1)
router = Router.from_args(args)
marks.append(("arguments", time.time_ns()))
with router.launch() as handle:
    marks.append(("launch()", time.time_ns()))
    for name in ("first response", "second response"):
        with urllib.request.urlopen(handle.url + "/v1/models", timeout=60) as response:
            assert response.status == 200
        marks.append((name, time.time_ns()))

spawn = int(os.environ["SPAWN_NS"])
phases = []
previous = spawn
for name, at in marks:
    phases.append(f"{name} {(at - previous) / 1e9:.3f}")
    previous = at
first_response = dict(marks)["first response"]
print("; ".join(phases) + f"; spawn to the first response {(first_response - spawn) / 1e9:.3f}")
