"""Shared fixtures: the engine jar (required, never skipped) and one mock-worker process."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # the `helpers` module beside this file

MOCK_WORKER_COUNT = 4


@pytest.fixture(scope="session")
def engine_jar():
    """The engine jar the installed package ships. Missing => the test fails, with the reason."""
    from vllm_router.bridge.engine_command import engine_jar as locate

    try:
        return locate()
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def mock_workers(engine_jar):
    """URLs of MOCK_WORKER_COUNT mock vLLM workers in one JVM, shared by the whole session."""
    from vllm_router.mock_workers import MockWorkers

    workers = MockWorkers(MOCK_WORKER_COUNT)
    yield workers.urls
    workers.close()
