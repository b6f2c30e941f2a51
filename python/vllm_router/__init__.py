"""vLLM router with a Java engine: a drop-in replacement for upstream's `vllm_router` package."""

__all__ = ["PolicyType", "Router", "RouterArgs", "RouterHandle", "policy_from_str", "__version__"]

# Exports load on first access (PEP 562): the GraalPy launcher imports `vllm_router.engine_config`,
# and importing `.router` from here would add the router's and the control calls' modules to its start-up.
_EXPORT_MODULES = {
    "PolicyType": ".engine_config",
    "policy_from_str": ".engine_config",
    "Router": ".router",
    "RouterHandle": ".router",
    "RouterArgs": ".router_args",
    "__version__": ".version",
}
# Submodules that eager imports used to bind (as upstream's do), so `vllm_router.router` worked
# after a plain `import vllm_router`.
_EAGER_SUBMODULES = ("router", "router_args", "version")


def __getattr__(name: str):
    import importlib

    if name in _EAGER_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    module_name = _EXPORT_MODULES.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_EAGER_SUBMODULES))
