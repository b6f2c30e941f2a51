"""Rollout benchmarks: how long a GRPO rollout batch takes through the router, by group latency.

    python -m vllm_router.bench simulate [--policies P,...] [--workers N] [--groups N] [--samples N]
                                         [--pressure low,moderate,high] [--seed N] [--abandon SHARE]
                                         [--trace FILE] [--write-trace FILE] [--shape default|small|long]
                                         [--json] [--plot PNG]
                                         [--block-tokens N] [--prefill-tokens-per-sec R]
                                         [--decode-secs-per-token S] [--kv-tokens-per-worker N]
                                         [--sticky-balanced-tool-hold-secs S] [--sticky-balanced-group-by-kv]
    python -m vllm_router.bench rollout  [--policies P,...] [--workers N] [--groups N] [--samples N]
                                         [--pressure LEVEL,...] [--seed N] [--abandon SHARE]
                                         [--trace FILE] [--shape default|small|long] [--time-scale S]
                                         [--worker-urls URL,... [--model NAME] [--calibrate]]
                                         [--router-python PATH [--ours P,...] [--router-label NAME]]
                                         [--json] [--plot PNG]

`simulate` runs the engine jar's `simulate` command: the router's own policy objects against
modelled vLLM workers in virtual time (the workload, the cost model and the event loop are Java;
see java/sim). `rollout` runs the same workload live: mock workers that step the same cost model
on the wall clock (`--time-scale 0.1`: ten times faster than modelled), a router per policy (this
package's, or `PATH -m vllm_router.launch_router` with `--router-python PATH`), and the engine
jar's `rollout` driver over HTTP; with `--router-python`, `--policies` are that router's (its rows
named `rust-0.1.17:POLICY` for upstream's Rust package) and `--ours` runs this package's beside
them, interleaved, on the same worker ports. With `--worker-urls`, `rollout` runs every arm on
those real vLLM workers instead, in real time (examples/real_vllm/rollout_arm.py starts two and
calls it); `--calibrate` then measures their decode and prefill costs, runs `simulate` on the same
workload with those figures, and prints each measured row beside its simulated one. Both print
the same table (a PNG of each policy's group latency CDF and hit rate beside it, with matplotlib)
or, with `--json`, the same object; bad input is one line and status 2 before anything runs.
"""
