"""Rollout benchmarks: how long a GRPO rollout batch takes through the router, by group latency.

    python -m vllm_router.bench simulate [--policies P,...] [--workers N] [--groups N] [--samples N]
                                         [--pressure low,moderate,high] [--seed N] [--abandon SHARE]
                                         [--trace FILE] [--write-trace FILE] [--json]

`simulate` runs the engine jar's `simulate` command: the router's own policy objects against
modelled vLLM workers in virtual time (the workload, the cost model and the event loop are Java;
see java/sim). This entry point only finds Java and the jar as the process bridge does, starts it
and passes its table, its `--json` object and its one-line errors through.
"""
