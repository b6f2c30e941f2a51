"""launch_router with a patched engine: upstream's test_router_config, test_startup_sequence and
test_validation behaviours (reference section 8.1), plus Router.from_args' mapping."""

import json
import os
from unittest.mock import MagicMock, patch

import pytest

from vllm_router.engine_config import config_json_for
from vllm_router.launch_router import command_main, launch_router, parse_router_args
from vllm_router.router import PolicyType, Router
from vllm_router.router_args import RouterArgs


@pytest.fixture
def patched_router():
    """`vllm_router.launch_router.Router` replaced; `.from_args` records what it was given."""
    with patch("vllm_router.launch_router.Router") as router_class:
        router_class.from_args.return_value = MagicMock()
        yield router_class


def launched_args(router_class) -> RouterArgs:
    router_class.from_args.assert_called_once()
    return router_class.from_args.call_args[0][0]


class TestStartupSequence:
    def test_basic_config_reaches_router_and_start(self, patched_router):
        args = RouterArgs(worker_urls=["http://w1:8000", "http://w2:8000"], policy="sticky_least_loaded",
                          host="0.0.0.0", port=30123, prometheus_port=29123)
        assert launch_router(args) is None
        passed = launched_args(patched_router)
        assert passed.worker_urls == ["http://w1:8000", "http://w2:8000"]
        assert passed.policy == "sticky_least_loaded"
        assert (passed.host, passed.port, passed.prometheus_port) == ("0.0.0.0", 30123, 29123)
        patched_router.from_args.return_value.start.assert_called_once()

    @pytest.mark.parametrize("overrides", [
        dict(retry_max_retries=3, retry_initial_backoff_ms=100, disable_retries=True),
        dict(cb_failure_threshold=5, cb_timeout_duration_secs=30, disable_circuit_breaker=True),
        dict(max_concurrent_requests=64, queue_size=0, rate_limit_tokens_per_second=10),
        dict(health_failure_threshold=2, health_check_endpoint="/healthz"),
        dict(prometheus_port=29001, prometheus_host="0.0.0.0"),
        dict(cors_allowed_origins=["*"], request_id_headers=["x-trace-id"]),
        dict(intra_node_data_parallel_size=4, api_key="k"),
        dict(api_key_validation_urls=["http://auth/check"], admin_api_key="admin"),
    ])
    def test_fields_propagate(self, patched_router, overrides):
        launch_router(RouterArgs(worker_urls=["http://w:1"], **overrides))
        passed = launched_args(patched_router)
        for name, value in overrides.items():
            assert getattr(passed, name) == value

    def test_namespace_is_converted(self, patched_router):
        import argparse

        launch_router(argparse.Namespace(worker_urls=["http://w:1"], policy="random", prefill=None,
                                         decode=None))
        passed = launched_args(patched_router)
        assert isinstance(passed, RouterArgs) and passed.policy == "random"

    def test_regular_mode_with_empty_urls_is_accepted(self, patched_router):
        launch_router(RouterArgs(worker_urls=[]))
        patched_router.from_args.assert_called_once()


class TestValidation:
    @pytest.mark.parametrize("pd_flag", ["pd_disaggregation", "vllm_pd_disaggregation"])
    def test_pd_without_prefill(self, patched_router, pd_flag):
        with pytest.raises(ValueError, match="PD disaggregation mode requires --prefill"):
            launch_router(RouterArgs(**{pd_flag: True}))
        patched_router.from_args.assert_not_called()

    def test_pd_without_decode(self, patched_router):
        with pytest.raises(ValueError, match="PD disaggregation mode requires --decode"):
            launch_router(RouterArgs(pd_disaggregation=True, prefill_urls=[("http://p:1", None)]))

    def test_pd_with_service_discovery_needs_no_urls(self, patched_router):
        launch_router(RouterArgs(pd_disaggregation=True, service_discovery=True,
                                 prefill_selector={"app": "p"}, decode_selector={"app": "d"}))
        patched_router.from_args.assert_called_once()

    def test_pd_with_vllm_discovery_address_needs_no_urls(self, patched_router):
        launch_router(RouterArgs(vllm_pd_disaggregation=True, vllm_discovery_address="0.0.0.0:30001"))
        patched_router.from_args.assert_called_once()

    def test_router_args_accept_any_values(self):
        # Range and URL checks belong to the engine (upstream: Rust ConfigValidator).
        args = RouterArgs(worker_urls=["not-a-url", ""], port=65536, cache_threshold=2.0,
                          retry_max_retries=0, prefill_urls=[("http://p", 0)])
        assert args.port == 65536 and args.worker_urls == ["not-a-url", ""]

    def test_mini_lb_is_refused(self, patched_router):
        with pytest.raises(ValueError, match="^--mini-lb is not supported by this router "):
            launch_router(RouterArgs(mini_lb=True, pd_disaggregation=True,
                                     prefill_urls=[("http://p:1", None)], decode_urls=["http://d:1"]))


