"""Compatibility module for code written against upstream's native extension `vllm_router_rs`.

Trainers probe `vllm_router_rs.PolicyType.StickyLeastLoaded` to detect session-aware routing.
"""

from vllm_router.router import PolicyType, Router

__all__ = ["PolicyType", "Router"]
