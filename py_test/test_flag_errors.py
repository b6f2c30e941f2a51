"""Flags that act or are refused, through the package as a trainer uses it: the engine's answer to
a flag whose feature is not built, to a negative circuit-breaker window and to an unwritable log
directory, and the log file that --log-dir gives."""

import pytest

from helpers import http
from vllm_router import Router, RouterArgs


def launch(**fields):
    return Router.from_args(RouterArgs(port=0, prometheus_port=0, **fields)).launch()


@pytest.mark.parametrize("fields, flag", [
    (dict(enable_igw=True), "--enable-igw"),
    (dict(model_path="/models/llama"), "--model-path"),
    (dict(kv_connector="mooncake"), "--kv-connector mooncake"),
])
def test_a_flag_whose_feature_is_not_built_is_a_value_error(engine_jar, fields, flag):
    with pytest.raises(ValueError) as excinfo:
        launch(**fields)
    message = str(excinfo.value)
    assert message.startswith(f"{flag} is not supported by this router (")
    assert "\n" not in message


def test_a_negative_circuit_breaker_window_is_a_value_error(engine_jar):
    with pytest.raises(ValueError, match="'cb_window_duration_secs': -1 - Must be >= 0$"):
        launch(cb_window_duration_secs=-1)


def test_a_log_dir_that_cannot_be_written_is_a_runtime_error(engine_jar, tmp_path):
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("")
    with pytest.raises(RuntimeError) as excinfo:
        launch(log_dir=str(not_a_dir / "logs"))
    assert not isinstance(excinfo.value, ValueError)
    assert f"Cannot write logs to --log-dir {not_a_dir / 'logs'}: Not a directory" in str(excinfo.value)


def test_log_dir_is_created_and_gets_the_router_log(engine_jar, tmp_path):
    log_dir = tmp_path / "new" / "logs"
    with launch(log_dir=str(log_dir)) as router:
        assert http("GET", router.url + "/health")[0] == 200
        lines = (log_dir / "vllm-router.0.log").read_text().splitlines()
    assert any(" INFO org.vllmrouter.server.RouterServer: Router ready" in line for line in lines), lines
