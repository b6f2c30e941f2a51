"""RouterArgs: the one definition of every router flag and configuration field.

`RouterArgs` -> `router_args_to_config_json` -> the engine's RouterConfig is the only way a
configuration reaches the Java engine, whichever entry point is used (CPython `launch_router`,
the GraalPy-hosted `vllm-router launch ...`, or a config file). The engine does not repeat the
fields: its build generates their names, types, defaults and choices (the policy names among
them) from this module (`vllm_router.config_contract`).

This module also runs under GraalPy, in the launcher JVM and in `vllm-router python` programs,
where every imported module costs (it is interpreted), so it imports only what a RouterArgs and its
JSON need: dataclasses and json. argparse is imported where a command line is parsed
(`parse_router_args`, `CustomHelpFormatter`; `add_cli_args` is handed a parser), `logging` when the
module-level `logger` is first used. The fields' annotations are typing objects, as upstream's
(`dataclasses.fields(RouterArgs)[i].type` is `Optional[str]`, not a string), so `typing` is
imported; annotations that would need argparse are strings.
"""

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

POLICY_CHOICES = [
    "random",
    "round_robin",
    "cache_aware",
    "kv_aware",
    "power_of_two",
    "consistent_hash",
    "sticky_least_loaded",
    "rendezvous_hash",
    "sticky_balanced",
]
LOG_LEVEL_CHOICES = ["debug", "info", "warning", "error", "critical"]
KV_CONNECTOR_CHOICES = ["nixl", "mooncake", "moriio"]
DEFAULT_BOOTSTRAP_PORT_ANNOTATION = "vllm.ai/bootstrap-port"
# Where upstream looks for a session id, highest priority first: these headers, then these body
# fields (top level, or `parent.child` one level down).
DEFAULT_SESSION_ID_HEADERS = [
    "x-session-id", "x-user-id", "x-tenant-id", "x-correlation-id", "x-request-id", "x-trace-id",
]
DEFAULT_SESSION_ID_BODY_FIELDS = ["session_params.session_id", "user", "session_id", "user_id"]
# Paths whose requests are never traced: 0.1.17's default for --otel-excluded-paths.
DEFAULT_OTEL_EXCLUDED_PATHS = ["/health", "/health_generate", "/liveness", "/readiness"]
# Fields whose value must lie within bounds (0.1.17's), and the message when it does not. The engine
# takes both from the config contract, so a config file it reads is held to the same words.
FIELD_RANGES = {"kv_aware_session_affinity_ttl_secs": (1, 31536000)}
# Refusals `launch_router` makes itself, before the engine runs (upstream would run Python code for
# them); the engine refuses a config file that asks for the same with the same words.
FIELD_REFUSALS = {
    "mini_lb": "--mini-lb is not supported by this router (upstream's Python debug balancer is not part "
               "of this package; use --vllm-pd-disaggregation)",
}


def range_error(name: str) -> str:
    """The message for a value of `name` outside `FIELD_RANGES[name]`."""
    low, high = FIELD_RANGES[name]
    return f"{name} must be between {low} and {high}"


def __getattr__(name: str):
    # `logger` is created on first use: GraalPy interprets every import (docs/perf/startup.md),
    # and a launch only logs for PD policy notes. It stays a module attribute (upstream's tests patch it).
    if name == "logger":
        import logging

        global logger
        logger = logging.getLogger(__name__)
        return logger
    # Subclasses argparse's formatters, so it is defined when first asked for (a command line is
    # parsed), not when a program imports RouterArgs.
    if name == "CustomHelpFormatter":
        global CustomHelpFormatter
        CustomHelpFormatter = _custom_help_formatter()
        return CustomHelpFormatter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _logger():
    """The module's `logger` (or what a test patched in), created on first use."""
    return sys.modules[__name__].logger


def _one_of(choices):
    """An argparse `type` accepting one of `choices`, with the same error text on every Python:
    argparse's own `choices=` message changed in 3.12.x (GraalPy 25 has the new wording)."""

    def check(value: str) -> str:
        if value not in choices:
            import argparse

            listed = ", ".join(repr(c) for c in choices)
            raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from {listed})")
        return value

    # The config contract (vllm_router.config_contract) reads the choices from the parser.
    check.choices = choices
    return check


