"""Starting a JVM from the engine jar, and reading the one line it answers with.

Every caller that runs the engine jar builds its command here and reads its answer here: the
process bridge (`serve --config -`), the class-cache builder (a training run of `serve`) and the
demo (mock workers). See docs/architecture.md, "The process bridge".

The command: `java <JVM options> -cp <engine jar> <main class> <arguments>`, where the JVM
options are ours (start-up time, footprint), then `$VLLM_ROUTER_JVM_OPTS` (so a user's flag wins
over ours), then any the caller adds (the class cache's). Under `vllm-router python` (GraalPy)
there is no engine jar: `engine_class_path()` is the launcher's own class path instead.

The answer: the first stdout line that is a JSON object whose `event` is `ready` or `error` (a
JVM may print other lines first, such as AOT progress). `{"event":"error","kind":"config",
"message":...}` is a configuration the engine rejected; any other kind is a start-up failure.
"""

import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import IO, Callable, List, Optional, Sequence, Union

from . import EngineConfigError, EngineStartupError
from .java_runtime import JavaRuntime

ENGINE_MAIN_CLASS = "org.vllmrouter.host.Main"
ENGINE_JAR_NAME = "vllm-router-engine.jar"

ENGINE_JAR_ENV = "VLLM_ROUTER_ENGINE_JAR"
JVM_OPTS_ENV = "VLLM_ROUTER_JVM_OPTS"
# `off` (or `0`) turns the start-up caches off; the `vllm-router` script reads the same name.
STARTUP_CACHE_ENV = "VLLM_ROUTER_STARTUP_CACHE"
DEPRECATED_STARTUP_CACHE_ENV = "VLLM_ROUTER_AOT_CACHE"

_warned_deprecated: set = set()


def engine_jar() -> Path:
    """The engine jar: $VLLM_ROUTER_ENGINE_JAR, else the copy shipped inside this package."""
    override = os.environ.get(ENGINE_JAR_ENV)
    jar = Path(override) if override else Path(__file__).resolve().parent.parent / "_engine" / ENGINE_JAR_NAME
    if not jar.is_file():
        raise EngineStartupError(
            f"Router engine jar not found at {jar}. Install the package from a build that "
            "includes it (`make demo` or `make test` in the source tree copies "
            "java/host/target/vllm-router-engine.jar into python/vllm_router/_engine/), "
            f"or set {ENGINE_JAR_ENV}."
        )
    return jar


def engine_class_path() -> str:
    """Where a new JVM finds the engine's classes: the engine jar (`engine_jar()`), or inside the
    `vllm-router` JVM (GraalPy) the class path of that JVM, whose distribution has no engine jar."""
    if sys.implementation.name == "graalpy":
        from . import graal

        return graal.class_path()
    return str(engine_jar())


def jvm_options() -> List[str]:
    """The engine's JVM options (engine-jvm.options, next to this module, which the launcher reads
    too), then $VLLM_ROUTER_JVM_OPTS."""
    user = shlex.split(os.environ.get(JVM_OPTS_ENV, ""))
    ours = engine_options()
    chosen = {option for option in user if COLLECTOR_OPTION.fullmatch(option)}
    if not chosen <= set(ours):
        ours = [option for option in ours
                if not (COLLECTOR_OPTION.fullmatch(option) or option.startswith(SIZED_FOR_OUR_COLLECTOR))]
    return [*ours, *user]


# A JVM given two collectors refuses to start ("Multiple garbage collectors selected"), so a
# user's choice of another collector replaces ours, together with the options chosen for ours:
# the young generation size (a fixed one would also stop G1 from sizing it to meet its pause
# goal) and the engine's whole-heap collections (G1, ZGC and Shenandoah collect their old
# generation concurrently). The launcher (bin/vllm-router) does the same.
COLLECTOR_OPTION = re.compile(r"-XX:\+Use(Serial|Parallel|G1|Z|Shenandoah|Epsilon)GC")
SIZED_FOR_OUR_COLLECTOR = ("-Xmn", "-Dvllm.router.fullCollectionFloor=")


def engine_options() -> List[str]:
    """The options in engine-jvm.options: one a line, `#` comment lines skipped."""
    lines = (line.strip() for line in ENGINE_OPTIONS_FILE.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


ENGINE_OPTIONS_FILE = Path(__file__).with_name("engine-jvm.options")
# Options that only newer JVMs have, each with the first Java version that has it as a product
# option; the launcher (bin/vllm-router) adds the same ones.
VERSIONED_OPTIONS = [
    # From Java 25 Netty stops using sun.misc.Unsafe unless this is given, and then reaches its
    # buffers through ByteBuffer accessors that check the memory's lifetime on every access;
    # msgpack (kv_aware's event decoding) prints a warning on 24+ without it.
    (23, "--sun-misc-unsafe-memory-access=allow"),
    # Gives the C heap that glibc keeps after the JIT's bursts back to the system every 10 s
    # (docs/perf/memory.md).
    (22, "-XX:TrimNativeHeapInterval=10000"),
    # 8-byte object headers (JEP 519): fewer bytes allocated per proxied request, so fewer young
    # collections (docs/perf/memory.md).
    (25, "-XX:+UseCompactObjectHeaders"),
]


def versioned_options(java: JavaRuntime) -> List[str]:
    return [option for since, option in VERSIONED_OPTIONS if java.major_version >= since]


def engine_command(java: JavaRuntime, class_path: Union[Path, str], arguments: Sequence[str],
                   extra_jvm_options: Sequence[str] = (),
                   main_class: str = ENGINE_MAIN_CLASS) -> List[str]:
    """The command line that runs `main_class <arguments>` from the engine jar (or class path)."""
    # Before jvm_options(), whose $VLLM_ROUTER_JVM_OPTS come last and so win.
    return [java.executable, *versioned_options(java), *jvm_options(), *extra_jvm_options, "-cp",
            str(class_path), main_class, *arguments]


def startup_cache_enabled() -> bool:
    """False when $VLLM_ROUTER_STARTUP_CACHE (or its deprecated name) is `off` or `0`."""
    value = setting(STARTUP_CACHE_ENV, DEPRECATED_STARTUP_CACHE_ENV)
    return value not in ("off", "0")


def setting(name: str, deprecated_name: str) -> Optional[str]:
    """$name, else $deprecated_name, which still works for one release: its first use in a
    process writes one deprecation line to stderr."""
    value = os.environ.get(name)
    if value is not None:
        return value
    value = os.environ.get(deprecated_name)
    if value is not None and deprecated_name not in _warned_deprecated:
        _warned_deprecated.add(deprecated_name)
        print(f"vllm_router: {deprecated_name} is deprecated and will be removed in the next "
              f"release; use {name}", file=sys.stderr)
    return value


def parse_event(raw: bytes) -> Optional[dict]:
    """The engine's ready or error event if `raw` is that line; None for any other output."""
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    if isinstance(event, dict) and event.get("event") in ("ready", "error"):
        return event
    return None


def read_event(stdout: IO[bytes], echo: Optional[Callable[[bytes], None]] = None) -> Optional[dict]:
    """Reads `stdout` up to the engine's ready or error line and returns that event, or None when
    stdout ends first. Lines before it go to `echo`, when given."""
    for raw in stdout:
        event = parse_event(raw)
        if event is not None:
            return event
        if echo is not None:
            echo(raw)
    return None


def error_of(event: dict) -> Exception:
    """What a caller raises for an error event: a rejected configuration is a ValueError."""
    message = str(event.get("message", "unknown engine error"))
    if event.get("kind") == "config":
        return EngineConfigError(message)
    return EngineStartupError(message)
