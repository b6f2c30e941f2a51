"""The guard over every flag: none is accepted and then ignored.

For each field of the config contract (the RouterArgs fields the engine build is generated from)
the table below says how the router honours it: `Acts` names the engine class that reads it and
the tests that show it taking effect; `Refused` names the flag the engine refuses, unless it keeps
its default, because its feature is not built. The tests check the table against the contract and
the parser's flags, and check each entry against the sources: the reader still reads the field,
the proving tests still exist, the refusal is still there. A new flag fails here until it is
wired and proven, or refused.

Test references: "ClassName#method" is a JUnit test under java/*/src/test/java; "path.py::name"
is a pytest test under py_test/.
"""

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

import pytest

from vllm_router.config_contract import config_contract
from vllm_router.router_args import RouterArgs

REPO = Path(__file__).resolve().parents[2]
JAVA = REPO / "java"
REFUSALS = "UnsupportedFeatures"


@dataclass(frozen=True)
class Acts:
    """The field is read by `reader` (an engine class) and shown acting by `proofs`."""

    reader: str
    proofs: Tuple[str, ...]
    # What the reader's source contains where it reads the field; default: the record accessor call.
    reads: Optional[str] = None


@dataclass(frozen=True)
class Refused:
    """A non-default value is refused at start with '<flag> is not supported by this router'."""

    flag: str
    proofs: Tuple[str, ...]
    # The engine class that refuses it.
    where: str = REFUSALS


def acts(reader, *proofs, reads=None):
    return Acts(reader, proofs, reads)


def refused(flag, *proofs, where=REFUSALS):
    return Refused(flag, proofs, where)


UNSUPPORTED = ("UnsupportedFeaturesTest#refusesWithOneLineNamingTheFlag",
               "UnsupportedFeaturesTest#theDefaultsOfTheseFlagsPass")

