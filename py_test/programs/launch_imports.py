"""The modules a program's `from vllm_router import Router, RouterArgs` and `Router.launch()` add
to `sys.modules`, over the worker URLs given as arguments, printed as a JSON list
(py_test/test_python_host.py runs it under `vllm-router python`)."""

import json
import sys

before = set(sys.modules)

from vllm_router import Router, RouterArgs  # noqa: E402

args = RouterArgs(worker_urls=sys.argv[1:], port=0, prometheus_port=0, log_level="warning")
with Router.from_args(args).launch():
    imported = sorted(set(sys.modules) - before)
print(json.dumps(imported))
