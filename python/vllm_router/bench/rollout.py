"""`python -m vllm_router.bench rollout`: the live arm. Mock vLLM workers that run the engine's
cost model on the wall clock (the engine jar's `mock-worker --engine-model`), a router per policy
in front of them (this package's, or another vllm_router-compatible package's with
`--router-python`), and the engine jar's `rollout` driver sending the batch over HTTP. Each
policy gets fresh workers and a fresh router, so none inherits another's cache."""

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from typing import Iterator, List, Sequence

from ..bridge import EngineStartupError
from ..bridge.engine_command import engine_class_path, engine_command
from ..bridge.java_runtime import JavaNotFoundError, find_java
from ..mock_workers import MockWorkers
from . import report

PROG = "python -m vllm_router.bench rollout"
DEFAULT_PLOT = os.path.join("bench-output", "rollout.png")
# What a trainer's batch looks like at the scale of one machine's mock workers.
DEFAULT_GROUPS = "16"
DEFAULT_SAMPLES = "8"
DEFAULT_TIME_SCALE = 0.1
ROUTER_START_TIMEOUT_S = 120
# The engine's `simulate` default, so both arms compare the same policies unless told otherwise.
DEFAULT_POLICIES = ["sticky_least_loaded", "kv_aware", "cache_aware", "round_robin", "consistent_hash"]


class BadInput(Exception):
    """Input refused before any traffic; the message is the whole error line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        raise BadInput(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__, add_help=True)
    p.add_argument("--policies", default=None, help="comma-separated (default: the engine's simulate default)")
    p.add_argument("--workers", default="8")
    p.add_argument("--groups", default=None, help=f"prompts in the batch (default: {DEFAULT_GROUPS})")
    p.add_argument("--samples", default=None, help=f"samples per prompt (default: {DEFAULT_SAMPLES})")
    p.add_argument("--pressure", default=None, help="low, moderate, high or a ratio; a list runs each")
    p.add_argument("--seed", default=None)
    p.add_argument("--abandon", default=None, help="share of trajectories abandoned mid-turn")
    p.add_argument("--trace", default=None, help="replay this JSONL trace instead of generating")
    p.add_argument("--time-scale", type=float, default=DEFAULT_TIME_SCALE,
                   help="wall seconds per modelled second (default: %(default)s)")
    p.add_argument("--router-python", default=None, metavar="PATH",
                   help="run `PATH -m vllm_router.launch_router` as the router instead of this package's")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--plot", default=DEFAULT_PLOT, metavar="PNG", help="where to draw (default: %(default)s)")
    return p


def workload_arguments(o: argparse.Namespace) -> List[str]:
    """The options the engine's driver reads, as given (the driver checks them)."""
    generated = o.trace is None
    pairs = [("--policies", o.policies), ("--workers", o.workers), ("--pressure", o.pressure),
             ("--groups", o.groups if o.groups or not generated else DEFAULT_GROUPS),
             ("--samples", o.samples if o.samples or not generated else DEFAULT_SAMPLES),
             ("--seed", o.seed), ("--abandon", o.abandon), ("--trace", o.trace)]
    return [a for name, value in pairs if value is not None for a in (name, value)]


def driver(arguments: Sequence[str]) -> List[str]:
    return engine_command(find_java(), engine_class_path(), ["rollout", *arguments])


def plan(arguments: Sequence[str]) -> dict:
    """The driver's `--plan`: the workload and each pressure's KV blocks per worker; BadInput when
    the driver refuses the input."""
    done = subprocess.run(driver([*arguments, "--plan"]), capture_output=True, text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"the driver failed with status {done.returncode}"]
        raise BadInput(lines[-1].removeprefix("rollout: "))
    return json.loads(done.stdout)