FLAGS = {
    "worker_urls": acts("RouterServer", "RoutingTest#sessionsStickAndBalanceThenRelease",
                        "WorkerTlsTest#proxiesToAnHttpsWorkerOverVerifiedTls"),
    "host": acts("RouterServer", "EngineRunnerTest#sigtermDrainsInFlightRequestsAndExitsZero"),
    "port": acts("RouterServer", "EngineRunnerTest#configErrorsAndBindFailuresPrintAnErrorLine"),
    "mini_lb": refused("--mini-lb", *UNSUPPORTED, "test_launch_router.py::test_mini_lb_is_refused"),
    "pd_disaggregation": acts("RouterConfig", "PdTest#bootstrapModeSendsBothWithBootstrapFields",
                              reads="pdDisaggregation ? PdMode.SGLANG_BOOTSTRAP"),
    "vllm_pd_disaggregation": acts("RouterConfig", "PdTest#twoStageStickySessionsPerRole",
                                   reads="vllmPdDisaggregation ? PdMode.VLLM"),
    "prefill_urls": acts("RouterServer", "PdTest#twoStageStickySessionsPerRole"),
    "decode_urls": acts("RouterServer", "PdTest#twoStageStickySessionsPerRole"),
    "policy": acts("PolicyRegistry", "PolicyRegistryTest#everyPolicyNameBuilds",
                   "test_end_to_end.py::test_launch_handle_in_a_training_loop"),
    "prefill_policy": acts("PolicyRegistry", "PolicyRegistryTest#explicitRolePoliciesWin"),
    "decode_policy": acts("PolicyRegistry", "PolicyRegistryTest#explicitRolePoliciesWin"),
    "worker_startup_timeout_secs": acts("RouterServer", "ResilienceTest#startupWaitGivesUpWithUpstreamsMessage"),
    "worker_startup_check_interval": acts(
        "WorkerDiscovery", "KubernetesPodSourceTest#anUnhealthyPodHoldsUpNoOtherAndIsRetriedInTheBackground"),
    "cache_threshold": acts("CacheAwarePolicy", "CacheAwarePolicyTest#matchBelowThresholdGoesToSmallestTree"),
    "balance_abs_threshold": acts("CacheAwarePolicy", "CacheAwarePolicyTest#imbalanceOverridesCache"),
    "balance_rel_threshold": acts("CacheAwarePolicy", "CacheAwarePolicyTest#imbalanceOverridesCache"),
    "eviction_interval_secs": acts(
        "CacheAwarePolicy", "CacheAwarePolicyTest#evictionRemovesLeastRecentlyUsedLeavesUntilUnderTheLimit"),
    "max_tree_size": acts(
        "CacheAwarePolicy", "CacheAwarePolicyTest#evictionRemovesLeastRecentlyUsedLeavesUntilUnderTheLimit"),
    "max_payload_size": acts("RouterServer", "RoutingTest#bodyLimitIsExact"),
    "intra_node_data_parallel_size": acts("WorkerFactory", "PdTest#dataParallelRanksAreSeparateReplicas"),
    "enable_igw": refused("--enable-igw", *UNSUPPORTED,
                          "test_flag_errors.py::test_a_flag_whose_feature_is_not_built_is_a_value_error"),
    "api_key": acts("ControlCalls", "AdminTest#fallbackSendsTheOutboundKeyNotTheClients"),
    "log_dir": acts("EngineLogging", "EngineRunnerTest#logsAlsoGoToAFileInTheLogDirectoryInTheStderrFormat",
                    "EngineRunnerTest#aLogDirectoryThatCannotBeWrittenIsAOneLineStartUpError",
                    "test_flag_errors.py::test_log_dir_is_created_and_gets_the_router_log"),
    "log_level": acts("EngineLogging", "EngineRunnerTest#logLevelWarningKeepsWarningsAndLeavesTheInfoLinesOut"),
    "service_discovery": acts(
        "WorkerDiscovery", "DiscoveryTest#aReadyPodIsRoutedToAndLeavesOnIpChangeRelabelAndDelete"),
    "selector": acts("PodRules", "PodRulesTest#regularModeNeedsEverySelectorPairAndAReadyRunningPodWithAnIp"),
    "service_discovery_port": acts(
        "PodRules", "PodRulesTest#regularModeNeedsEverySelectorPairAndAReadyRunningPodWithAnIp"),
    "service_discovery_namespace": acts(
        "WorkerDiscovery", "KubernetesPodSourceTest#podBecomesAWorkerWhenReadyAndStopsBeingOneOnEveryWayOut",
        "KubernetesPodSourceTest#missingNamespaceAndMalformedSelectorAreLoggedAndDiscoveryGoesOn"),
    "prefill_selector": acts("PodRules", "PodRulesTest#pdModeChecksThePrefillSelectorFirstAndReadsTheBootstrapPort"),
    "decode_selector": acts("PodRules", "PodRulesTest#pdModeChecksThePrefillSelectorFirstAndReadsTheBootstrapPort"),
    "bootstrap_port_annotation": acts(
        "PodRules", "PodRulesTest#pdModeChecksThePrefillSelectorFirstAndReadsTheBootstrapPort"),
    "vllm_discovery_address": acts(
        "WorkerDiscovery", "DiscoveryTest#vllmInstancesRegisterOverZmqAndExpireWhenTheyStopHeartbeating"),
    # nixl, the default, is what the vLLM PD stages do (kv_transfer_params pass from prefill to decode).
    "kv_connector": refused("--kv-connector", *UNSUPPORTED,
                            "test_flag_errors.py::test_a_flag_whose_feature_is_not_built_is_a_value_error"),
    "prometheus_port": acts("RouterServer", "RoutingTest#prometheusListenerServesUpstreamAndSessionMetrics",
                            reads=".effectivePrometheusPort()"),
    "prometheus_host": acts("RouterServer", "RoutingTest#prometheusListenerServesUpstreamAndSessionMetrics",
                            reads=".effectivePrometheusHost()"),
    "request_id_headers": acts("RouterServer", "FlagsActTest#requestIdHeadersChooseWhereTheRequestIdIsTaken"),
    "request_timeout_secs": acts("RouterServer", "ResilienceTest#requestTimeoutAnswers504AndReleasesTheWorker"),
    "max_concurrent_requests": acts("RouterServer", "ResilienceTest#limiterAnswers429WithRetryAfterAnd408FromTheQueue"),
    "queue_size": acts("RouterServer", "ResilienceTest#limiterAnswers429WithRetryAfterAnd408FromTheQueue"),
    "queue_timeout_secs": acts("RouterServer", "ResilienceTest#limiterAnswers429WithRetryAfterAnd408FromTheQueue"),
    "rate_limit_tokens_per_second": acts(
        "RouterServer", "AdmissionLimiterTest#retryAfterIsTheWholeSecondsUntilTheNextToken"),
    "cors_allowed_origins": acts("RouterServer", "FlagsActTest#corsAllowedOriginsAreTheOnlyOnesAllowed"),
    "retry_max_retries": acts("RetryPolicy", "ResilienceTest#retriesUntilAWorkerAnswers"),
    "retry_initial_backoff_ms": acts(
        "RetryPolicy", "RetryPolicyTest#backoffStartsAtTheInitialDelayGrowsByTheMultiplierAndStopsAtTheCap"),
    "retry_max_backoff_ms": acts(
        "RetryPolicy", "RetryPolicyTest#backoffStartsAtTheInitialDelayGrowsByTheMultiplierAndStopsAtTheCap"),
    "retry_backoff_multiplier": acts(
        "RetryPolicy", "RetryPolicyTest#backoffStartsAtTheInitialDelayGrowsByTheMultiplierAndStopsAtTheCap"),
    "retry_jitter_factor": acts("RetryPolicy", "RetryPolicyTest#jitterSpreadsTheBackoffWithinItsFactor"),
    "disable_retries": acts("RetryPolicy", "RetryPolicyTest#disableRetriesMeansOneAttempt",
                            "ResilienceTest#exhaustedRetriesRelayTheLastAnswer"),
    "health_failure_threshold": acts("Worker", "ResilienceTest#killedWorkerLosesItsSessionsAndNobodyHangs"),
    "health_success_threshold": acts("Worker", "WorkerTlsTest#healthChecksAndFanOutsVerifyTheCertificate"),
    "health_check_timeout_secs": acts("RouterServer", "FlagsActTest#aHealthCheckThatGetsNoAnswerFailsAtTheTimeout"),
    "health_check_interval_secs": acts("RouterServer", "ResilienceTest#killedWorkerLosesItsSessionsAndNobodyHangs"),
    "health_check_endpoint": acts("RouterServer", "FlagsActTest#healthCheckEndpointIsThePathTheRouterProbes"),
    "cb_failure_threshold": acts("Worker", "ResilienceTest#anOpenCircuitReceivesNothing"),
    "cb_success_threshold": acts("Worker", "ResilienceTest#anOpenCircuitClosesAfterItsTimeoutAndASuccess"),
    "cb_timeout_duration_secs": acts("Worker", "ResilienceTest#anOpenCircuitClosesAfterItsTimeoutAndASuccess"),
    "cb_window_duration_secs": acts("Worker", "CircuitBreakerTest#failuresOlderThanTheWindowDoNotCount",
                                    "WorkerTest#configuresFromRouterConfig"),
    "disable_circuit_breaker": acts("Worker", "CircuitBreakerTest#disabledBreakerNeverOpens",
                                    "WorkerTest#configuresFromRouterConfig"),
    "model_path": refused("--model-path", *UNSUPPORTED,
                          "test_flag_errors.py::test_a_flag_whose_feature_is_not_built_is_a_value_error"),
    "tokenizer_path": refused("--tokenizer-path", *UNSUPPORTED),
    "api_key_validation_urls": acts("RouteTable", "AdminTest#inboundKeysAreCheckedAgainstValidationUrls"),
    "admin_api_key": acts("RouteTable", "AdminTest#adminRoutesNeedTheAdminKey"),
    "router_temperature": acts("KvAwarePolicy", "KvAwarePolicyTest#aPositiveTemperatureSamplesEveryWorkerWithTheCheapestMostOften",
                               "ConfigValidatorTest#kvAwareParametersAreCheckedOnlyWhenKvAwareIsUsed"),
    "kv_penalty_host": acts("KvAwarePolicy", "ConfigValidatorTest#kvAwareParametersAreCheckedOnlyWhenKvAwareIsUsed"),
    "kv_penalty_external": acts("KvAwarePolicy", "ConfigValidatorTest#kvAwareParametersAreCheckedOnlyWhenKvAwareIsUsed"),
    "kv_penalty_disk": acts("KvAwarePolicy", "ConfigValidatorTest#kvAwareParametersAreCheckedOnlyWhenKvAwareIsUsed"),
    "kv_aware_session_affinity_ttl_secs": acts("KvAwarePolicy",
                                               "KvAwareTest#aSessionStaysOnItsWorkerWithinTheAffinityTtlAndFollowsResidencyAfterIt",
                                               "KvAwarePolicyTest#aSessionStaysOnItsWorkerWithinTheIdleTtlAndFollowsResidencyAfterIt",
                                               "ConfigValidatorTest#kvAwareSessionAffinityTtlOutsideOneSecondToOneYearIsRefusedWithUpstreamsMessage"),
    "kv_event_source": acts("StaticKvSources", "KvAwareTest#staticSourcesFromTheFlagsRouteTheSameWay",
                            "ConfigValidatorTest#staticKvEventSourcesAreCheckedWithUpstreamsMessages"),
    "kv_event_replay_source": acts("StaticKvSources", "KvAwareTest#staticSourcesFromTheFlagsRouteTheSameWay",
                                   "ConfigValidatorTest#staticKvEventSourcesAreCheckedWithUpstreamsMessages"),
    "kv_event_block_size": acts("RouterServer", "KvAwareTest#staticSourcesFromTheFlagsRouteTheSameWay"),
    "kv_event_model": acts("RouterServer", "KvAwareTest#staticSourcesFromTheFlagsRouteTheSameWay"),
    "pd_kv_events": acts("StaticKvSources",
                         "KvAwareTest#inPdModeARepeatedLongPromptIsPrefilledByThePrefillWorkerThatHoldsIt",
                         "ConfigValidatorTest#pdKvEventSourcesAreCheckedWithUpstreamsMessages",
                         "ConfigValidatorTest#pdKvEventSourcesThatCheckOutAreAcceptedInDpRankOrder"),
    "enable_program_scheduling": refused("--enable-program-scheduling", "ConfigValidatorTest#zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart"),
    "program_scheduling_config_json": refused("--enable-program-scheduling", "ConfigValidatorTest#zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart"),
    "wasm_middleware": refused("--wasm-middleware", "ConfigValidatorTest#zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart"),
    "wasm_middleware_sha256": refused("--wasm-middleware-sha256", "ConfigValidatorTest#zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart"),
    "wasm_middleware_routes": refused("--wasm-middleware-route", "ConfigValidatorTest#zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart"),
    "session_store": acts("RouterServer", "SharedStoreRoutersTest#threeRoutersShareSessionsAndARestartedRouterKeepsThem"),
    "session_id_headers": acts("RouteTable", "test_end_to_end.py::test_chosen_session_header_and_session_bound"),
    "session_id_body_fields": acts("RouteTable", "test_end_to_end.py::test_chosen_session_header_and_session_bound"),
    "max_sessions": acts("RouterServer", "FaultSuiteTest#distinctSessionIdsBeyondMaxSessionsAreEvictedNotKept",
                         "test_end_to_end.py::test_chosen_session_header_and_session_bound"),
}

