"""`launch_router(args)`, upstream's `main()`, and `command_main()`, the entry point of the
`vllm-router` command and `python -m vllm_router.launch_router`."""

import argparse
import logging
import os
import sys
from typing import List, Optional, Union

from .engine_config import check_launch_args, config_json_for
from .router import Router
from .router_args import CustomHelpFormatter, RouterArgs, parse_router_args

__all__ = ["launch_router", "parse_router_args", "main", "command_main", "CustomHelpFormatter"]

logger = logging.getLogger("router")

PROCESS_TITLE = "vllm::router"


def launch_router(args: Union[RouterArgs, argparse.Namespace]) -> None:
    """Serve until SIGTERM/SIGINT, then return once the engine has drained.

    Failures are logged as "Error starting router: ..." and re-raised: ValueError for a
    configuration the engine rejects, RuntimeError when the engine cannot start or dies.
    """
    try:
        _set_process_title()
        router_args = args if isinstance(args, RouterArgs) else RouterArgs.from_cli_args(args)
        check_launch_args(router_args)
        router = Router.from_args(router_args)
        router.start(on_ready=lambda url: _print_urls(url, locked=bool(router_args.admin_api_key)))
    except Exception as e:
        logger.error(f"Error starting router: {e}")
        raise


def _print_urls(url: str, locked: bool) -> None:
    # On stdout, where upstream's start-up lines go; the URL has the bound port even for --port 0.
    print(f"Router: {url}", flush=True)
    print(f"Dashboard: {url}/dashboard" + (" (asks for the admin API key)" if locked else ""), flush=True)


def _set_process_title() -> None:
    try:
        import setproctitle
    except ImportError:
        return
    setproctitle.setproctitle(PROCESS_TITLE)


def main(argv: Optional[List[str]] = None) -> None:
    """Upstream's `main()`: `launch_router(parse_router_args(argv))`, serving from this process."""
    _configure_logging()
    launch_router(parse_router_args(sys.argv[1:] if argv is None else argv))


def command_main(argv: Optional[List[str]] = None) -> None:
    """The `vllm-router` command: `main()`, except that on CPython the engine JVM takes this
    process's place (exec) once the flags are checked.

    The router is then one process: no Python interpreter beside the engine holds memory,
    and signals reach the engine itself, which drains on SIGTERM/SIGINT and exits 0. What the
    command prints and its exit statuses stay upstream's (the engine prints the `Router:` and
    `Dashboard:` lines, or `Error starting router: ...` and exits 1). Without memfd (not Linux)
    or under GraalPy, whose engine already runs in this process, it is `main()`.
    """
    _configure_logging()
    args = parse_router_args(sys.argv[1:] if argv is None else argv)
    if sys.implementation.name == "graalpy" or not hasattr(os, "memfd_create"):
        launch_router(args)
        return
    from .bridge import process

    try:
        process.exec_engine(config_json_for(args), PROCESS_TITLE)
    except Exception as e:
        logger.error(f"Error starting router: {e}")
        raise


def _configure_logging() -> None:
    logging.basicConfig(
        level=logging.INFO,
        format="[Router (Python)] %(asctime)s - %(levelname)s - %(message)s",
    )


if __name__ == "__main__":
    command_main()