def foreign_env() -> dict:
    """The environment of another package's router: without this process's PYTHONPATH, which
    would let it import this package instead of its own."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def check_router_python(path: str) -> None:
    try:
        done = subprocess.run([path, "-c", "import vllm_router.launch_router"], capture_output=True,
                              text=True, timeout=120, env=foreign_env())
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BadInput(f"--router-python {path}: cannot run it ({e.__class__.__name__}: {e})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BadInput(f"--router-python {path}: cannot import vllm_router.launch_router ({last})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def our_router(policy: str, worker_urls: List[str]) -> Iterator[str]:
    from ..router import Router
    from ..router_args import RouterArgs

    args = RouterArgs(port=0, prometheus_port=0, policy=policy, worker_urls=worker_urls,
                      worker_startup_check_interval=1, log_level="warning")
    with Router.from_args(args).launch() as router:
        yield router.url


@contextmanager
def other_router(python: str, policy: str, worker_urls: List[str]) -> Iterator[str]:
    """`python -m vllm_router.launch_router` on a free port, once its /health answers."""
    port = free_port()
    process = subprocess.Popen([python, "-m", "vllm_router.launch_router", "--host", "127.0.0.1", "--port",
                                str(port), "--policy", policy, "--worker-urls", *worker_urls,
                                "--prometheus-port", str(free_port()), "--log-level", "warning"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=foreign_env())
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ROUTER_START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{python} -m vllm_router.launch_router --policy {policy} exited with "
                                   f"status {process.returncode} before it was ready")
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{python} -m vllm_router.launch_router was not ready in "
                                   f"{ROUTER_START_TIMEOUT_S} s")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_policy(policy: str, pressure: str, blocks: int, o: argparse.Namespace,
               arguments: List[str], progress: bool) -> dict:
    knobs = {"engine-model": "true", "cache-blocks": str(blocks), "time-scale": str(o.time_scale),
             "kv-events": "true"}
    with MockWorkers(int(o.workers), knobs) as workers:
        router = (other_router(o.router_python, policy, workers.urls) if o.router_python
                  else our_router(policy, workers.urls))
        with router as url:
            command = driver([*arguments, "--policies", policy, "--pressure", pressure, "--router", url,
                              "--worker-urls", ",".join(workers.urls), "--time-scale", str(o.time_scale),
                              *(["--progress"] if progress else [])])
            done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the driver failed for {policy} at {pressure} pressure (status {done.returncode})")
    return json.loads(done.stdout)["results"][0]


class Prepared:
    """A checked command line: its options, the driver's workload options and the driver's plan."""

    def __init__(self, argv: Sequence[str]):
        self.options = o = parser().parse_args(list(argv))
        if not (o.time_scale > 0):
            raise BadInput(f"--time-scale must be > 0, got {o.time_scale}")
        arguments = workload_arguments(o)
        self.blueprint = plan(arguments)
        if o.router_python:
            check_router_python(o.router_python)
        self.policies = o.policies.split(",") if o.policies else DEFAULT_POLICIES
        self.workload_arguments = list(arguments)
        for flag in ("--policies", "--pressure"):
            if flag in self.workload_arguments:
                i = self.workload_arguments.index(flag)
                del self.workload_arguments[i:i + 2]

    def run(self, progress: bool) -> dict:
        """Every policy at every pressure, live; `{"workload", "results"}` as `simulate --json`
        prints it, each result with every group's latency. RuntimeError when a run fails."""
        results = []
        for pressure, blocks in self.blueprint["kv_blocks_per_worker"].items():
            for policy in self.policies:
                results.append(run_policy(policy, pressure, blocks, self.options, self.workload_arguments,
                                          progress))
        return {"workload": self.blueprint["workload"], "results": results}


def prepare(argv: Sequence[str]) -> Prepared:
    """The command line checked, before any traffic; BadInput (or the bridge's errors) when not."""
    return Prepared(argv)


def rollout(argv: Sequence[str]) -> int:
    try:
        prepared = prepare(argv)
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except (JavaNotFoundError, EngineStartupError) as e:
        print(f"{PROG}: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    o = prepared.options
    started = time.monotonic()
    try:
        outcome = prepared.run(progress=sys.stderr.isatty() and not o.json)
    except RuntimeError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    if o.json:
        print(json.dumps(report.without_latency_lists(outcome)))
        return 0
    router = f"{o.router_python} -m vllm_router.launch_router" if o.router_python else "this package's router"
    print(report.table(outcome, int(o.workers),
                       f"latencies in model seconds (wall seconds / time scale {o.time_scale:g}); "
                       f"{router}; {time.monotonic() - started:.0f} s wall"), end="")
    show_plot(outcome, o.plot, f"Live rollout over {o.workers} engine-model mock workers")
    return 0


def show_plot(outcome: dict, path: str, title: str) -> None:
    reason = report.write_plot(outcome, path, title)
    print(f"plot: {os.path.abspath(path)}" if reason is None else f"plot: not drawn, {reason}")
