"""`python -m vllm_router.bench rollout`: the live arm. Mock vLLM workers that run the engine's
cost model on the wall clock (the engine jar's `mock-worker --engine-model`), a router per policy
in front of them (this package's, or another vllm_router-compatible package's with
`--router-python`, its rows labelled `rust-0.1.17:POLICY` or `--router-label`), and the engine
jar's `rollout` driver sending the batch over HTTP. Each policy gets fresh workers and a fresh
router, so none inherits another's cache; the workers listen on the same ports in every run, so a
hashing policy (consistent_hash's ring is built from the workers' URLs) places each session alike
under both routers.

With `--worker-urls`, the arms run on real vLLM workers already running instead (see
vllm_router.bench.real_vllm): in real time, every arm on the same workers, their prefix caches
emptied before each arm (vLLM's POST /reset_prefix_cache), the prompts words the tiny model reads
one token each; the hit rate and preemptions are vLLM's own counters over the batch (the
answers' cached tokens as `answered_hit_rate`), and the workers' KV blocks those they report."""

import argparse
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator, List, NamedTuple, Optional, Sequence

from ..bridge import EngineStartupError, class_cache
from ..bridge.engine_command import engine_class_path, engine_command, engine_jar
from ..bridge.java_runtime import JavaNotFoundError, find_java
from ..mock_workers import MockWorkers
from . import real_vllm, report

PROG = "python -m vllm_router.bench rollout"
DEFAULT_PLOT = os.path.join("bench-output", "rollout.png")
# What a trainer's batch looks like at the scale of one machine's mock workers.
DEFAULT_GROUPS = "16"
DEFAULT_SAMPLES = "8"
DEFAULT_TIME_SCALE = 0.1
DEFAULT_WARM_UP = 256
WARM_UP_CONCURRENCY = 16
ROUTER_START_TIMEOUT_S = 120
# Below Linux's ephemeral range (32768-60999), where the router's and driver's own connections
# would take ports between runs.
STABLE_PORTS = range(20000, 32000)


class BadInput(Exception):
    """Input refused before any traffic; the message is the whole error line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        raise BadInput(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__, add_help=True)
    p.add_argument("--policies", default=None,
                   help="comma-separated (default: the engine's simulate default); with --router-python, "
                        "the policies of that router")
    p.add_argument("--workers", default=None, help="mock workers (default: 8; with --worker-urls, as many as named)")
    p.add_argument("--groups", default=None, help=f"prompts in the batch (default: {DEFAULT_GROUPS})")
    p.add_argument("--samples", default=None, help=f"samples per prompt (default: {DEFAULT_SAMPLES})")
    p.add_argument("--pressure", default=None, help="low, moderate, high or a ratio; a list runs each")
    p.add_argument("--seed", default=None)
    p.add_argument("--abandon", default=None, help="share of trajectories abandoned mid-turn")
    p.add_argument("--trace", default=None, help="replay this JSONL trace instead of generating")
    p.add_argument("--shape", default=None,
                   help="default, small (fits the real-vLLM tests' tiny model) or long (coding-agent "
                        "trajectories, contexts up to 96k tokens)")
    p.add_argument("--time-scale", type=float, default=None,
                   help=f"wall seconds per modelled second (default: {DEFAULT_TIME_SCALE}; 1 with --worker-urls)")
    p.add_argument("--worker-urls", default=None, metavar="URL,...",
                   help="run every arm on these real vLLM workers (started with vLLM's development routes and "
                        "prompt token details, as examples/real_vllm/rollout_arm.py starts them) instead of mock workers")
    p.add_argument("--calibrate", action="store_true",
                   help="with --worker-urls: measure a worker's decode and prefill costs, simulate the same workload "
                        "with them, and print each measured row beside its policy's simulated one")
    p.add_argument("--model", default=None, help="with --worker-urls: the model to ask for (default: the workers' "
                                                 "first in /v1/models)")
    p.add_argument("--warm-up", type=int, default=DEFAULT_WARM_UP, metavar="N",
                   help="turns sent through each router before the batch, each a session of its own, "
                        "finished (default: %(default)s)")
    p.add_argument("--router-python", default=None, metavar="PATH",
                   help="run `PATH -m vllm_router.launch_router` as the router instead of this package's")
    p.add_argument("--router-label", default=None, metavar="NAME",
                   help="how the table names --router-python's rows, NAME:POLICY (default: rust-VERSION for "
                        "the upstream Rust package, else its package name and version)")
    p.add_argument("--ours", default=None, metavar="POLICIES",
                   help="with --router-python: also run these policies on this package's router, interleaved "
                        "with the other router's, on the same worker ports")
    p.add_argument("--trajectories", default=None, metavar="FILE",
                   help="write one JSON line per trajectory of every arm to FILE: the workers that answered it, "
                        "its start and latency in model seconds (mock workers only)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--plot", default=DEFAULT_PLOT, metavar="PNG", help="where to draw (default: %(default)s)")
    return p


def workload_arguments(o: argparse.Namespace, policies: Optional[str]) -> List[str]:
    """The options the engine's driver reads, as given (the driver checks them)."""
    generated = o.trace is None
    pairs = [("--policies", policies), ("--workers", o.workers), ("--pressure", o.pressure),
             ("--groups", o.groups if o.groups or not generated else DEFAULT_GROUPS),
             ("--samples", o.samples if o.samples or not generated else DEFAULT_SAMPLES),
             ("--seed", o.seed), ("--abandon", o.abandon), ("--trace", o.trace), ("--shape", o.shape)]
    return [a for name, value in pairs if value is not None for a in (name, value)]


