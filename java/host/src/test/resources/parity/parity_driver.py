"""Parses every argv of the parity corpus the way its "_comment" specifies, on whichever Python
runs this (CPython or GraalPy), and returns the outcomes as JSON.

GraalPyParityTest evaluates this file inside the launcher's GraalPy context and also runs it on
python3 (`python3 parity_driver.py CORPUS OUT`), so both runtimes execute the same procedure.
"""

import argparse
import contextlib
import io
import json
import os
import platform
import sys

# argparse wraps usage and help text at the terminal width; fix it so the outputs compare.
os.environ["COLUMNS"] = "80"

from vllm_router.engine_config import config_json_for, config_json_from_argv
from vllm_router.router_args import RouterArgs


def config_json(argv, use_router_prefix):
    if use_router_prefix:
        parser = argparse.ArgumentParser(prog="vllm-router")
        RouterArgs.add_cli_args(parser, use_router_prefix=True)
        return config_json_for(RouterArgs.from_cli_args(parser.parse_args(argv), use_router_prefix=True))
    return config_json_from_argv(argv)


def outcome(argv, use_router_prefix):
    out, err = io.StringIO(), io.StringIO()
    result = {"exit_code": 0, "config": None, "error": None}
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result["config"] = json.loads(config_json(list(argv), use_router_prefix))
    except SystemExit as e:
        result["exit_code"] = e.code
        if e.code:
            lines = [line for line in err.getvalue().splitlines() if line.strip()]
            result["error"] = {"kind": "SystemExit", "message": lines[-1] if lines else ""}
    except Exception as e:
        result["exit_code"] = 1
        result["error"] = {"kind": type(e).__name__, "message": str(e)}
    result["stdout"] = out.getvalue()
    result["stderr"] = err.getvalue()
    return result


def run_corpus(corpus_json):
    corpus = json.loads(corpus_json)
    results = {e["id"]: outcome(e["argv"], e.get("prefix", False)) for e in corpus["entries"]}
    runtime = f"{sys.implementation.name} {platform.python_version()}"
    return json.dumps({"runtime": runtime, "results": results}, ensure_ascii=False, indent=1, sort_keys=True)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as corpus_file:
        report = run_corpus(corpus_file.read())
    with open(sys.argv[2], "w", encoding="utf-8") as out_file:
        out_file.write(report)
