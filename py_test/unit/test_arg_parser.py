"""Argument parsing: upstream's test_arg_parser behaviours (reference section 8.1)."""

import argparse
import dataclasses
import json
import pickle
import typing
from typing import Dict, List, Optional

import pytest

from vllm_router.router import PolicyType, policy_from_str
from vllm_router.router_args import RouterArgs, parse_router_args, router_args_to_config_json


class TestRouterArgs:
    def test_default_values(self):
        args = RouterArgs()
        assert args.host == "127.0.0.1"
        assert args.port == 30000
        assert args.policy == "cache_aware"
        assert args.worker_urls == []
        assert args.pd_disaggregation is False
        assert args.vllm_pd_disaggregation is False
        assert args.prefill_urls == []
        assert args.decode_urls == []
        assert args.prefill_policy is None
        assert args.decode_policy is None
        assert args.service_discovery is False
        assert args.selector == {}
        assert args.service_discovery_port == 80
        assert args.service_discovery_namespace is None
        assert args.vllm_discovery_address is None
        assert args.retry_max_retries == 5
        assert args.cb_failure_threshold == 10
        assert args.disable_retries is False
        assert args.disable_circuit_breaker is False
        assert args.prometheus_port is None
        assert args.prometheus_host is None
        assert args.api_key_validation_urls == []
        assert args.admin_api_key is None
        assert args.session_store == "memory"

    def test_parse_selector_valid(self):
        assert RouterArgs._parse_selector(["app=worker"]) == {"app": "worker"}
        assert RouterArgs._parse_selector(["app=worker", "env=prod", "version=v1"]) == {
            "app": "worker", "env": "prod", "version": "v1"}
        assert RouterArgs._parse_selector([]) == {}
        assert RouterArgs._parse_selector(None) == {}

    def test_parse_selector_invalid(self):
        assert RouterArgs._parse_selector(["invalid_format"]) == {}
        assert RouterArgs._parse_selector(["app=worker=extra"]) == {"app": "worker=extra"}
        assert RouterArgs._parse_selector(["a=1", "a=2"]) == {"a": "2"}

    def test_parse_prefill_urls_valid(self):
        assert RouterArgs._parse_prefill_urls([["http://prefill1:8000", "9000"]]) == [
            ("http://prefill1:8000", 9000)]
        assert RouterArgs._parse_prefill_urls([["http://prefill1:8000", "none"]]) == [
            ("http://prefill1:8000", None)]
        assert RouterArgs._parse_prefill_urls([["http://prefill1:8000", "NONE"]]) == [
            ("http://prefill1:8000", None)]
        assert RouterArgs._parse_prefill_urls([["http://prefill1:8000"]]) == [
            ("http://prefill1:8000", None)]
        assert RouterArgs._parse_prefill_urls(
            [["http://p1:8000", "9000"], ["http://p2:8000", "none"], ["http://p3:8000"]]
        ) == [("http://p1:8000", 9000), ("http://p2:8000", None), ("http://p3:8000", None)]
        assert RouterArgs._parse_prefill_urls([]) == []
        assert RouterArgs._parse_prefill_urls(None) == []

    def test_parse_prefill_urls_invalid(self):
        with pytest.raises(ValueError, match="Invalid bootstrap port"):
            RouterArgs._parse_prefill_urls([["http://prefill1:8000", "invalid"]])

    def test_parse_decode_urls_valid(self):
        assert RouterArgs._parse_decode_urls([["http://decode1:8001"]]) == ["http://decode1:8001"]
        assert RouterArgs._parse_decode_urls([["http://d1:8001"], ["http://d2:8001"]]) == [
            "http://d1:8001", "http://d2:8001"]
        assert RouterArgs._parse_decode_urls([]) == []
        assert RouterArgs._parse_decode_urls(None) == []

    def test_from_cli_args_basic(self):
        namespace = argparse.Namespace(
            host="0.0.0.0",
            port=30001,
            worker_urls=["http://worker1:8000", "http://worker2:8000"],
            router_policy="round_robin",
            router_prefill=None,
            router_decode=None,
            router_selector=["app=worker", "env=test"],
            router_prefill_selector=None,
            router_decode_selector=None,
            router_request_id_headers=["x-request-id", "x-trace-id"],
            router_max_concurrent_requests=128,
            router_queue_size=50,
            router_queue_timeout_secs=30,
            router_rate_limit_tokens_per_second=100,
            router_retry_max_retries=3,
            router_retry_initial_backoff_ms=100,
            router_disable_retries=False,
            router_cb_failure_threshold=5,
            router_disable_circuit_breaker=True,
            router_health_failure_threshold=2,
            router_health_check_endpoint="/healthz",
        )
        args = RouterArgs.from_cli_args(namespace, use_router_prefix=True)
        assert args.host == "0.0.0.0"
        assert args.port == 30001
        assert args.worker_urls == ["http://worker1:8000", "http://worker2:8000"]
        assert args.policy == "round_robin"
        assert args.selector == {"app": "worker", "env": "test"}
        assert args.prefill_selector == {}
        assert args.request_id_headers == ["x-request-id", "x-trace-id"]
        assert args.max_concurrent_requests == 128
        assert args.queue_size == 50
        assert args.queue_timeout_secs == 30
        assert args.rate_limit_tokens_per_second == 100
        assert args.retry_max_retries == 3
        assert args.retry_initial_backoff_ms == 100
        assert args.cb_failure_threshold == 5
        assert args.disable_circuit_breaker is True
        assert args.health_failure_threshold == 2
        assert args.health_check_endpoint == "/healthz"
        assert args.bootstrap_port_annotation == "vllm.ai/bootstrap-port"

    def test_from_cli_args_pd_mode(self):
        namespace = argparse.Namespace(
            host="127.0.0.1",
            port=30000,
            worker_urls=[],
            router_policy="cache_aware",
            router_pd_disaggregation=True,
            router_prefill=[["http://prefill1:8000", "9000"], ["http://prefill2:8000", "none"]],
            router_decode=[["http://decode1:8001"], ["http://decode2:8001"]],
            router_prefill_policy="power_of_two",
            router_decode_policy="round_robin",
        )
        args = RouterArgs.from_cli_args(namespace, use_router_prefix=True)
        assert args.pd_disaggregation is True
        assert args.prefill_urls == [("http://prefill1:8000", 9000), ("http://prefill2:8000", None)]
        assert args.decode_urls == ["http://decode1:8001", "http://decode2:8001"]
        assert args.prefill_policy == "power_of_two"
        assert args.decode_policy == "round_robin"
        assert args.policy == "cache_aware"

    def test_from_cli_args_without_prefix(self):
        namespace = argparse.Namespace(
            host="127.0.0.1", port=30000, worker_urls=["http://worker1:8000"], policy="random",
            prefill=None, decode=None, selector=["app=w"],
        )
        args = RouterArgs.from_cli_args(namespace, use_router_prefix=False)
        assert args.policy == "random"
        assert args.worker_urls == ["http://worker1:8000"]
        assert args.selector == {"app": "w"}

    def test_router_prefix_flags(self):
        parser = argparse.ArgumentParser()
        RouterArgs.add_cli_args(parser, use_router_prefix=True, exclude_host_port=True)
        namespace = parser.parse_args([
            "--worker-urls", "http://w:1", "--router-policy", "sticky_least_loaded",
            "--router-prefill", "http://p:1", "none", "--router-decode", "http://d:1",
        ])
        assert not hasattr(namespace, "host") and not hasattr(namespace, "port")
        assert namespace.router_policy == "sticky_least_loaded"
        args = RouterArgs.from_cli_args(namespace, use_router_prefix=True)
        assert args.worker_urls == ["http://w:1"]
        assert args.policy == "sticky_least_loaded"
        assert args.prefill_urls == [("http://p:1", None)]
        assert args.decode_urls == ["http://d:1"]
        assert args.host == "127.0.0.1"

    def test_picklable(self):
        args = RouterArgs(worker_urls=["http://w:1"], policy="sticky_least_loaded",
                          prefill_urls=[("http://p:1", 9000)])
        assert pickle.loads(pickle.dumps(args)) == args

    def test_unknown_keyword_raises(self):
        with pytest.raises(TypeError):
            RouterArgs(no_such_field=1)

    def test_trainer_mutates_ports(self):
        args = RouterArgs(host="0.0.0.0", policy="consistent_hash")
        args.port = 40123
        args.prometheus_port = 29123
        assert False or args.pd_disaggregation is False
        config = json.loads(router_args_to_config_json(args))
        assert config["port"] == 40123 and config["prometheus_port"] == 29123