# Fields without a flag of their own: from_cli_args sets them (a config file may still give them).
NO_FLAG = {"bootstrap_port_annotation"}
# Flags whose values land in a field of another name (from_cli_args parses them).
FLAG_DEST_TO_FIELD = {"prefill": "prefill_urls", "decode": "decode_urls"}


def camel(field: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), field)


def java_source(name: str, kind: str) -> Path:
    """The one source file of class `name` under java/*/src/{kind}/java."""
    found = list(JAVA.glob(f"*/src/{kind}/java/**/{name}.java"))
    assert len(found) == 1, f"{kind} class {name}: found {found}"
    return found[0]


def proof_exists(ref: str) -> Optional[str]:
    """None when the referenced test exists, else why not."""
    if "::" in ref:
        file, name = ref.split("::")
        path = REPO / "py_test" / file if (REPO / "py_test" / file).exists() else REPO / "py_test" / "unit" / file
        pattern = rf"\bdef {re.escape(name)}\("
    else:
        cls, name = ref.split("#")
        found = list(JAVA.glob(f"*/src/test/java/**/{cls}.java"))
        if len(found) != 1:
            return f"test class {cls}: found {found}"
        path = found[0]
        pattern = rf"\bvoid {re.escape(name)}\("
    if not path.exists():
        return f"{path} does not exist"
    if not re.search(pattern, path.read_text(encoding="utf-8")):
        return f"{path.relative_to(REPO)} has no test {name}"
    return None


