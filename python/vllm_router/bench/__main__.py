"""`python -m vllm_router.bench COMMAND ARGS...`; see the package docstring."""

import subprocess
import sys
from typing import List, Optional, Sequence

from .. import bench
from ..bridge import EngineStartupError
from ..bridge.engine_command import engine_class_path, engine_command
from ..bridge.java_runtime import JavaNotFoundError, find_java

PROG = "python -m vllm_router.bench"


def simulate(arguments: Sequence[str]) -> int:
    """Runs the engine's `simulate ARGS` with this process's stdout and stderr; its exit status.
    On a terminal, and unless the output is JSON, the engine keeps a progress line on stderr."""
    arguments = list(arguments)
    if sys.stderr.isatty() and "--json" not in arguments and "--progress" not in arguments:
        arguments.append("--progress")
    try:
        command = engine_command(find_java(), engine_class_path(), ["simulate", *arguments])
    except (JavaNotFoundError, EngineStartupError) as e:
        print(f"{PROG}: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    return subprocess.run(command).returncode


COMMANDS = {"simulate": simulate}


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
