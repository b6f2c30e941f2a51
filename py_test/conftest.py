"""Shared fixtures: the engine jar (required, never skipped) and one mock-worker process."""

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # the `helpers` module beside this file

MOCK_WORKER_COUNT = 4


@pytest.fixture(scope="session")
def engine_jar():
    """The engine jar the installed package ships. Missing => the test fails, with the reason."""
    from vllm_router.bridge.process import engine_jar as locate

    try:
        return locate()
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def mock_workers(engine_jar):
    """URLs of MOCK_WORKER_COUNT mock vLLM workers in one JVM, shared by the whole session."""
    from vllm_router.bridge.java_runtime import find_java
    from vllm_router.bridge.process import engine_command

    command = engine_command(find_java(), engine_jar,
                             ["mock-worker", "--count", str(MOCK_WORKER_COUNT), "--lifeline"],
                             class_cache=False)
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = process.stdout.readline()
    try:
        ready = json.loads(line)
        assert ready.get("event") == "ready", ready
    except (ValueError, AssertionError):
        process.kill()
        pytest.fail(f"mock workers did not start: {line!r}", pytrace=False)
    yield ready["urls"]
    process.stdin.close()  # lifeline: the workers exit on EOF
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