class Arm(NamedTuple):
    """One row per pressure: a policy on a router (`python` None: this package's)."""
    label: str
    policy: str
    python: Optional[str]


def driver(arguments: Sequence[str]) -> List[str]:
    return engine_command(find_java(), engine_class_path(), ["rollout", *arguments])


def plan(arguments: Sequence[str]) -> dict:
    """The driver's `--plan`: the workload and each pressure's KV blocks per worker; BadInput when
    the driver refuses the input (a policy this package does not know among them)."""
    done = subprocess.run(driver([*arguments, "--plan"]), capture_output=True, text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"the driver failed with status {done.returncode}"]
        raise BadInput(lines[-1].removeprefix("rollout: "))
    return json.loads(done.stdout)


def foreign_env() -> dict:
    """The environment of another package's router: without this process's PYTHONPATH, which
    would let it import this package instead of its own."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


# What another package says of itself: its version, and whether it is upstream's Rust router.
DESCRIBE = ("import importlib.util, json, vllm_router, vllm_router.launch_router; "
            "print(json.dumps({'version': getattr(vllm_router, '__version__', '?'), "
            "'rust': importlib.util.find_spec('vllm_router_rs') is not None}))")


class ForeignRouter(NamedTuple):
    label: str
    policies: List[str]  # what its launcher's --policy accepts; empty when its --help does not say


def foreign_run(path: str, arguments: List[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([path, *arguments], capture_output=True, text=True, timeout=120, env=foreign_env())
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BadInput(f"--router-python {path}: cannot run it ({e.__class__.__name__}: {e})") from None


def check_router_python(path: str, label: Optional[str]) -> ForeignRouter:
    """The package behind `path`, or BadInput when it cannot be run or has no launcher."""
    done = foreign_run(path, ["-c", DESCRIBE])
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BadInput(f"--router-python {path}: cannot import vllm_router.launch_router ({last})")
    about = json.loads(done.stdout.strip().splitlines()[-1])
    usage = foreign_run(path, ["-m", "vllm_router.launch_router", "--help"]).stdout
    choices = re.search(r"--policy \{([\w,]+)\}", usage)
    default_label = f"rust-{about['version']}" if about["rust"] else f"vllm_router-{about['version']}"
    return ForeignRouter(label or default_label, choices.group(1).split(",") if choices else [])


def stable_ports(count: int) -> List[int]:
    """`count` consecutive ports free now, below the ephemeral range, for the workers of every run."""
    starts = list(range(STABLE_PORTS.start, STABLE_PORTS.stop - count, count))
    random.shuffle(starts)
    for start in starts:
        ports = list(range(start, start + count))
        if all(port_is_free(p) for p in ports):
            return ports
    raise RuntimeError(f"no {count} consecutive free ports in {STABLE_PORTS.start}-{STABLE_PORTS.stop}")


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


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
def other_router(python: str, policy: str, worker_urls: List[str], extra: Sequence[str] = ()) -> Iterator[str]:
    """`python -m vllm_router.launch_router` on a free port, once its /readiness answers 200 (it
    has a healthy worker; upstream's Rust router binds its port only after its workers' first
    health check, and probes them every second here rather than its default 30)."""
    port = free_port()
    process = subprocess.Popen([python, "-m", "vllm_router.launch_router", "--host", "127.0.0.1", "--port",
                                str(port), "--policy", policy, "--worker-urls", *worker_urls,
                                "--worker-startup-check-interval", "1",
                                "--prometheus-port", str(free_port()), "--log-level", "warning", *extra],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=foreign_env())
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ROUTER_START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{python} -m vllm_router.launch_router --policy {policy} exited with "
                                   f"status {process.returncode} before it was ready")
            try:
                with urllib.request.urlopen(url + "/readiness", timeout=2) as answer:
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


def run_arm(arm: Arm, pressure: str, blocks: int, ports: List[int], o: argparse.Namespace,
            arguments: List[str], progress: bool) -> dict:
    knobs = {"engine-model": "true", "cache-blocks": str(blocks), "time-scale": str(o.time_scale),
             "kv-events": "true"}
    with MockWorkers(len(ports), knobs, ports=ports) as workers:
        router = (other_router(arm.python, arm.policy, workers.urls) if arm.python
                  else our_router(arm.policy, workers.urls))
        with router as url:
            warm_up(url, o.warm_up)
            command = driver([*arguments, "--label", arm.label, "--pressure", pressure, "--router", url,
                              "--worker-urls", ",".join(workers.urls), "--time-scale", str(o.time_scale),
                              *(["--trajectories", o.trajectories] if o.trajectories else []),
                              *(["--progress"] if progress else [])])
            done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the driver failed for {arm.label} at {pressure} pressure (status {done.returncode})")
    return json.loads(done.stdout)["results"][0]


def run_real_arm(arm: Arm, workers: "real_vllm.RealWorkers", o: argparse.Namespace, arguments: List[str],
                 progress: bool) -> dict:
    """One arm on the real workers: caches emptied, a fresh router, the warm-up, then the batch
    between two snapshots of vLLM's counters."""
    workers.reset_prefix_caches()
    extra = workers.kv_event_sources() if arm.python and arm.policy == "kv_aware" else []
    router = (other_router(arm.python, arm.policy, workers.urls, extra) if arm.python
              else our_router(arm.policy, workers.urls))
    with router as url:
        warm_up(url, o.warm_up, workers.model)
        before = workers.counters()
        command = driver([*arguments, "--label", arm.label, "--router", url, "--worker-urls", ",".join(workers.urls),
                          "--time-scale", "1", "--real-vllm", "--model", workers.model,
                          *(["--progress"] if progress else [])])
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        after = workers.counters()
    if done.returncode != 0:
        raise RuntimeError(f"the driver failed for {arm.label} on the real workers (status {done.returncode})")
    result = json.loads(done.stdout)["results"][0]
    return real_vllm.with_counters(result, before, after, workers.kv_blocks)