def _choices_metavar(choices) -> str:
    return "{" + ",".join(choices) + "}"


@dataclass
class RouterArgs:
    # Worker configuration
    worker_urls: List[str] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 30000

    # PD disaggregation. `pd_disaggregation` (SGLang bootstrap mode) is kept because trainers
    # read it even when they never set it.
    mini_lb: bool = False
    pd_disaggregation: bool = False
    vllm_pd_disaggregation: bool = False
    prefill_urls: List[tuple] = field(default_factory=list)  # (url, bootstrap port or None)
    decode_urls: List[str] = field(default_factory=list)

    # Routing policy
    policy: str = "cache_aware"
    prefill_policy: Optional[str] = None  # None => use `policy`
    decode_policy: Optional[str] = None  # None => use `policy`
    worker_startup_timeout_secs: int = 600
    worker_startup_check_interval: int = 30
    cache_threshold: float = 0.3
    balance_abs_threshold: int = 64
    balance_rel_threshold: float = 1.5
    eviction_interval_secs: int = 120
    max_tree_size: int = 2**26
    max_payload_size: int = 512 * 1024 * 1024  # 512 MiB
    intra_node_data_parallel_size: int = 1
    enable_igw: bool = False
    api_key: Optional[str] = None
    log_dir: Optional[str] = None
    log_level: Optional[str] = None

    # Service discovery
    service_discovery: bool = False
    selector: Dict[str, str] = field(default_factory=dict)
    service_discovery_port: int = 80
    service_discovery_namespace: Optional[str] = None
    prefill_selector: Dict[str, str] = field(default_factory=dict)
    decode_selector: Dict[str, str] = field(default_factory=dict)
    bootstrap_port_annotation: str = DEFAULT_BOOTSTRAP_PORT_ANNOTATION
    vllm_discovery_address: Optional[str] = None
    kv_connector: str = "nixl"

    # Prometheus (None => 29000 / 127.0.0.1; the engine always starts the listener)
    prometheus_port: Optional[int] = None
    prometheus_host: Optional[str] = None

    # Request handling
    request_id_headers: Optional[List[str]] = None
    request_timeout_secs: int = 1800
    max_concurrent_requests: int = 32768
    queue_size: int = 100
    queue_timeout_secs: int = 60
    rate_limit_tokens_per_second: Optional[int] = None
    cors_allowed_origins: List[str] = field(default_factory=list)

    # Retries
    retry_max_retries: int = 5
    retry_initial_backoff_ms: int = 50
    retry_max_backoff_ms: int = 30_000
    retry_backoff_multiplier: float = 1.5
    retry_jitter_factor: float = 0.2
    disable_retries: bool = False

    # Health checks
    health_failure_threshold: int = 3
    health_success_threshold: int = 2
    health_check_timeout_secs: int = 5
    health_check_interval_secs: int = 60
    health_check_endpoint: str = "/health"

    # Circuit breaker
    cb_failure_threshold: int = 10
    cb_success_threshold: int = 3
    cb_timeout_duration_secs: int = 60
    cb_window_duration_secs: int = 120
    disable_circuit_breaker: bool = False

    # Tokenizer (gRPC mode)
    model_path: Optional[str] = None
    tokenizer_path: Optional[str] = None

    # kv_aware
    router_temperature: float = 0.0
    kv_penalty_host: float = 0.8
    kv_penalty_external: float = 0.6
    kv_penalty_disk: float = 0.3
    kv_aware_session_affinity_ttl_secs: Optional[int] = None

    # sticky_balanced
    sticky_balanced_group_margin: float = 1.0
    sticky_balanced_group_separator: str = "_"
    sticky_balanced_move_margin: float = 8.0
    sticky_balanced_move_kv_usage: float = 0.5
    sticky_balanced_tool_hold_secs: float = 0.0
    sticky_balanced_group_by_kv: bool = False
    kv_event_source: List[str] = field(default_factory=list)
    kv_event_replay_source: List[str] = field(default_factory=list)
    kv_event_block_size: int = 16
    kv_event_model: Optional[str] = None
    pd_kv_events: List[str] = field(default_factory=list)

    # Program scheduling and WASM middleware: parsed as upstream does, rejected by the engine
    enable_program_scheduling: bool = False
    program_scheduling_config_json: Optional[str] = None
    wasm_middleware: Optional[str] = None
    wasm_middleware_sha256: Optional[str] = None
    wasm_middleware_routes: List[str] = field(default_factory=list)

    # Beyond upstream's RouterArgs: inbound authentication
    api_key_validation_urls: List[str] = field(default_factory=list)
    admin_api_key: Optional[str] = None

    # Beyond upstream's RouterArgs: where sticky sessions live. "memory" keeps them in this
    # router; a Redis URL shares them with every router that names the same store.
    session_store: str = "memory"

    # Beyond upstream's RouterArgs: where sticky session ids come from, and how many are kept
    session_id_headers: List[str] = field(default_factory=lambda: list(DEFAULT_SESSION_ID_HEADERS))
    session_id_body_fields: List[str] = field(
        default_factory=lambda: list(DEFAULT_SESSION_ID_BODY_FIELDS))
    max_sessions: int = 1_000_000

    # OpenTelemetry traces: 0.1.17's Rust command line and native Router (enable_trace,
    # otlp_traces_endpoint); its Python launcher has no such flags.
    enable_trace: bool = False
    otlp_traces_endpoint: Optional[str] = None
    otel_sampling_ratio: float = 1.0
    otel_excluded_paths: List[str] = field(default_factory=lambda: list(DEFAULT_OTEL_EXCLUDED_PATHS))

    @staticmethod
    def add_cli_args(
        parser: "argparse.ArgumentParser",
        use_router_prefix: bool = False,
        exclude_host_port: bool = False,
    ) -> None:
        """Add the router flags to `parser`.

        With `use_router_prefix`, every flag except --host, --port and --worker-urls becomes
        --router-<flag> (dest router_<field>), so the flags can live beside a server's own.
        """
        p = "router-" if use_router_prefix else ""

        if not exclude_host_port:
            parser.add_argument("--host", type=str, default=RouterArgs.host,
                                help="Host address to bind the router server")
            parser.add_argument("--port", type=int, default=RouterArgs.port,
                                help="Port number to bind the router server")

        parser.add_argument("--worker-urls", type=str, nargs="*", default=[],
                            help="List of worker URLs (e.g. http://worker1:8000 http://worker2:8000)")

        parser.add_argument(f"--{p}policy", type=_one_of(POLICY_CHOICES), default=RouterArgs.policy,
                            metavar=_choices_metavar(POLICY_CHOICES),
                            help="Load balancing policy; in PD mode also the default for "
                                 "prefill and decode")
        parser.add_argument(f"--{p}prefill-policy", type=_one_of(POLICY_CHOICES), default=None,
                            metavar=_choices_metavar(POLICY_CHOICES),
                            help="Policy for prefill nodes in PD mode (default: --policy)")
        parser.add_argument(f"--{p}decode-policy", type=_one_of(POLICY_CHOICES), default=None,
                            metavar=_choices_metavar(POLICY_CHOICES),
                            help="Policy for decode nodes in PD mode (default: --policy)")

        parser.add_argument(f"--{p}mini-lb", action="store_true",
                            help="Use the Python mini load balancer (debugging only; not "
                                 "available in this package)")
        parser.add_argument(f"--{p}pd-disaggregation", action="store_true",
                            help="Enable PD disaggregated mode (SGLang bootstrap style)")
        parser.add_argument(f"--{p}vllm-pd-disaggregation", action="store_true",
                            help="Enable vLLM PD disaggregated mode (prefill, then decode)")
        parser.add_argument(f"--{p}prefill", nargs="+", action="append",
                            metavar=("URL", "BOOTSTRAP_PORT"),
                            help="Prefill server URL and optional bootstrap port "
                                 "(a number or 'none'); repeat for several servers")
        parser.add_argument(f"--{p}decode", nargs=1, action="append", metavar="URL",
                            help="Decode server URL; repeat for several servers")

        parser.add_argument(f"--{p}worker-startup-timeout-secs", type=int,
                            default=RouterArgs.worker_startup_timeout_secs,
                            help="Seconds to wait for a worker to become healthy at start-up")
        parser.add_argument(f"--{p}worker-startup-check-interval", type=int,
                            default=RouterArgs.worker_startup_check_interval,
                            help="Seconds between worker health checks during start-up")
        parser.add_argument(f"--{p}cache-threshold", type=float,
                            default=RouterArgs.cache_threshold,
                            help="cache_aware: prefix match ratio (0.0-1.0) above which the "
                                 "matching worker is used")
        parser.add_argument(f"--{p}balance-abs-threshold", type=int,
                            default=RouterArgs.balance_abs_threshold,
                            help="cache_aware: load difference that counts as imbalance")
        parser.add_argument(f"--{p}balance-rel-threshold", type=float,
                            default=RouterArgs.balance_rel_threshold,
                            help="cache_aware: load ratio that counts as imbalance")
        parser.add_argument(f"--{p}eviction-interval-secs", type=int,
                            default=RouterArgs.eviction_interval_secs,
                            help="cache_aware: seconds between prefix-tree evictions")
        parser.add_argument(f"--{p}max-tree-size", type=int, default=RouterArgs.max_tree_size,
                            help="cache_aware: maximum prefix-tree size")
        parser.add_argument(f"--{p}max-payload-size", type=int,
                            default=RouterArgs.max_payload_size,
                            help="Maximum request body size in bytes")
        parser.add_argument(f"--{p}intra-node-data-parallel-size", type=int,
                            default=RouterArgs.intra_node_data_parallel_size,
                            help="Data-parallel ranks per worker URL (>1 enables DP-aware routing)")
        parser.add_argument(f"--{p}enable-igw", action="store_true",
                            help="Enable inference-gateway (multi-model) mode")
        parser.add_argument(f"--{p}api-key", type=str, default=None,
                            help="API key sent to the workers")
        parser.add_argument(f"--{p}log-dir", type=str, default=None,
                            help="Directory for log files (default: console only)")
        parser.add_argument(f"--{p}log-level", type=_one_of(LOG_LEVEL_CHOICES), default="info",
                            metavar=_choices_metavar(LOG_LEVEL_CHOICES), help="Log level")

        parser.add_argument(f"--{p}service-discovery", action="store_true",
                            help="Discover workers as Kubernetes pods")
        parser.add_argument(f"--{p}selector", type=str, nargs="+", default={},
                            help="Pod label selector, key=value pairs (regular mode)")
        parser.add_argument(f"--{p}service-discovery-port", type=int,
                            default=RouterArgs.service_discovery_port,
                            help="Port of discovered workers")
        parser.add_argument(f"--{p}service-discovery-namespace", type=str, default=None,
                            help="Kubernetes namespace to watch (default: all)")
        parser.add_argument(f"--{p}prefill-selector", type=str, nargs="+", default={},
                            help="Pod label selector for prefill servers (PD mode)")
        parser.add_argument(f"--{p}decode-selector", type=str, nargs="+", default={},
                            help="Pod label selector for decode servers (PD mode)")
        parser.add_argument(f"--{p}vllm-discovery-address", type=str, default=None,
                            help="HOST:PORT where vLLM instances register over ZMQ in PD mode "
                                 "(e.g. 0.0.0.0:30001)")
        parser.add_argument(f"--{p}kv-connector", type=_one_of(KV_CONNECTOR_CHOICES), default=RouterArgs.kv_connector,
                            metavar=_choices_metavar(KV_CONNECTOR_CHOICES), help="KV connector for PD mode")

        parser.add_argument(f"--{p}prometheus-port", type=int, default=29000,
                            help="Port of the Prometheus metrics listener")
        parser.add_argument(f"--{p}prometheus-host", type=str, default="127.0.0.1",
                            help="Bind address of the Prometheus metrics listener")
        parser.add_argument(f"--{p}request-id-headers", type=str, nargs="*",
                            help="Headers that carry the request id (default: x-request-id "
                                 "and friends)")
        parser.add_argument(f"--{p}request-timeout-secs", type=int,
                            default=RouterArgs.request_timeout_secs,
                            help="Timeout for requests to workers, in seconds")

        parser.add_argument(f"--{p}retry-max-retries", type=int,
                            default=RouterArgs.retry_max_retries, help="Maximum attempts")
        parser.add_argument(f"--{p}retry-initial-backoff-ms", type=int,
                            default=RouterArgs.retry_initial_backoff_ms,
                            help="First retry back-off, ms")
        parser.add_argument(f"--{p}retry-max-backoff-ms", type=int,
                            default=RouterArgs.retry_max_backoff_ms,
                            help="Largest retry back-off, ms")
        parser.add_argument(f"--{p}retry-backoff-multiplier", type=float,
                            default=RouterArgs.retry_backoff_multiplier,
                            help="Back-off growth factor")
        parser.add_argument(f"--{p}retry-jitter-factor", type=float,
                            default=RouterArgs.retry_jitter_factor,
                            help="Back-off jitter, 0.0-1.0")
        parser.add_argument(f"--{p}disable-retries", action="store_true",
                            help="Disable retries (same as --retry-max-retries 1)")

        parser.add_argument(f"--{p}cb-failure-threshold", type=int,
                            default=RouterArgs.cb_failure_threshold,
                            help="Consecutive failures that open a worker's circuit")
        parser.add_argument(f"--{p}cb-success-threshold", type=int,
                            default=RouterArgs.cb_success_threshold,
                            help="Successes in half-open state that close the circuit")
        parser.add_argument(f"--{p}cb-timeout-duration-secs", type=int,
                            default=RouterArgs.cb_timeout_duration_secs,
                            help="Seconds an open circuit waits before half-open")
        parser.add_argument(f"--{p}cb-window-duration-secs", type=int,
                            default=RouterArgs.cb_window_duration_secs,
                            help="Circuit-breaker window, seconds")
        parser.add_argument(f"--{p}disable-circuit-breaker", action="store_true",
                            help="Disable the circuit breaker")

        parser.add_argument(f"--{p}health-failure-threshold", type=int,
                            default=RouterArgs.health_failure_threshold,
                            help="Failed checks that mark a worker unhealthy")
        parser.add_argument(f"--{p}health-success-threshold", type=int,
                            default=RouterArgs.health_success_threshold,
                            help="Passed checks that mark a worker healthy")
        parser.add_argument(f"--{p}health-check-timeout-secs", type=int,
                            default=RouterArgs.health_check_timeout_secs,
                            help="Timeout of one health check, seconds")
        parser.add_argument(f"--{p}health-check-interval-secs", type=int,
                            default=RouterArgs.health_check_interval_secs,
                            help="Seconds between health checks")
        parser.add_argument(f"--{p}health-check-endpoint", type=str,
                            default=RouterArgs.health_check_endpoint,
                            help="Worker health check path")

        parser.add_argument(f"--{p}max-concurrent-requests", type=int,
                            default=RouterArgs.max_concurrent_requests,
                            help="Concurrent request limit (token-bucket capacity)")
        parser.add_argument(f"--{p}queue-size", type=int, default=RouterArgs.queue_size,
                            help="Requests that may wait for a token (0: reject at once)")
        parser.add_argument(f"--{p}queue-timeout-secs", type=int,
                            default=RouterArgs.queue_timeout_secs,
                            help="Longest wait in the queue, seconds")
        parser.add_argument(f"--{p}rate-limit-tokens-per-second", type=int, default=None,
                            help="Token refill rate (default: --max-concurrent-requests)")
        parser.add_argument(f"--{p}cors-allowed-origins", type=str, nargs="*", default=[],
                            help="Allowed CORS origins (default: any)")

        parser.add_argument(f"--{p}model-path", type=str, default=None,
                            help="Model path, used to load the tokenizer (gRPC mode)")
        parser.add_argument(f"--{p}tokenizer-path", type=str, default=None,
                            help="Tokenizer path (gRPC mode)")

        parser.add_argument(f"--{p}router-temperature", type=float, default=RouterArgs.router_temperature,
                            help="kv_aware: 0 picks the cheapest worker; above 0 samples a softmax "
                                 "over -cost/T (regular mode)")
        parser.add_argument(f"--{p}kv-penalty-host", type=float, default=RouterArgs.kv_penalty_host,
                            help="kv_aware: credit of a prefix block in host (CPU) memory, 0.0-1.0")
        parser.add_argument(f"--{p}kv-penalty-external", type=float,
                            default=RouterArgs.kv_penalty_external,
                            help="kv_aware: credit of a prefix block in an external KV store, 0.0-1.0")
        parser.add_argument(f"--{p}kv-penalty-disk", type=float, default=RouterArgs.kv_penalty_disk,
                            help="kv_aware: credit of a prefix block on disk, 0.0-1.0")
        parser.add_argument(f"--{p}kv-aware-session-affinity-ttl-secs", type=int, default=None,
                            help="kv_aware: keep a session on its worker while idle at most this long")
        parser.add_argument(f"--{p}sticky-balanced-group-margin", type=float,
                            default=RouterArgs.sticky_balanced_group_margin,
                            help="sticky_balanced: a new session joins its group's worker while that worker's "
                                 "projected load exceeds the least loaded one's by at most this many times the "
                                 "session's prompt (0: only when it is the least loaded)")
        parser.add_argument(f"--{p}sticky-balanced-group-separator", type=str,
                            default=RouterArgs.sticky_balanced_group_separator,
                            help="sticky_balanced: a session's group is its id up to the last occurrence of this "
                                 "text (SkyRL's '{instance_id}_{repetition_id}' gives the instance id); "
                                 "empty: no groups")
        parser.add_argument(f"--{p}sticky-balanced-move-margin", type=float,
                            default=RouterArgs.sticky_balanced_move_margin,
                            help="sticky_balanced: a bound session moves to the least loaded worker when its own "
                                 "worker's projected load exceeds that one's by more than this many times the "
                                 "session's context, the tokens the move prefills again (0: never moves)")
        parser.add_argument(f"--{p}sticky-balanced-move-kv-usage", type=float,
                            default=RouterArgs.sticky_balanced_move_kv_usage,
                            help="sticky_balanced: moves leave only a worker whose last /metrics sample shows "
                                 "a KV cache usage at least this high, 0.0-1.0")
        parser.add_argument(f"--{p}sticky-balanced-tool-hold-secs", type=float,
                            default=RouterArgs.sticky_balanced_tool_hold_secs,
                            help="sticky_balanced: after a session's turn ends, its prompt stays counted on its "
                                 "worker for this long (a tool call's wait), unless its next turn or "
                                 "finish_session comes first, 0.0-3600.0 (0: no hold)")
        parser.add_argument(f"--{p}sticky-balanced-group-by-kv", action="store_true",
                            help="sticky_balanced: a new session's group home is the worker whose KV cache holds "
                                 "the most of its prompt, from the KV-event index (opened as for kv_aware); the "
                                 "session-id rule decides when no worker holds any of it")
        parser.add_argument(f"--{p}kv-event-source",
                            action="append", default=[], metavar="WORKER_URL=ENDPOINT[,ENDPOINT...]",
                            help="kv_aware: a worker's KV event endpoints (one per DP rank)")
        parser.add_argument(f"--{p}kv-event-replay-source",
                            action="append", default=[], metavar="WORKER_URL=ENDPOINT[,ENDPOINT...]",
                            help="kv_aware: a worker's KV replay endpoints (one per DP rank)")
        parser.add_argument(f"--{p}kv-event-block-size", type=int, default=RouterArgs.kv_event_block_size,
                            help="kv_aware: block size of the static KV event sources")
        parser.add_argument(f"--{p}kv-event-model", type=str, default=None,
                            help="kv_aware: model identity of the static KV event sources")
        parser.add_argument(f"--{p}pd-kv-events",
                            action="append", default=[], metavar="WORKER_URL=ENDPOINT[,ENDPOINT...]",
                            help="kv_aware in PD mode: a prefill worker's KV event endpoints")
        parser.add_argument(f"--{p}enable-program-scheduling", action="store_true",
                            help="Program scheduling (not supported by this router)")
        parser.add_argument(f"--{p}program-scheduling-config-json", type=str, default=None,
                            help="Program scheduling configuration (not supported by this router)")
        parser.add_argument(f"--{p}wasm-middleware", type=str, default=None,
                            help="WASM OnRequest middleware component (not supported by this router)")
        parser.add_argument(f"--{p}wasm-middleware-sha256", type=str, default=None,
                            help="SHA-256 of the WASM middleware component")
        parser.add_argument(f"--{p}wasm-middleware-route", dest=f"{p.replace('-', '_')}wasm_middleware_routes",
                            action="append", default=[], help="Route the WASM middleware applies to")

        parser.add_argument(f"--{p}api-key-validation-urls", type=str, nargs="*", default=[],
                            help="URLs that validate inbound bearer tokens (GET with the same "
                                 "token; first 200 accepts). Empty: no inbound check")
        parser.add_argument(f"--{p}admin-api-key", type=str, default=None,
                            help="Bearer key required on admin routes and /finish_session")
        parser.add_argument(f"--{p}session-store", type=str, default=RouterArgs.session_store,
                            metavar="URL",
                            help="Where sticky sessions live: 'memory' (this router only) or a "
                                 "Redis URL, redis://[user:pass@]host:port[/db] (rediss:// for "
                                 "TLS), shared by every router that names it")
        parser.add_argument(f"--{p}session-id-headers", type=str, nargs="*", metavar="NAME",
                            default=list(DEFAULT_SESSION_ID_HEADERS),
                            help="Headers that carry a sticky session id, highest priority first "
                                 "(none: no header does). RL trainers: x-session-id alone, so a "
                                 "gateway's per-request x-request-id does not start a session")
        parser.add_argument(f"--{p}session-id-body-fields", type=str, nargs="*", metavar="FIELD",
                            default=list(DEFAULT_SESSION_ID_BODY_FIELDS),
                            help="JSON body fields (top level, or parent.child) that carry a "
                                 "sticky session id when no header does, highest priority first "
                                 "(none: the body never does)")
        parser.add_argument(f"--{p}max-sessions", type=int, default=RouterArgs.max_sessions,
                            help="Sticky sessions kept per policy; when full, a new session "
                                 "evicts the least recently used one")
        parser.add_argument(f"--{p}enable-trace", action="store_true",
                            help="Export OpenTelemetry spans of each request (OTLP)")
        parser.add_argument(f"--{p}otlp-traces-endpoint", type=str, default=None, metavar="URL",
                            help="OTLP collector the spans go to; host:port means http://host:port "
                                 "(default: $OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4317)")
        parser.add_argument(f"--{p}otel-sampling-ratio", type=float, default=RouterArgs.otel_sampling_ratio,
                            help="Share of new traces sampled, 0.0-1.0 (a client's sampled parent "
                                 "is always followed)")
        parser.add_argument(f"--{p}otel-excluded-paths", type=str, nargs="*", metavar="PATH",
                            default=list(DEFAULT_OTEL_EXCLUDED_PATHS),
                            help="Request paths that are never traced")

    @classmethod
    def from_cli_args(cls, args: "argparse.Namespace", use_router_prefix: bool = False) -> "RouterArgs":
        """Build RouterArgs from a namespace made by a parser that `add_cli_args` filled."""
        prefix = "router_" if use_router_prefix else ""
        values = vars(args)
        collected = {}
        for f in dataclasses.fields(cls):
            if prefix + f.name in values:
                collected[f.name] = values[prefix + f.name]
            elif f.name in values:
                collected[f.name] = values[f.name]
        collected["prefill_urls"] = cls._parse_prefill_urls(values.get(f"{prefix}prefill"))
        collected["decode_urls"] = cls._parse_decode_urls(values.get(f"{prefix}decode"))
        collected["selector"] = cls._parse_selector(values.get(f"{prefix}selector"))
        collected["prefill_selector"] = cls._parse_selector(values.get(f"{prefix}prefill_selector"))
        collected["decode_selector"] = cls._parse_selector(values.get(f"{prefix}decode_selector"))
        collected["bootstrap_port_annotation"] = DEFAULT_BOOTSTRAP_PORT_ANNOTATION
        return cls(**collected)

    def _validate_router_args(self) -> None:
        """Python-side checks run by launch_router; the engine validates everything else."""
        for name, (low, high) in FIELD_RANGES.items():
            value = getattr(self, name)
            if value is not None and not low <= value <= high:
                raise ValueError(range_error(name))
        if self.wasm_middleware_sha256 and not self.wasm_middleware:
            raise ValueError("wasm_middleware_sha256 requires wasm_middleware")
        if self.pd_disaggregation or self.vllm_pd_disaggregation:
            if not (self.service_discovery or self.vllm_discovery_address):
                if not self.prefill_urls:
                    raise ValueError("PD disaggregation mode requires --prefill")
                if not self.decode_urls:
                    raise ValueError("PD disaggregation mode requires --decode")

            if self.prefill_policy and self.decode_policy and self.policy:
                _logger().warning(
                    "Both --prefill-policy and --decode-policy are specified. "
                    "The main --policy flag will be ignored for PD mode."
                )
            elif self.prefill_policy and not self.decode_policy:
                _logger().info(
                    f"Using --prefill-policy '{self.prefill_policy}' for prefill nodes "
                    f"and --policy '{self.policy}' for decode nodes."
                )
            elif self.decode_policy and not self.prefill_policy:
                _logger().info(
                    f"Using --policy '{self.policy}' for prefill nodes "
                    f"and --decode-policy '{self.decode_policy}' for decode nodes."
                )

    @staticmethod
    def _parse_selector(selector_list: Optional[List[str]]) -> Dict[str, str]:
        """`["k=v", ...]` -> dict; split at the first '='; items without '=' are ignored."""
        if not selector_list:
            return {}
        selector = {}
        for item in selector_list:
            if "=" in item:
                key, value = item.split("=", 1)
                selector[key] = value
        return selector

    @staticmethod
    def _parse_prefill_urls(prefill_list: Optional[List[List[str]]]) -> List[Tuple[str, Optional[int]]]:
        """`[[url], [url, port], [url, "none"], ...]` -> `[(url, port or None), ...]`."""
        if not prefill_list:
            return []
        prefill_urls = []
        for occurrence in prefill_list:
            url = occurrence[0]
            bootstrap_port = None
            if len(occurrence) > 1 and occurrence[1].lower() != "none":
                try:
                    bootstrap_port = int(occurrence[1])
                except ValueError:
                    raise ValueError(
                        f"Invalid bootstrap port: {occurrence[1]}. Must be a number or 'none'"
                    ) from None
            prefill_urls.append((url, bootstrap_port))
        return prefill_urls

    @staticmethod
    def _parse_decode_urls(decode_list: Optional[List[List[str]]]) -> List[str]:
        """`[[url], [url], ...]` -> `[url, ...]`."""
        if not decode_list:
            return []
        return [occurrence[0] for occurrence in decode_list]


