"""`python -m vllm_router.bench COMMAND ARGS...`; see the package docstring."""

import json
import os
import subprocess
import sys
from typing import List, Optional, Sequence

from .. import bench
from ..bridge import EngineStartupError
from ..bridge.engine_command import engine_class_path, engine_command
from ..bridge.java_runtime import JavaNotFoundError, find_java
from . import report
from .rollout import rollout, show_plot

PROG = "python -m vllm_router.bench"


SIMULATE_PLOT = os.path.join("bench-output", "simulate.png")


def simulate(arguments: Sequence[str]) -> int:
    """Runs the engine's `simulate ARGS`; its exit status. With `--json` (or `--help`, or
    `--write-trace` alone), its output as it is. Otherwise its table, and a PNG of each policy's
    group latency CDF and hit rate at `--plot PNG` (default bench-output/simulate.png). On a
    terminal, and unless the output is JSON, the engine keeps a progress line on stderr."""
    arguments = list(arguments)
    plot = SIMULATE_PLOT
    if "--plot" in arguments:
        i = arguments.index("--plot")
        if i + 1 >= len(arguments):
            print(f"{PROG} simulate: --plot needs a value", file=sys.stderr)
            return 2
        plot = arguments[i + 1]
        del arguments[i:i + 2]
    passthrough = bool({"--json", "--help", "-h", "--version", "-V"} & set(arguments))
    if sys.stderr.isatty() and not passthrough and "--progress" not in arguments:
        arguments.append("--progress")
    if not passthrough:
        arguments += ["--json", "--group-latencies"]
    try:
        command = engine_command(find_java(), engine_class_path(), ["simulate", *arguments])
    except (JavaNotFoundError, EngineStartupError) as e:
        print(f"{PROG}: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    if passthrough:
        return subprocess.run(command).returncode
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        return done.returncode
    outcome = json.loads(done.stdout)
    workers = outcome["results"][0]["workers"] if outcome["results"] else 0
    print(report.table(outcome, workers, "latencies in virtual seconds"), end="")
    show_plot(outcome, plot, f"Simulated rollout over {workers} modelled workers")
    return 0


COMMANDS = {"simulate": simulate, "rollout": rollout}


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(bench.__doc__.strip(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    if command is None:
        print(f"{PROG}: unknown command '{argv[0]}'; expected one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    return command(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