class TestPolicyLogging:
    PD = dict(pd_disaggregation=True, prefill_urls=[("http://p:1", None)], decode_urls=["http://d:1"])

    def test_both_policies_warn(self, patched_router):
        with patch("vllm_router.router_args.logger") as logger:
            launch_router(RouterArgs(prefill_policy="power_of_two", decode_policy="round_robin", **self.PD))
        logger.warning.assert_called_once()
        assert "Both --prefill-policy and --decode-policy are specified" in logger.warning.call_args[0][0]
        logger.info.assert_not_called()

    def test_prefill_policy_only(self, patched_router):
        with patch("vllm_router.router_args.logger") as logger:
            launch_router(RouterArgs(prefill_policy="power_of_two", **self.PD))
        logger.info.assert_called_once()
        message = logger.info.call_args[0][0]
        assert "Using --prefill-policy 'power_of_two'" in message
        assert "and --policy 'cache_aware'" in message

    def test_decode_policy_only(self, patched_router):
        with patch("vllm_router.router_args.logger") as logger:
            launch_router(RouterArgs(decode_policy="round_robin", **self.PD))
        logger.info.assert_called_once()
        message = logger.info.call_args[0][0]
        assert "Using --policy 'cache_aware'" in message
        assert "and --decode-policy 'round_robin'" in message

    def test_no_pd_no_policy_logs(self, patched_router):
        with patch("vllm_router.router_args.logger") as logger:
            launch_router(RouterArgs(worker_urls=["http://w:1"], prefill_policy="random"))
        logger.warning.assert_not_called()
        logger.info.assert_not_called()


class TestErrorHandling:
    def test_error_from_from_args(self, patched_router):
        patched_router.from_args.side_effect = ValueError("bad configuration")
        with patch("vllm_router.launch_router.logger") as logger:
            with pytest.raises(ValueError, match="bad configuration"):
                launch_router(RouterArgs())
        logger.error.assert_called_once()
        assert "Error starting router: bad configuration" in logger.error.call_args[0][0]

    def test_error_from_start(self, patched_router):
        patched_router.from_args.return_value.start.side_effect = RuntimeError("cannot bind")
        with patch("vllm_router.launch_router.logger") as logger:
            with pytest.raises(RuntimeError, match="cannot bind"):
                launch_router(RouterArgs())
        logger.error.assert_called_once()
        assert "Error starting router: cannot bind" in logger.error.call_args[0][0]


class TestCommandMain:
    """`vllm-router`: the engine takes the command's process when it can, else `main()` runs."""

    EXEC_ENGINE = "vllm_router.bridge.process.exec_engine"

    def test_the_engine_takes_the_process_with_the_configuration_launch_router_would_hand_it(self):
        argv = ["--policy", "sticky_least_loaded", "--worker-urls", "http://w:1", "--port", "30123"]
        with patch(self.EXEC_ENGINE) as exec_engine, \
                patch("vllm_router.launch_router.launch_router") as launch:
            command_main(argv)
        launch.assert_not_called()
        config_json, process_title = exec_engine.call_args[0]
        assert json.loads(config_json) == json.loads(config_json_for(parse_router_args(argv)))
        assert process_title == "vllm::router"

    def test_without_memfd_the_command_serves_from_its_own_process(self, monkeypatch):
        monkeypatch.delattr(os, "memfd_create")
        with patch(self.EXEC_ENGINE) as exec_engine, \
                patch("vllm_router.launch_router.launch_router") as launch:
            command_main(["--worker-urls", "http://w:1"])
        exec_engine.assert_not_called()
        assert launch.call_args[0][0].worker_urls == ["http://w:1"]

    def test_flags_launch_router_refuses_are_its_error_and_start_no_engine(self):
        with patch(self.EXEC_ENGINE) as exec_engine, \
                patch("vllm_router.launch_router.logger") as logger:
            with pytest.raises(ValueError, match="--mini-lb is not supported"):
                command_main(["--mini-lb"])
        exec_engine.assert_not_called()
        assert "Error starting router: --mini-lb is not supported" in logger.error.call_args[0][0]


class TestRouterMapping:
    def test_from_args_regular(self):
        args = RouterArgs(worker_urls=["http://w:1"], policy="sticky_least_loaded",
                          prefill_urls=[("http://p:1", None)])
        config = json.loads(Router.from_args(args).config_json)
        assert config["worker_urls"] == ["http://w:1"]
        assert config["policy"] == "sticky_least_loaded"
        assert config["prefill_urls"] == []  # only PD modes keep prefill/decode lists
        assert args.policy == "sticky_least_loaded"  # the caller's RouterArgs is not modified

    def test_from_args_pd_clears_worker_urls(self):
        args = RouterArgs(worker_urls=["http://w:1"], vllm_pd_disaggregation=True,
                          prefill_urls=[("http://p:1", 9000)], decode_urls=["http://d:1"],
                          prefill_policy="consistent_hash", decode_policy="consistent_hash")
        config = json.loads(Router.from_args(args).config_json)
        assert config["worker_urls"] == []
        assert config["prefill_urls"] == [["http://p:1", 9000]]
        assert config["decode_urls"] == ["http://d:1"]
        assert config["prefill_policy"] == config["decode_policy"] == "consistent_hash"

    def test_from_args_service_discovery_clears_worker_urls(self):
        config = json.loads(Router.from_args(
            RouterArgs(worker_urls=["http://w:1"], service_discovery=True, selector={"a": "b"})
        ).config_json)
        assert config["worker_urls"] == []

    def test_native_keyword_defaults(self):
        config = json.loads(Router(worker_urls=["http://w:1"]).config_json)
        assert config["policy"] == "round_robin"
        assert config["port"] == 3001

    def test_native_keywords_take_policy_type(self):
        router = Router(worker_urls=[], policy=PolicyType.StickyLeastLoaded,
                        prefill_policy=None, prefill_urls=None, decode_urls=None, enable_trace=False)
        assert json.loads(router.config_json)["policy"] == "sticky_least_loaded"

    def test_native_tracing_keywords_reach_the_config(self):
        config = json.loads(Router(worker_urls=[], enable_trace=True,
                                   otlp_traces_endpoint="collector:4317").config_json)
        assert config["enable_trace"] is True
        assert config["otlp_traces_endpoint"] == "collector:4317"

    def test_native_unknown_keyword(self):
        with pytest.raises(TypeError):
            Router(worker_urls=[], no_such_option=1)