class TestFieldTypes:
    """`dataclasses.fields(RouterArgs)[i].type` is what upstream's is: a typing object, not a string,
    so config tools that read the fields (or `typing.get_type_hints`) see upstream's types."""

    def test_fields_carry_upstreams_typing_objects(self):
        types = {f.name: f.type for f in dataclasses.fields(RouterArgs)}
        assert types["worker_urls"] == List[str]
        assert types["port"] is int
        assert types["prefill_urls"] == List[tuple]
        assert types["prefill_policy"] == Optional[str]
        assert types["kv_aware_session_affinity_ttl_secs"] == Optional[int]
        assert types["selector"] == Dict[str, str]
        assert types["request_id_headers"] == Optional[List[str]]
        assert types["retry_backoff_multiplier"] is float

    def test_no_field_type_is_a_string_and_type_hints_resolve(self):
        fields = dataclasses.fields(RouterArgs)
        assert [f.name for f in fields if isinstance(f.type, str)] == []
        assert typing.get_type_hints(RouterArgs) == {f.name: f.type for f in fields}


class TestConfigJson:
    def test_field_order_is_dataclass_order(self):
        config = json.loads(router_args_to_config_json(RouterArgs()))
        assert list(config) == list(vars(RouterArgs()))

    def test_tuples_become_lists_and_values_round_trip(self):
        args = RouterArgs(prefill_urls=[("http://p:1", 9000), ("http://p:2", None)],
                          selector={"app": "x"}, api_key_validation_urls=["http://v/check"],
                          admin_api_key="secret")
        text = router_args_to_config_json(args)
        assert "\n" not in text
        config = json.loads(text)
        assert config["prefill_urls"] == [["http://p:1", 9000], ["http://p:2", None]]
        assert config["selector"] == {"app": "x"}
        assert config["api_key_validation_urls"] == ["http://v/check"]
        assert config["admin_api_key"] == "secret"
        assert config["max_tree_size"] == 67108864
        assert config["max_payload_size"] == 536870912

    def test_non_ascii_stays_one_line(self):
        text = router_args_to_config_json(RouterArgs(api_key="clé\nx"))
        assert "\n" not in text
        assert json.loads(text)["api_key"] == "clé\nx"


