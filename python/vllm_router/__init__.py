"""vLLM router with a Java engine: a drop-in replacement for upstream's `vllm_router` package."""

__all__ = ["PolicyType", "Router", "RouterArgs", "RouterHandle", "policy_from_str", "__version__"]

# Exports load on first access (PEP 562): the GraalPy launcher imports `vllm_router.engine_config`,
# and importing `.router` from here would add threading, signal and typing to its start-up.
_EXPORT_MODULES = {
    "PolicyType": ".engine_config",
    "policy_from_str": ".engine_config",
    "Router": ".router",
    "RouterHandle": ".router",
    "RouterArgs": ".router_args",
    "__version__": ".version",
}


def __getattr__(name: str):
    module_name = _EXPORT_MODULES.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