def warm_up(router: str, turns: int, model: str = "mock") -> None:
    """Sends `turns` one-token turns through the router, each in a session it then finishes. A
    router on the JVM runs its first requests interpreted, and the batch opens with every
    trajectory's first turn at once: unwarmed, that start costs our router seconds of wall time,
    tenfold in model time at `--time-scale 0.1`, which upstream's native router never pays. The
    prompts are shorter than a KV block, so they leave nothing in the workers' prefix caches."""

    def turn(i: int) -> None:
        session = f"warmup_{i}"
        request = urllib.request.Request(router + "/v1/completions", data=json.dumps(
            {"model": model, "prompt": f"warm-up {i}", "max_tokens": 1}).encode(),
            headers={"Content-Type": "application/json", "X-Session-ID": session})
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()
        finish = urllib.request.Request(f"{router}/finish_session?session_id={session}", data=b"", method="POST")
        with urllib.request.urlopen(finish, timeout=60) as answer:
            answer.read()

    with ThreadPoolExecutor(WARM_UP_CONCURRENCY) as pool:
        list(pool.map(turn, range(turns)))


class Prepared:
    """A checked command line: its options, the driver's workload options and the driver's plan."""

    def __init__(self, argv: Sequence[str]):
        self.options = o = parser().parse_args(list(argv))
        self.real = None
        if o.trajectories is not None and o.worker_urls is not None:
            raise BadInput("--trajectories names the mock workers that answered each trajectory; drop --worker-urls")
        if o.trajectories is not None:
            # Emptied now, so that a path that cannot be written stops the run before any router starts; each
            # arm's driver appends its trajectories.
            try:
                open(o.trajectories, "w").close()
            except OSError as e:
                raise BadInput(f"--trajectories {o.trajectories}: {e.strerror}") from None
        if o.worker_urls is not None:
            if o.time_scale not in (None, 1):
                raise BadInput(f"real vLLM workers run in real time: drop --time-scale (got {o.time_scale:g})")
            if o.pressure is not None:
                raise BadInput("real vLLM workers hold the KV cache they were started with: drop --pressure")
            urls = [u.rstrip("/") for u in o.worker_urls.split(",") if u]
            if o.workers not in (None, str(len(urls))):
                raise BadInput(f"--workers {o.workers} but --worker-urls names {len(urls)}")
            o.workers = str(len(urls))
            try:
                self.real = real_vllm.RealWorkers.connect(urls, o.model)
            except real_vllm.NotRealVllm as e:
                raise BadInput(str(e)) from None
            o.time_scale = 1.0
        elif o.model is not None or o.calibrate:
            raise BadInput(f"{'--model' if o.model is not None else '--calibrate'} is for real workers; "
                           f"give --worker-urls")
        if o.workers is None:
            o.workers = "8"
        if o.time_scale is None:
            o.time_scale = DEFAULT_TIME_SCALE
        if not (o.time_scale > 0):
            raise BadInput(f"--time-scale must be > 0, got {o.time_scale}")
        if o.warm_up < 0:
            raise BadInput(f"--warm-up must be >= 0, got {o.warm_up}")
        if o.ours is not None and not o.router_python:
            raise BadInput("--ours names this package's policies beside --router-python's; give --router-python")
        if o.router_label is not None and not o.router_python:
            raise BadInput("--router-label names --router-python's rows; give --router-python")
        ours = o.ours if o.router_python else o.policies
        # The plan checks this package's policies (and, with none given, lists its default).
        self.blueprint = plan(workload_arguments(o, ours))
        self.arms = [Arm(p, p, None) for p in self.blueprint["policies"]] if ours is not None or not o.router_python \
            else []
        if o.router_python:
            foreign = check_router_python(o.router_python, o.router_label)
            theirs = o.policies.split(",") if o.policies else foreign.policies
            unknown = [p for p in theirs if foreign.policies and p not in foreign.policies]
            if unknown or not theirs:
                raise BadInput(f"--router-python {o.router_python}: unknown policy '{(unknown or [''])[0]}'; "
                               f"expected one of {', '.join(foreign.policies)}")
            self.arms += [Arm(f"{foreign.label}:{p}", p, o.router_python) for p in theirs]
        self.workload_arguments = workload_arguments(o, None)
        if "--pressure" in self.workload_arguments:
            i = self.workload_arguments.index("--pressure")
            del self.workload_arguments[i:i + 2]

    def run(self, progress: bool) -> dict:
        """Every arm at every pressure, live, on worker ports fixed for the whole run;
        `{"workload", "worker_ports", "results"}` as `simulate --json` prints it, each result with
        every group's latency. RuntimeError when a run fails."""
        if any(arm.python is None for arm in self.arms):
            # Before the first of our arms, not during it: a fresh jar's first router would start
            # the class cache's background build, which then shares the CPU with the timed arms
            # (docs/perf/rollout-live.md).
            class_cache.ready(find_java(), engine_jar())
        if self.real is not None:
            # Calibrated first, on workers nothing else runs on yet.
            calibration = real_vllm.calibrate(self.real) if self.options.calibrate else None
            outcome = {"workload": self.blueprint["workload"], "worker_urls": self.real.urls,
                       "results": [run_real_arm(arm, self.real, self.options, self.workload_arguments, progress)
                                   for arm in self.arms]}
            if calibration is not None:
                outcome.update(calibration=calibration._asdict(), simulated=self.simulated(calibration))
            return outcome
        ports = stable_ports(int(self.options.workers))
        results = []
        for pressure, blocks in self.blueprint["kv_blocks_per_worker"].items():
            for arm in self.arms:
                results.append(run_arm(arm, pressure, blocks, ports, self.options, self.workload_arguments,
                                       progress))
        return {"workload": self.blueprint["workload"], "worker_ports": ports, "results": results}


    def simulated(self, calibration: "real_vllm.Calibration") -> List[dict]:
        """`simulate` of the same workload and worker count with the workers' measured costs, for
        the policies of this package's arms (the other router's when it has none)."""
        ours = [arm.policy for arm in self.arms if arm.python is None] or [arm.policy for arm in self.arms]
        command = engine_command(find_java(), engine_class_path(), [
            "simulate", *workload_arguments(self.options, ",".join(dict.fromkeys(ours))), "--json",
            *calibration.simulate_flags()])
        return real_vllm.simulated(command)


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
    router = (f"{o.router_python} -m vllm_router.launch_router" + (" and this package's router" if o.ours else "")
              if o.router_python else "this package's router")
    clock = ("latencies in wall seconds, real vLLM workers; hit% from vLLM's prefix-cache counters"
             if prepared.real else f"latencies in model seconds (wall seconds / time scale {o.time_scale:g})")
    print(report.table(outcome, int(o.workers), f"{clock}; {router}; {time.monotonic() - started:.0f} s wall"),
          end="")
    if "simulated" in outcome:
        print(real_vllm.comparison(outcome["results"], outcome["simulated"],
                                   real_vllm.Calibration(**outcome["calibration"])), end="")
    show_plot(outcome, o.plot, f"Live rollout over {o.workers} " +
              ("real vLLM workers" if prepared.real else "engine-model mock workers"))
    return 0


def show_plot(outcome: dict, path: str, title: str) -> None:
    reason = report.write_plot(outcome, path, title)
    print(f"plot: {os.path.abspath(path)}" if reason is None else f"plot: not drawn, {reason}")