class TestPolicyFromStr:
    @pytest.mark.parametrize("name,member", [
        ("random", PolicyType.Random),
        ("round_robin", PolicyType.RoundRobin),
        ("cache_aware", PolicyType.CacheAware),
        ("power_of_two", PolicyType.PowerOfTwo),
        ("consistent_hash", PolicyType.ConsistentHash),
        ("sticky_least_loaded", PolicyType.StickyLeastLoaded),
        ("rendezvous_hash", PolicyType.RendezvousHash),
        ("sticky_balanced", PolicyType.StickyBalanced),
    ])
    def test_mapping(self, name, member):
        assert policy_from_str(name) is member

    def test_none(self):
        assert policy_from_str(None) is None

    def test_unknown_raises_key_error(self):
        with pytest.raises(KeyError):
            policy_from_str("invalid_policy")

    def test_compat_module_probe(self):
        import vllm_router_rs

        assert hasattr(vllm_router_rs.PolicyType, "StickyLeastLoaded")
        assert vllm_router_rs.Router is not None


class TestParseRouterArgs:
    def test_basic_args(self):
        args = parse_router_args([
            "--host", "0.0.0.0", "--port", "30001",
            "--worker-urls", "http://worker1:8000", "http://worker2:8000",
            "--policy", "round_robin",
        ])
        assert args.host == "0.0.0.0"
        assert args.port == 30001
        assert args.worker_urls == ["http://worker1:8000", "http://worker2:8000"]
        assert args.policy == "round_robin"

    def test_cli_defaults_differ_from_dataclass(self):
        args = parse_router_args([])
        assert args.worker_urls == []
        assert args.log_level == "info"
        assert args.prometheus_port == 29000
        assert args.prometheus_host == "127.0.0.1"
        assert args.request_id_headers is None

    def test_empty_worker_urls(self):
        assert parse_router_args(["--worker-urls"]).worker_urls == []

    @pytest.mark.parametrize("flag", ["--policy", "--prefill-policy", "--decode-policy"])
    @pytest.mark.parametrize("policy", ["sticky_least_loaded", "rendezvous_hash", "sticky_balanced"])
    def test_session_policies_accepted(self, flag, policy):
        assert getattr(parse_router_args([flag, policy]), flag[2:].replace("-", "_")) == policy

    def test_pd_args(self):
        args = parse_router_args([
            "--pd-disaggregation",
            "--prefill", "http://prefill1:8000", "9000",
            "--prefill", "http://prefill2:8000", "none",
            "--decode", "http://decode1:8001",
            "--decode", "http://decode2:8001",
            "--prefill-policy", "cache_aware",
            "--decode-policy", "power_of_two",
        ])
        assert args.pd_disaggregation is True
        assert args.prefill_urls == [("http://prefill1:8000", 9000), ("http://prefill2:8000", None)]
        assert args.decode_urls == ["http://decode1:8001", "http://decode2:8001"]
        assert args.prefill_policy == "cache_aware"
        assert args.decode_policy == "power_of_two"

    def test_vllm_pd_args(self):
        args = parse_router_args(["--vllm-pd-disaggregation", "--prefill", "http://p:8000",
                                  "--decode", "http://d:8001", "--kv-connector", "mooncake"])
        assert args.vllm_pd_disaggregation is True
        assert args.prefill_urls == [("http://p:8000", None)]
        assert args.kv_connector == "mooncake"

    def test_service_discovery_args(self):
        args = parse_router_args([
            "--service-discovery", "--selector", "app=worker", "env=prod",
            "--service-discovery-port", "8080", "--service-discovery-namespace", "default",
            "--prefill-selector", "app=vllm", "component=prefill",
            "--decode-selector", "app=vllm", "component=decode",
        ])
        assert args.service_discovery is True
        assert args.selector == {"app": "worker", "env": "prod"}
        assert args.service_discovery_port == 8080
        assert args.service_discovery_namespace == "default"
        assert args.prefill_selector == {"app": "vllm", "component": "prefill"}
        assert args.decode_selector == {"app": "vllm", "component": "decode"}

    def test_vllm_discovery_address_arg(self):
        args = parse_router_args(["--vllm-pd-disaggregation", "--vllm-discovery-address", "0.0.0.0:30001"])
        assert args.vllm_discovery_address == "0.0.0.0:30001"
        assert args.prefill_urls == [] and args.decode_urls == []

    def test_retry_and_circuit_breaker_args(self):
        args = parse_router_args([
            "--retry-max-retries", "3", "--retry-initial-backoff-ms", "100",
            "--retry-max-backoff-ms", "10000", "--retry-backoff-multiplier", "2.0",
            "--retry-jitter-factor", "0.1", "--disable-retries",
            "--cb-failure-threshold", "5", "--cb-success-threshold", "2",
            "--cb-timeout-duration-secs", "30", "--cb-window-duration-secs", "60",
            "--disable-circuit-breaker",
        ])
        assert (args.retry_max_retries, args.retry_initial_backoff_ms, args.retry_max_backoff_ms,
                args.retry_backoff_multiplier, args.retry_jitter_factor) == (3, 100, 10000, 2.0, 0.1)
        assert args.disable_retries is True
        assert (args.cb_failure_threshold, args.cb_success_threshold,
                args.cb_timeout_duration_secs, args.cb_window_duration_secs) == (5, 2, 30, 60)
        assert args.disable_circuit_breaker is True

    def test_rate_limiting_args(self):
        args = parse_router_args(["--max-concurrent-requests", "512", "--queue-size", "200",
                                  "--queue-timeout-secs", "120",
                                  "--rate-limit-tokens-per-second", "100"])
        assert (args.max_concurrent_requests, args.queue_size, args.queue_timeout_secs,
                args.rate_limit_tokens_per_second) == (512, 200, 120, 100)

    def test_health_check_args(self):
        args = parse_router_args(["--health-failure-threshold", "2",
                                  "--health-success-threshold", "1",
                                  "--health-check-timeout-secs", "3",
                                  "--health-check-interval-secs", "30",
                                  "--health-check-endpoint", "/healthz"])
        assert (args.health_failure_threshold, args.health_success_threshold,
                args.health_check_timeout_secs, args.health_check_interval_secs,
                args.health_check_endpoint) == (2, 1, 3, 30, "/healthz")

    def test_cors_and_request_id_args(self):
        args = parse_router_args(["--cors-allowed-origins", "http://a", "http://b",
                                  "--request-id-headers", "x-req", "x-trace"])
        assert args.cors_allowed_origins == ["http://a", "http://b"]
        assert args.request_id_headers == ["x-req", "x-trace"]

    def test_tokenizer_and_auth_args(self):
        args = parse_router_args(["--model-path", "m", "--tokenizer-path", "t",
                                  "--api-key-validation-urls", "http://v1", "http://v2",
                                  "--admin-api-key", "k", "--api-key", "w"])
        assert (args.model_path, args.tokenizer_path) == ("m", "t")
        assert args.api_key_validation_urls == ["http://v1", "http://v2"]
        assert (args.admin_api_key, args.api_key) == ("k", "w")

    def test_session_args(self):
        args = parse_router_args([])
        assert args.session_id_headers == ["x-session-id", "x-user-id", "x-tenant-id",
                                           "x-correlation-id", "x-request-id", "x-trace-id"]
        assert args.session_id_body_fields == ["session_params.session_id", "user", "session_id",
                                               "user_id"]
        assert args.max_sessions == 1_000_000
        args = parse_router_args(["--session-id-headers", "x-session-id", "--max-sessions", "5",
                                  "--session-id-body-fields"])
        assert (args.session_id_headers, args.session_id_body_fields, args.max_sessions) == \
            (["x-session-id"], [], 5)
        assert RouterArgs().session_id_headers is not RouterArgs().session_id_headers

    def test_repeated_scalar_last_wins(self):
        assert parse_router_args(["--port", "1", "--port", "2"]).port == 2

    @pytest.mark.parametrize("argv", [
        ["--policy", "invalid_policy"],
        ["--log-level", "verbose"],
        ["--kv-connector", "rdma"],
        ["--port", "not-a-number"],
    ])
    def test_invalid_values_exit_2(self, argv, capsys):
        with pytest.raises(SystemExit) as excinfo:
            parse_router_args(argv)
        assert excinfo.value.code == 2

    def test_invalid_bootstrap_port(self):
        with pytest.raises(ValueError, match="Invalid bootstrap port"):
            parse_router_args(["--prefill", "http://p:8000", "invalid"])

    def test_help_exits_0(self, capsys):
        with pytest.raises(SystemExit) as excinfo:
            parse_router_args(["--help"])
        assert excinfo.value.code == 0
        out = capsys.readouterr().out
        assert "sticky_least_loaded" in out and "--admin-api-key" in out
