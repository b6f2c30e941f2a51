"""--session-store from Python: two routers sharing sessions through a real redis-server, and the
errors a trainer sees for a bad store (ValueError for a malformed URL, RuntimeError when the store
cannot be reached)."""

import shutil
import subprocess

import pytest

from helpers import chat, free_port, wait_until
from vllm_router import Router, RouterArgs


@pytest.fixture(scope="module")
def redis_url():
    """A redis-server of this test module on a free loopback port, without persistence."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is not installed (`make test` installs it)", pytrace=False)
    port = free_port()
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def answers():
        try:
            return subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True,
                                  text=True, timeout=5).stdout.strip() == "PONG"
        except (OSError, subprocess.TimeoutExpired):
            return False

    assert wait_until(answers, timeout=30), "redis-server did not start"
    yield f"redis://127.0.0.1:{port}"
    process.terminate()
    process.wait(10)


def shared_router(mock_workers, store):
    return Router.from_args(RouterArgs(port=0, prometheus_port=0, policy="sticky_least_loaded",
                                       worker_urls=mock_workers, worker_startup_check_interval=1,
                                       session_store=store)).launch()


def test_two_routers_on_one_store_share_sessions_and_a_restart_keeps_them(engine_jar, mock_workers,
                                                                          redis_url):
    with shared_router(mock_workers, redis_url) as a, shared_router(mock_workers, redis_url) as b:
        status, worker = chat(a.url, "trajectory-1", "turn 1")
        assert status == 200 and worker
        assert chat(b.url, "trajectory-1", "turn 2") == (200, worker)
        stats = b.session_stats()
        assert stats["active_sessions"] == 1
        assert stats["session_store"] == redis_url and stats["degraded"] is False
        assert sum(a.sessions().values()) == 1

        b.finish_session("trajectory-1")
        assert a.session_stats()["active_sessions"] == 0

        status, kept = chat(a.url, "trajectory-2", "turn 1")
        assert status == 200
    with shared_router(mock_workers, redis_url) as restarted:
        assert chat(restarted.url, "trajectory-2", "turn 2") == (200, kept)
        restarted.finish_session("trajectory-2")


def test_malformed_store_url_is_value_error(engine_jar):
    with pytest.raises(ValueError, match="session_store.*redis://"):
        Router.from_args(RouterArgs(port=0, prometheus_port=0, session_store="redis//cache:6379")).launch()


def test_unreachable_store_is_runtime_error_on_one_line(engine_jar):
    url = f"redis://:secret@127.0.0.1:{free_port()}"
    with pytest.raises(RuntimeError) as excinfo:
        Router.from_args(RouterArgs(port=0, prometheus_port=0, session_store=url)).launch()
    message = str(excinfo.value)
    assert not isinstance(excinfo.value, ValueError)
    assert "Session store redis://***@127.0.0.1" in message and "secret" not in message
    assert "\n" not in message
