"""What the engine is configured with, apart from running it: the policy names, upstream's
native-Router keyword arguments <-> RouterArgs, and the launcher's argv -> RouterConfig JSON.

`vllm-router launch` / `print-config` call `config_json_from_argv` inside GraalPy, where every
imported module is interpreted and costs, so this module must not import `vllm_router.router`
(and the control calls' module with it); `enum` comes free with `re`, which json and argparse import.
"""

from __future__ import annotations

import enum

from .router_args import FIELD_REFUSALS, RouterArgs, parse_router_args, router_args_to_config_json


class PolicyType(enum.Enum):
    """Load-balancing policies: the members of upstream's `vllm_router_rs.PolicyType`, then this
    router's own (StickyBalanced), spelled out so that type checkers see them. Their values are `router_args.POLICY_CHOICES`, in order
    (py_test/unit/test_config_contract.py holds the two together)."""

    Random = "random"
    RoundRobin = "round_robin"
    CacheAware = "cache_aware"
    KvAware = "kv_aware"
    PowerOfTwo = "power_of_two"
    ConsistentHash = "consistent_hash"
    StickyLeastLoaded = "sticky_least_loaded"
    RendezvousHash = "rendezvous_hash"
    StickyBalanced = "sticky_balanced"


def policy_from_str(policy_str: str | None) -> PolicyType | None:
    """'round_robin' -> PolicyType.RoundRobin; None -> None; unknown names raise KeyError."""
    if policy_str is None:
        return None
    return {policy.value: policy for policy in PolicyType}[policy_str]


def native_router_kwargs(args: RouterArgs) -> dict:
    """The native Router's keyword arguments for a RouterArgs, mapped as upstream's
    `Router.from_args` maps them; `args` is not modified."""
    fields = dict(vars(args))
    pd_mode = fields["pd_disaggregation"] or fields["vllm_pd_disaggregation"]
    if fields["service_discovery"] or pd_mode:
        fields["worker_urls"] = []
    fields["policy"] = policy_from_str(fields["policy"])
    fields["prefill_policy"] = policy_from_str(fields["prefill_policy"])
    fields["decode_policy"] = policy_from_str(fields["decode_policy"])
    if not pd_mode:
        fields["prefill_urls"] = None
        fields["decode_urls"] = None
    del fields["mini_lb"]
    return fields


def router_args_from_native_kwargs(kwargs: dict) -> RouterArgs:
    """Native-Router keyword arguments -> RouterArgs (the one thing that is serialised)."""
    values = dict(kwargs)
    values.pop("mini_lb", None)
    for name in ("policy", "prefill_policy", "decode_policy"):
        if isinstance(values.get(name), PolicyType):
            values[name] = values[name].value
    # Upstream's native Router defaults differ from RouterArgs' for these two.
    values.setdefault("policy", PolicyType.RoundRobin.value)
    values.setdefault("port", 3001)
    for name in ("prefill_urls", "decode_urls"):
        if values.get(name) is None:
            values[name] = []
    try:
        return RouterArgs(**values)
    except TypeError as e:
        raise TypeError(f"Router() got an unexpected argument: {e}") from None


def check_launch_args(args: RouterArgs) -> None:
    """The checks `launch_router` makes before starting: mini_lb refusal, `_validate_router_args`."""
    if args.mini_lb:
        raise ValueError(FIELD_REFUSALS["mini_lb"])
    args._validate_router_args()


def config_json_for(args: RouterArgs) -> str:
    """The configuration `launch_router(args)` hands the engine: `check_launch_args`, then what
    `Router.from_args(args).config_json` is."""
    check_launch_args(args)
    return router_args_to_config_json(router_args_from_native_kwargs(native_router_kwargs(args)))


def config_json_from_argv(argv) -> str:
    """The configuration `python -m vllm_router.launch_router ARGV` hands the engine, as JSON.

    argparse errors and --help raise SystemExit exactly as on CPython; invalid values raise
    ValueError with the CPython message.
    """
    return config_json_for(parse_router_args([str(a) for a in argv]))
