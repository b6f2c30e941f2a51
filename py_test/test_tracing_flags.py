"""The tracing flags (0.1.17's Rust command-line names) from RouterArgs, the command line and the
native Router keywords to the engine, and the engine's answer to bad values: upstream's messages."""

import argparse
import json

import pytest

from vllm_router import Router, RouterArgs
from vllm_router.engine_config import config_json_for, config_json_from_argv

UPSTREAM_EXCLUDED = ["/health", "/health_generate", "/liveness", "/readiness"]


def launch(**fields):
    return Router.from_args(RouterArgs(port=0, prometheus_port=0, **fields)).launch()


def test_tracing_is_off_by_default():
    config = json.loads(config_json_from_argv([]))
    assert config["enable_trace"] is False
    assert config["otlp_traces_endpoint"] is None
    assert config["otel_sampling_ratio"] == 1.0
    assert config["otel_excluded_paths"] == UPSTREAM_EXCLUDED


def test_the_flags_reach_the_config():
    config = json.loads(config_json_from_argv([
        "--enable-trace", "--otlp-traces-endpoint", "collector:4317", "--otel-sampling-ratio", "0.25",
        "--otel-excluded-paths", "/health", "/metrics"]))
    assert config["enable_trace"] is True
    assert config["otlp_traces_endpoint"] == "collector:4317"
    assert config["otel_sampling_ratio"] == 0.25
    assert config["otel_excluded_paths"] == ["/health", "/metrics"]


def test_the_prefixed_flags_reach_the_config():
    parser = argparse.ArgumentParser()
    RouterArgs.add_cli_args(parser, use_router_prefix=True)
    args = RouterArgs.from_cli_args(parser.parse_args(
        ["--router-enable-trace", "--router-otlp-traces-endpoint", "http://c:4317",
         "--router-otel-sampling-ratio", "0"]), use_router_prefix=True)
    config = json.loads(config_json_for(args))
    assert (config["enable_trace"], config["otlp_traces_endpoint"], config["otel_sampling_ratio"]) == (
        True, "http://c:4317", 0.0)


def test_a_ratio_that_is_not_a_number_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as excinfo:
        config_json_from_argv(["--otel-sampling-ratio", "half"])
    assert excinfo.value.code == 2
    assert "--otel-sampling-ratio: invalid float value: 'half'" in capsys.readouterr().err


def test_native_router_keywords_are_upstreams():
    config = json.loads(Router(worker_urls=[], enable_trace=True, otlp_traces_endpoint="c:4317").config_json)
    assert (config["enable_trace"], config["otlp_traces_endpoint"]) == (True, "c:4317")


@pytest.mark.parametrize("endpoint, reason", [
    ("http://bad host:4317", "invalid uri character"),
    ("ftp://collector:21", "invalid scheme"),
    ("collector:99999", "invalid port"),
])
def test_a_malformed_endpoint_is_a_start_error(engine_jar, endpoint, reason):
    with pytest.raises(ValueError) as excinfo:
        launch(enable_trace=True, otlp_traces_endpoint=endpoint)
    assert str(excinfo.value) == f"Failed to create OTLP exporter: invalid URI {reason} (endpoint '{endpoint}')"


@pytest.mark.parametrize("ratio, shown", [(1.5, "1.5"), (-0.1, "-0.1"), (2.0, "2")])
def test_a_sampling_ratio_outside_zero_to_one_is_a_start_error(engine_jar, ratio, shown):
    with pytest.raises(ValueError) as excinfo:
        launch(enable_trace=True, otel_sampling_ratio=ratio)
    assert str(excinfo.value) == f"OTel sampling_ratio must be within [0.0, 1.0], got {shown}"
