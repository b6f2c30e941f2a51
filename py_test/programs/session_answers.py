"""The handle's session answers with every key's and value's type: `sessions()` and
`session_stats()` after two sessions were routed and one finished, over the worker URLs given as
arguments. Under `python` they come from the process bridge (JSON over HTTP), under `vllm-router
python` from the engine in the same JVM; the two reports must be equal (py_test/test_python_host.py)."""

import json
import sys
import urllib.request

from vllm_router import Router, RouterArgs


def typed(value):
    """`value` with the type of every part: what a caller could tell apart, order included."""
    if isinstance(value, dict):
        return {"dict": [[type(key).__name__, key, typed(item)] for key, item in value.items()]}
    return [type(value).__name__, value]


def chat(router_url, session_id):
    body = json.dumps({"model": "mock", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    request = urllib.request.Request(router_url + "/v1/chat/completions", data=body.encode(), method="POST",
                                     headers={"Content-Type": "application/json", "X-Session-ID": session_id})
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()


def main():
    args = RouterArgs(worker_urls=sys.argv[1:], port=0, prometheus_port=0, policy="sticky_least_loaded",
                      log_level="warning")
    with Router.from_args(args).launch() as router:
        chat(router.url, "first")
        chat(router.url, "second")
        router.finish_session("first")
        router.finish_session("never-routed")
        print(json.dumps({"sessions": typed(router.sessions()), "session_stats": typed(router.session_stats())},
                         indent=1))


if __name__ == "__main__":
    main()
