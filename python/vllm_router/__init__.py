"""vLLM router with a Java engine: a drop-in replacement for upstream's `vllm_router` package."""

from .router import PolicyType, Router, RouterHandle, policy_from_str
from .router_args import RouterArgs
from .version import __version__

__all__ = ["PolicyType", "Router", "RouterArgs", "RouterHandle", "policy_from_str", "__version__"]
