"""Engine-control calls through the handle of `Router.launch()`: one URL for a trainer."""

import json

import pytest

from helpers import http
from vllm_router import Router, RouterArgs
from vllm_router.router import ControlCallFailed

ADMIN_KEY = "control-secret"


@pytest.fixture(scope="module")
def handle(mock_workers):
    args = RouterArgs(port=0, prometheus_port=0, worker_urls=mock_workers, worker_startup_check_interval=1,
                      admin_api_key=ADMIN_KEY)
    with Router.from_args(args).launch() as running:
        yield running


def completion(url: str, session: str) -> dict:
    status, _, body = http("POST", url + "/v1/completions", {"model": "mock", "prompt": "a turn", "max_tokens": 2},
                           {"X-Session-ID": session})
    assert status == 200, body
    return json.loads(body)


def test_a_weight_sync_step_reaches_every_worker_and_new_turns_see_the_new_weights(handle, mock_workers):
    before = completion(handle.url, "step-session")
    paused = handle.pause("keep", clear_cache=True)
    assert paused["success"] and paused["failed"] == []
    assert [r["worker"] for r in paused["results"]] == mock_workers
    try:
        version = before["weight_version"] + 1
        updated = handle.update_weights({"weight_version": version})
        assert [r["body"]["weight_version"] for r in updated["results"]] == [version] * len(mock_workers)
        rpc = handle.collective_rpc("skyrl_sync_weights", {"names": ["w"]})
        assert len(rpc["results"]) == len(mock_workers)
    finally:
        handle.resume()
    after = completion(handle.url, "step-session")
    assert after["weight_version"] == version
    assert after["worker_id"] == before["worker_id"], "the session kept its worker"
    assert handle.world_size() == len(mock_workers)
    assert handle.world_size(worker=mock_workers[0]) == 1


def test_bad_input_raises_with_the_routers_message_and_nothing_is_paused(handle, mock_workers):
    with pytest.raises(RuntimeError, match="Unknown pause mode 'freeze'") as excinfo:
        handle.pause("freeze")
    assert not isinstance(excinfo.value, ControlCallFailed)
    with pytest.raises(RuntimeError, match="not registered"):
        handle.reset_prefix_cache(worker="http://127.0.0.1:1")
    for url in mock_workers:
        assert json.loads(http("GET", url + "/is_paused")[2])["is_paused"] is False


def test_control_routes_need_the_admin_key(handle):
    assert http("POST", handle.url + "/pause?mode=keep")[0] == 401