def parser_flags():
    parser = argparse.ArgumentParser()
    RouterArgs.add_cli_args(parser)
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def test_the_table_covers_exactly_the_contracts_fields():
    contract = [f["name"] for f in config_contract()["fields"]]
    missing = [name for name in contract if name not in FLAGS]
    extra = [name for name in FLAGS if name not in contract]
    assert not missing, (f"fields with no entry in FLAGS: {missing}. Wire each into the engine and name the "
                         f"class that reads it and a test that shows it acting, or refuse it in {REFUSALS}")
    assert not extra, f"FLAGS names fields the contract does not have: {extra}"


def test_every_flag_of_the_parser_is_a_field_of_the_table():
    dests = {a.dest for a in parser_flags()}
    fields = {FLAG_DEST_TO_FIELD.get(d, d) for d in dests}
    assert fields <= set(FLAGS), f"flags whose field has no entry: {sorted(fields - set(FLAGS))}"
    assert set(FLAGS) - fields == NO_FLAG, f"fields without a flag: {sorted(set(FLAGS) - fields)}"


@pytest.mark.parametrize("field", sorted(FLAGS))
def test_the_reader_still_reads_the_field_and_the_proofs_exist(field):
    entry = FLAGS[field]
    assert entry.proofs, f"{field}: no test named"
    problems = [p for p in map(proof_exists, entry.proofs) if p]
    assert not problems, f"{field}: {problems}"
    if isinstance(entry, Acts):
        reads = entry.reads or f".{camel(field)}()"
        source = java_source(entry.reader, "main")
        assert reads in source.read_text(encoding="utf-8"), \
            f"{field}: {source.relative_to(REPO)} no longer has {reads!r}"
    else:
        refusals = java_source(entry.where, "main").read_text(encoding="utf-8")
        assert f'"{entry.flag}' in refusals and f"c.{camel(field)}()" in refusals, \
            f"{field}: {entry.where} no longer refuses {entry.flag}"


def test_refused_flags_are_flags_of_the_parser():
    options = {s for a in parser_flags() for s in a.option_strings}
    for field, entry in FLAGS.items():
        if isinstance(entry, Refused):
            assert entry.flag in options, f"{field}: {entry.flag} is not a flag"
