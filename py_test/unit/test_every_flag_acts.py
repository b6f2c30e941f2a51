"""The guard over every flag: none is accepted and then ignored.

For each field of the config contract (the RouterArgs fields the engine build is generated from)
the table below says how the router honours it: `Acts` names the settings slice that reads it (a
section of RouterSettings, which the engine builds once at start and hands out a section to each
component) and the tests that show it taking effect; `Refused` names the flag the engine refuses,
unless it keeps its default, because its feature is not built. The tests check the table against
the contract and the parser's flags, and check each entry against the sources: the slice still
reads the field and is still a section of RouterSettings that a component takes, the proving
tests still exist, the refusal is still there. A new flag fails here until a slice reads it and a
test proves it, or it is refused.

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
CONTRACT_FIELDS = {f["name"]: f for f in config_contract()["fields"]}
SECTIONS = "RouterSettings"


@dataclass(frozen=True)
class Acts:
    """The field is read by each of `slices` (sections of RouterSettings) and shown acting by `proofs`."""

    slices: Tuple[str, ...]
    proofs: Tuple[str, ...]
    # What a slice's source contains where it reads the field; default: the RouterConfig accessor call.
    reads: Optional[str] = None
    # (class, text): where the value the slice reads is derived from the field, when it is not read directly.
    derived: Optional[Tuple[str, str]] = None


@dataclass(frozen=True)
class Refused:
    """A non-default value is refused at start with '<flag> is not supported by this router'."""

    flag: str
    proofs: Tuple[str, ...]
    # The engine class that refuses it.
    where: str = REFUSALS


def acts(slices, *proofs, reads=None, derived=None):
    return Acts(slices if isinstance(slices, tuple) else (slices,), proofs, reads, derived)


def refused(flag, *proofs, where=REFUSALS):
    return Refused(flag, proofs, where)


UNSUPPORTED = ("UnsupportedFeaturesTest#refusesWithOneLineNamingTheFlag",
               "UnsupportedFeaturesTest#theDefaultsOfTheseFlagsPass")

FLAGS = {
    "worker_urls": acts("WorkerPoolSettings", "RoutingTest#sessionsStickAndBalanceThenRelease",
                        "WorkerTlsTest#proxiesToAnHttpsWorkerOverVerifiedTls"),
    "host": acts("ServerSettings", "EngineRunnerTest#sigtermDrainsInFlightRequestsAndExitsZero"),
    "port": acts("ServerSettings", "EngineRunnerTest#configErrorsAndBindFailuresPrintAnErrorLine"),
    "mini_lb": refused("--mini-lb", *UNSUPPORTED, "test_launch_router.py::test_mini_lb_is_refused"),
    "pd_disaggregation": acts(("WorkerPoolSettings", "PdSettings"),
                              "PdTest#bootstrapModeSendsBothWithBootstrapFields", reads="c.pdMode()",
                              derived=("RouterConfig", "pdDisaggregation ? PdMode.SGLANG_BOOTSTRAP")),
    "vllm_pd_disaggregation": acts(("WorkerPoolSettings", "PdSettings"), "PdTest#twoStageStickySessionsPerRole",
                                   reads="c.pdMode()", derived=("RouterConfig", "vllmPdDisaggregation ? PdMode.VLLM")),
    "prefill_urls": acts("WorkerPoolSettings", "PdTest#twoStageStickySessionsPerRole"),
    "decode_urls": acts("WorkerPoolSettings", "PdTest#twoStageStickySessionsPerRole"),
    "policy": acts(("PolicySettings", "DashboardSettings"), "PolicyRegistryTest#everyPolicyNameBuilds",
                   "test_end_to_end.py::test_launch_handle_in_a_training_loop"),
    "prefill_policy": acts("PolicySettings", "PolicyRegistryTest#explicitRolePoliciesWin"),
    "decode_policy": acts("PolicySettings", "PolicyRegistryTest#explicitRolePoliciesWin"),
    "worker_startup_timeout_secs": acts("HealthSettings", "ResilienceTest#startupWaitGivesUpWithUpstreamsMessage"),
    "worker_startup_check_interval": acts(
        ("HealthSettings", "DiscoverySettings"),
        "KubernetesPodSourceTest#anUnhealthyPodHoldsUpNoOtherAndIsRetriedInTheBackground"),
    "cache_threshold": acts("PolicySettings", "CacheAwarePolicyTest#matchBelowThresholdGoesToSmallestTree"),
    "balance_abs_threshold": acts("PolicySettings", "CacheAwarePolicyTest#imbalanceOverridesCache"),
    "balance_rel_threshold": acts("PolicySettings", "CacheAwarePolicyTest#imbalanceOverridesCache"),
    "eviction_interval_secs": acts(
        "PolicySettings", "CacheAwarePolicyTest#evictionRemovesLeastRecentlyUsedLeavesUntilUnderTheLimit"),
    "max_tree_size": acts(
        "PolicySettings", "CacheAwarePolicyTest#evictionRemovesLeastRecentlyUsedLeavesUntilUnderTheLimit"),
    "max_payload_size": acts("ServerSettings", "RoutingTest#bodyLimitIsExact"),
    "intra_node_data_parallel_size": acts("WorkerSettings", "PdTest#dataParallelRanksAreSeparateReplicas"),
    "enable_igw": refused("--enable-igw", *UNSUPPORTED,
                          "test_flag_errors.py::test_a_flag_whose_feature_is_not_built_is_a_value_error"),
    "api_key": acts("WorkerPoolSettings", "AdminTest#fallbackSendsTheOutboundKeyNotTheClients"),
    "log_dir": acts("LoggingSettings", "EngineRunnerTest#logsAlsoGoToAFileInTheLogDirectoryInTheStderrFormat",
                    "EngineRunnerTest#aLogDirectoryThatCannotBeWrittenIsAOneLineStartUpError",
                    "test_flag_errors.py::test_log_dir_is_created_and_gets_the_router_log"),
    "log_level": acts("LoggingSettings", "EngineRunnerTest#logLevelWarningKeepsWarningsAndLeavesTheInfoLinesOut"),
    "service_discovery": acts(
        "DiscoverySettings", "DiscoveryTest#aReadyPodIsRoutedToAndLeavesOnIpChangeRelabelAndDelete"),
    "selector": acts("DiscoverySettings", "PodRulesTest#regularModeNeedsEverySelectorPairAndAReadyRunningPodWithAnIp"),
    "service_discovery_port": acts(
        "DiscoverySettings", "PodRulesTest#regularModeNeedsEverySelectorPairAndAReadyRunningPodWithAnIp"),
    "service_discovery_namespace": acts(
        "DiscoverySettings", "KubernetesPodSourceTest#podBecomesAWorkerWhenReadyAndStopsBeingOneOnEveryWayOut",
        "KubernetesPodSourceTest#missingNamespaceAndMalformedSelectorAreLoggedAndDiscoveryGoesOn"),
    "prefill_selector": acts("DiscoverySettings", "PodRulesTest#pdModeChecksThePrefillSelectorFirstAndReadsTheBootstrapPort"),
    "decode_selector": acts("DiscoverySettings", "PodRulesTest#pdModeChecksThePrefillSelectorFirstAndReadsTheBootstrapPort"),
    "bootstrap_port_annotation": acts(
        "DiscoverySettings", "PodRulesTest#pdModeChecksThePrefillSelectorFirstAndReadsTheBootstrapPort"),
    "vllm_discovery_address": acts(
        "DiscoverySettings", "DiscoveryTest#vllmInstancesRegisterOverZmqAndExpireWhenTheyStopHeartbeating"),
    # nixl, the default, is what the vLLM PD stages do (kv_transfer_params pass from prefill to decode).
    "kv_connector": refused("--kv-connector", *UNSUPPORTED,
                            "test_flag_errors.py::test_a_flag_whose_feature_is_not_built_is_a_value_error"),
    "prometheus_port": acts("MetricsSettings", "RoutingTest#prometheusListenerServesUpstreamAndSessionMetrics",
                            reads="c.effectivePrometheusPort()"),
    "prometheus_host": acts("MetricsSettings", "RoutingTest#prometheusListenerServesUpstreamAndSessionMetrics",
                            reads="c.effectivePrometheusHost()"),
    "request_id_headers": acts("ServerSettings", "FlagsActTest#requestIdHeadersChooseWhereTheRequestIdIsTaken"),
    "request_timeout_secs": acts(("ServerSettings", "PdSettings"), "ResilienceTest#requestTimeoutAnswers504AndReleasesTheWorker"),
    "max_concurrent_requests": acts("AdmissionSettings", "ResilienceTest#limiterAnswers429WithRetryAfterAnd408FromTheQueue"),
    "queue_size": acts("AdmissionSettings", "ResilienceTest#limiterAnswers429WithRetryAfterAnd408FromTheQueue"),
    "queue_timeout_secs": acts("AdmissionSettings", "ResilienceTest#limiterAnswers429WithRetryAfterAnd408FromTheQueue"),
    "rate_limit_tokens_per_second": acts(
        "AdmissionSettings", "AdmissionLimiterTest#retryAfterIsTheWholeSecondsUntilTheNextToken"),
    "cors_allowed_origins": acts("ServerSettings", "FlagsActTest#corsAllowedOriginsAreTheOnlyOnesAllowed"),
    "retry_max_retries": acts("RetrySettings", "ResilienceTest#retriesUntilAWorkerAnswers"),
    "retry_initial_backoff_ms": acts(
        "RetrySettings", "RetryPolicyTest#backoffStartsAtTheInitialDelayGrowsByTheMultiplierAndStopsAtTheCap"),
    "retry_max_backoff_ms": acts(
        "RetrySettings", "RetryPolicyTest#backoffStartsAtTheInitialDelayGrowsByTheMultiplierAndStopsAtTheCap"),
    "retry_backoff_multiplier": acts(
        "RetrySettings", "RetryPolicyTest#backoffStartsAtTheInitialDelayGrowsByTheMultiplierAndStopsAtTheCap"),
    "retry_jitter_factor": acts("RetrySettings", "RetryPolicyTest#jitterSpreadsTheBackoffWithinItsFactor"),
    "disable_retries": acts("RetrySettings", "RetryPolicyTest#disableRetriesMeansOneAttempt",
                            "ResilienceTest#exhaustedRetriesRelayTheLastAnswer"),
    "health_failure_threshold": acts("WorkerSettings", "ResilienceTest#killedWorkerLosesItsSessionsAndNobodyHangs"),
    "health_success_threshold": acts("WorkerSettings", "WorkerTlsTest#healthChecksAndFanOutsVerifyTheCertificate"),
    "health_check_timeout_secs": acts("HealthSettings", "FlagsActTest#aHealthCheckThatGetsNoAnswerFailsAtTheTimeout"),
    "health_check_interval_secs": acts("HealthSettings", "ResilienceTest#killedWorkerLosesItsSessionsAndNobodyHangs"),
    "health_check_endpoint": acts("HealthSettings", "FlagsActTest#healthCheckEndpointIsThePathTheRouterProbes"),
    "cb_failure_threshold": acts("WorkerSettings", "ResilienceTest#anOpenCircuitReceivesNothing"),
    "cb_success_threshold": acts("WorkerSettings", "ResilienceTest#anOpenCircuitClosesAfterItsTimeoutAndASuccess"),
    "cb_timeout_duration_secs": acts("WorkerSettings", "ResilienceTest#anOpenCircuitClosesAfterItsTimeoutAndASuccess"),
    "cb_window_duration_secs": acts("WorkerSettings", "CircuitBreakerTest#failuresOlderThanTheWindowDoNotCount",
                                    "WorkerTest#configuresFromItsSettings"),
    "disable_circuit_breaker": acts("WorkerSettings", "CircuitBreakerTest#disabledBreakerNeverOpens",
                                    "WorkerTest#configuresFromItsSettings"),
    "model_path": refused("--model-path", *UNSUPPORTED,
                          "test_flag_errors.py::test_a_flag_whose_feature_is_not_built_is_a_value_error"),
    "tokenizer_path": refused("--tokenizer-path", *UNSUPPORTED),
    "api_key_validation_urls": acts("AuthSettings", "AdminTest#inboundKeysAreCheckedAgainstValidationUrls"),
    "admin_api_key": acts("AuthSettings", "AdminTest#adminRoutesNeedTheAdminKey"),
    "router_temperature": acts("PolicySettings", "KvAwarePolicyTest#aPositiveTemperatureSamplesEveryWorkerWithTheCheapestMostOften",
                               "ConfigValidatorTest#kvAwareParametersAreCheckedOnlyWhenKvAwareIsUsed"),
    "kv_penalty_host": acts("PolicySettings", "ConfigValidatorTest#kvAwareParametersAreCheckedOnlyWhenKvAwareIsUsed"),
    "kv_penalty_external": acts("PolicySettings", "ConfigValidatorTest#kvAwareParametersAreCheckedOnlyWhenKvAwareIsUsed"),
    "kv_penalty_disk": acts("PolicySettings", "ConfigValidatorTest#kvAwareParametersAreCheckedOnlyWhenKvAwareIsUsed"),
    "kv_aware_session_affinity_ttl_secs": acts("PolicySettings",
                                               "KvAwareTest#aSessionStaysOnItsWorkerWithinTheAffinityTtlAndFollowsResidencyAfterIt",
                                               "KvAwarePolicyTest#aSessionStaysOnItsWorkerWithinTheIdleTtlAndFollowsResidencyAfterIt",
                                               "ConfigValidatorTest#kvAwareSessionAffinityTtlOutsideOneSecondToOneYearIsRefusedWithUpstreamsMessage"),
    "sticky_balanced_group_margin": acts("PolicySettings",
                                         "StickyBalancedPolicyTest#theFlagsReachThePolicy",
                                         "StickyBalancedPolicyTest#aGroupJoinsItsWorkerWithinTheMarginAndLeavesItBeyond",
                                         "ConfigValidatorTest#stickyBalancedParametersAreCheckedOnlyWhenStickyBalancedIsUsed"),
    "sticky_balanced_move_margin": acts("PolicySettings",
                                        "StickyBalancedPolicyTest#theFlagsReachThePolicy",
                                        "StickyBalancedPolicyTest#aBoundSessionMovesOnlyWhenTheImbalanceOutweighsItsReprefill",
                                        "ConfigValidatorTest#stickyBalancedParametersAreCheckedOnlyWhenStickyBalancedIsUsed"),
    "sticky_balanced_move_kv_usage": acts("PolicySettings",
                                          "StickyBalancedPolicyTest#theFlagsReachThePolicy",
                                          "StickyBalancedPolicyTest#aSessionMovesOnlyOffAWorkerWhoseCacheIsContended",
                                          "ConfigValidatorTest#stickyBalancedParametersAreCheckedOnlyWhenStickyBalancedIsUsed"),
    "sticky_balanced_tool_hold_secs": acts("PolicySettings",
                                           "StickyBalancedPolicyTest#theFlagsReachThePolicy",
                                           "StickyBalancedPolicyTest#aWorkerHeldForASessionBetweenTurnsIsNotChosenWhileAnotherIsFree",
                                           "StickyBalancedPolicyTest#theHoldEndsWhenItExpires",
                                           "StickyBalancedPolicyTest#theHoldEndsWithTheSessionsNextTurn",
                                           "StickyBalancedPolicyTest#theHoldEndsWithFinishSession",
                                           "ConfigValidatorTest#stickyBalancedParametersAreCheckedOnlyWhenStickyBalancedIsUsed"),
    "sticky_balanced_group_by_kv": acts("PolicySettings",
                                        "StickyBalancedPolicyTest#theFlagsReachThePolicy",
                                        "StickyBalancedPolicyTest#aNewSessionJoinsTheWorkerHoldingItsPromptWithinTheMargin",
                                        "StickyBalancedPolicyTest#withoutAHolderOrWithoutTheFlagTheSessionIdRuleDecides",
                                        "ConfigValidatorTest#staticKvEventSourcesServeStickyBalancedOnlyWhenItGroupsByKv"),
    "sticky_balanced_group_separator": acts("PolicySettings",
                                            "StickyBalancedPolicyTest#theFlagsReachThePolicy",
                                            "StickyBalancedPolicyTest#groupKeysStripTheLastSeparatedPart"),
    "kv_event_source": acts("KvEventSettings", "KvAwareTest#staticSourcesFromTheFlagsRouteTheSameWay",
                            "ConfigValidatorTest#staticKvEventSourcesAreCheckedWithUpstreamsMessages"),
    "kv_event_replay_source": acts("KvEventSettings", "KvAwareTest#staticSourcesFromTheFlagsRouteTheSameWay",
                                   "ConfigValidatorTest#staticKvEventSourcesAreCheckedWithUpstreamsMessages"),
    "kv_event_block_size": acts("KvEventSettings", "KvAwareTest#staticSourcesFromTheFlagsRouteTheSameWay"),
    "kv_event_model": acts("KvEventSettings", "KvAwareTest#staticSourcesFromTheFlagsRouteTheSameWay"),
    "pd_kv_events": acts("KvEventSettings",
                         "KvAwareTest#inPdModeARepeatedLongPromptIsPrefilledByThePrefillWorkerThatHoldsIt",
                         "ConfigValidatorTest#pdKvEventSourcesAreCheckedWithUpstreamsMessages",
                         "ConfigValidatorTest#pdKvEventSourcesThatCheckOutAreAcceptedInDpRankOrder"),
    "enable_program_scheduling": refused("--enable-program-scheduling", "ConfigValidatorTest#zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart"),
    "program_scheduling_config_json": refused("--enable-program-scheduling", "ConfigValidatorTest#zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart"),
    "wasm_middleware": refused("--wasm-middleware", "ConfigValidatorTest#zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart"),
    "wasm_middleware_sha256": refused("--wasm-middleware-sha256", "ConfigValidatorTest#zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart"),
    "wasm_middleware_routes": refused("--wasm-middleware-route", "ConfigValidatorTest#zeroOneSeventeenFlagsThisRouterDoesNotImplementAreRefusedAtStart"),
    "session_store": acts("SessionSettings", "SharedStoreRoutersTest#threeRoutersShareSessionsAndARestartedRouterKeepsThem"),
    "session_id_headers": acts("SessionSettings", "test_end_to_end.py::test_chosen_session_header_and_session_bound"),
    "session_id_body_fields": acts("SessionSettings", "test_end_to_end.py::test_chosen_session_header_and_session_bound"),
    "max_sessions": acts("SessionSettings", "FaultSuiteTest#distinctSessionIdsBeyondMaxSessionsAreEvictedNotKept",
                         "test_end_to_end.py::test_chosen_session_header_and_session_bound"),
    "enable_trace": acts("TracingSettings",
                         "TracingTest#theServerSpanContinuesTheClientsTraceAndTheWorkerGetsTheClientSpansContext",
                         "TracingTest#withTracingOffTraceHeadersGoToTheWorkerVerbatim"),
    "otlp_traces_endpoint": acts("TracingSettings",
                                 "TracingTest#theServerSpanContinuesTheClientsTraceAndTheWorkerGetsTheClientSpansContext",
                                 "TracingSettingsTest#aMalformedEndpointIsUpstreamsExporterError",
                                 "test_tracing_flags.py::test_a_malformed_endpoint_is_a_start_error"),
    "otel_sampling_ratio": acts("TracingSettings",
                                "TracingTest#samplingRatioZeroFollowsOnlyASampledClientAndExcludedPathsAreNeverTraced",
                                "TracingSettingsTest#aSamplingRatioOutsideZeroToOneIsUpstreamsError",
                                "test_tracing_flags.py::test_a_sampling_ratio_outside_zero_to_one_is_a_start_error"),
    "otel_excluded_paths": acts("TracingSettings",
                                "TracingTest#samplingRatioZeroFollowsOnlyASampledClientAndExcludedPathsAreNeverTraced"),
}

# Fields without a flag of their own: from_cli_args sets them (a config file may still give them).
NO_FLAG = {"bootstrap_port_annotation"}
# Flags whose values land in a field of another name (from_cli_args parses them).
FLAG_DEST_TO_FIELD = {"prefill": "prefill_urls", "decode": "decode_urls"}


# The kv event sources are parsed and checked by StaticKvSources, which the KV slice calls.
for _field in ("kv_event_source", "kv_event_replay_source", "pd_kv_events"):
    FLAGS[_field] = Acts(FLAGS[_field].slices, FLAGS[_field].proofs, "StaticKvSources.of(c)",
                         ("StaticKvSources", f"c.{re.sub(r'_([a-z])', lambda m: m.group(1).upper(), _field)}()"))


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
def test_a_slice_still_reads_the_field_and_the_proofs_exist(field):
    entry = FLAGS[field]
    assert entry.proofs, f"{field}: no test named"
    problems = [p for p in map(proof_exists, entry.proofs) if p]
    assert not problems, f"{field}: {problems}"
    if isinstance(entry, Acts):
        assert entry.slices, f"{field}: no slice reads it"
        sections = section_types()
        reads = entry.reads or f"c.{camel(field)}()"
        for name in entry.slices:
            assert name in sections, f"{field}: {name} is not a section of {SECTIONS} ({sections})"
            source = java_source(name, "main")
            assert reads in source.read_text(encoding="utf-8"), \
                f"{field}: {source.relative_to(REPO)} no longer has {reads!r}"
        if entry.derived:
            cls, text = entry.derived
            source = java_source(cls, "main")
            assert text in source.read_text(encoding="utf-8"), \
                f"{field}: {source.relative_to(REPO)} no longer has {text!r}"
    else:
        refusals = java_source(entry.where, "main").read_text(encoding="utf-8")
        # The words are in the refusing class, or in the contract (which both sides refuse with).
        contract_refusal = CONTRACT_FIELDS[field].get("refusal", "")
        words = f'"{entry.flag}' in refusals or (contract_refusal.startswith(f"{entry.flag} is not supported")
                                                 and f'field("{field}").refusal()' in refusals)
        assert words and f"c.{camel(field)}()" in refusals, \
            f"{field}: {entry.where} no longer refuses {entry.flag}"


def sections():
    """RouterSettings' components, type by accessor: the slices the engine hands to its components."""
    source = java_source(SECTIONS, "main").read_text(encoding="utf-8")
    header = re.search(rf"public record {SECTIONS}\((.*?)\)\s*\{{", source, re.S)
    assert header, f"{SECTIONS} is no longer a record"
    return dict(reversed(component.split()) for component in header.group(1).split(","))


def section_types():
    return list(sections().values())


@pytest.mark.parametrize("accessor,section", sorted(sections().items()))
def test_every_slice_is_read_and_taken_by_a_component(accessor, section):
    """A slice no flag of the table is read by, or that no engine class takes or reads, is a section for nothing."""
    assert any(isinstance(e, Acts) and section in e.slices for e in FLAGS.values()), \
        f"{section}: no field of the table names it"
    own = {java_source(section, "main"), java_source(SECTIONS, "main")}
    used = re.compile(rf"\b{section}\b|\bsettings\.{accessor}\(\)")
    takers = [p for p in JAVA.glob("*/src/main/java/**/*.java")
              if p not in own and used.search(p.read_text(encoding="utf-8"))]
    assert takers, f"{section}: no engine class takes it"


def test_refused_flags_are_flags_of_the_parser():
    options = {s for a in parser_flags() for s in a.option_strings}
    for field, entry in FLAGS.items():
        if isinstance(entry, Refused):
            assert entry.flag in options, f"{field}: {entry.flag} is not a flag"