def router_args_to_config_json(args: RouterArgs) -> str:
    """The engine's RouterConfig JSON: every field by name, in dataclass order, tuples as lists.

    Compact and single-line, because the process bridge sends it as one line on stdin.
    """
    return json.dumps(dataclasses.asdict(args), ensure_ascii=False, separators=(",", ":"))


def _custom_help_formatter() -> type:
    import argparse

    class CustomHelpFormatter(argparse.RawDescriptionHelpFormatter,
                              argparse.ArgumentDefaultsHelpFormatter):
        """Keeps the description's line breaks and shows every flag's default."""

    CustomHelpFormatter.__qualname__ = "CustomHelpFormatter"
    return CustomHelpFormatter


USAGE_DESCRIPTION = """\
vLLM router (Java engine): a load balancer in front of vLLM workers.

Examples:
  # Regular mode
  vllm-router --worker-urls http://worker1:8000 http://worker2:8000

  # Multi-turn sessions stay on one worker until POST /finish_session?session_id=ID
  vllm-router --policy sticky_least_loaded --worker-urls http://w1:8000 http://w2:8000

  # vLLM prefill/decode disaggregation
  vllm-router --vllm-pd-disaggregation \\
      --prefill http://prefill1:8000 none --prefill http://prefill2:8000 none \\
      --decode http://decode1:8001 --decode http://decode2:8001 \\
      --prefill-policy cache_aware --decode-policy power_of_two
"""


def parse_router_args(argv: List[str]) -> RouterArgs:
    """Parse command-line arguments (without the program name) into RouterArgs."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="vllm-router",
        description=USAGE_DESCRIPTION,
        formatter_class=sys.modules[__name__].CustomHelpFormatter,
    )
    RouterArgs.add_cli_args(parser, use_router_prefix=False)
    return RouterArgs.from_cli_args(parser.parse_args(argv), use_router_prefix=False)
