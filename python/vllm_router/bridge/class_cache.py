"""The engine's AOT class cache (JDK 25+, JEPs 483/514): a shorter JVM start-up
(docs/perf/startup.md has the figures).

The cache is made by a separate training run, never by the user's router: a training JVM starts
slower and spends seconds assembling the cache when it exits, which would delay both start-up
and shutdown. So the first `start_engine` that finds no cache starts a detached builder
(`python -m vllm_router.bridge.class_cache`) and goes on without it; `make` builds the cache
right after installing the package.

The training run proxies a multi-turn workload (completions, then chat; X-Session-ID on every
turn, /finish_session at each session's end) through sticky_least_loaded to two mock workers, so
the cache also holds the proxy path's classes and the JIT's profiles of it (JEP 515): a router
compiles less once load starts and serves its first proxied requests sooner, for a slightly
larger cache and a longer build than a cache trained on start-up alone (docs/perf/startup.md).

The cache is keyed by the Java runtime, the jar (path, size, mtime) and the JVM options, lives
in the user's cache directory, and is written under a temporary name then renamed, so a JVM never
sees a partial file. A cache the JVM cannot use is ignored by the JVM.
`VLLM_ROUTER_STARTUP_CACHE=off` turns it off.

Each runtime and jar location keeps one cache per set of JVM options (a rebuilt jar replaces it),
and at most MAX_OPTION_SETS of those, the least recently used going first: routers started with
other $VLLM_ROUTER_JVM_OPTS (a larger heap for one job, the defaults for another) each keep their
cache instead of deleting each other's, which made every such start run without one and pay a
background build.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import List, Optional

from .engine_command import (
    engine_command,
    engine_jar,
    jvm_options as base_jvm_options,
    read_event,
    startup_cache_enabled,
    versioned_options,
)
from .java_runtime import JavaRuntime, find_java, inspect_java

MIN_JAVA_MAJOR_FOR_AOT_CACHE = 25
QUIET_AOT_LOGGING = ["-Xlog:aot=off", "-Xlog:cds=off"]
# A builder that has not finished by then is presumed dead; another may take over.
STALE_BUILD_SECS = 600
# Caches kept per runtime and jar location, one per set of JVM options (each tens of MB).
MAX_OPTION_SETS = 3
TRAINING_READY_TIMEOUT_SECS = 120
# The training run's traffic: multi-turn sessions with X-Session-ID, each released with
# /finish_session, once over /v1/completions and once over /v1/chat/completions, through
# sticky_least_loaded to zero-latency mock workers.
TRAINING_WORKERS = 2
TRAINING_WORKLOAD = ["--sessions", "400", "--turns", "8", "--concurrency", "8",
                     "--prompt-tokens", "64", "--output-tokens", "16"]
TRAINING_WORKLOAD_TIMEOUT_SECS = 120


def cache_path(java: JavaRuntime, jar: Path, base_options: List[str]) -> Optional[Path]:
    """Where the cache for this runtime, jar and JVM options lives (the JVM refuses a cache
    made with other options); None when caching does not apply."""
    if java.major_version < MIN_JAVA_MAJOR_FOR_AOT_CACHE or not startup_cache_enabled():
        return None
    stat = jar.stat()
    # One slot per (runtime, jar location), one cache in it per option set; a rebuilt jar replaces it.
    slot = _digest(java.executable, str(jar.resolve()))
    options = _digest(str(java.major_version), *versioned_options(java), *base_options)
    version = _digest(str(stat.st_size), str(stat.st_mtime_ns))
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache_home) / "vllm-router-jvm" / f"engine-{slot}-{options}-{version}.aot"


def _digest(*parts: str) -> str:
    # zlib rather than hashlib, which loads OpenSSL, a large part of the launcher's resident set
    # (docs/perf/memory.md), for a name that only has to change when its parts do (and a cache the JVM cannot use is
    # ignored by the JVM).
    data = "\0".join(parts).encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def jvm_options(java: JavaRuntime, jar: Path, base_options: List[str]) -> List[str]:
    """Options that use the cache when it exists; otherwise starts a builder in the background."""
    path = cache_path(java, jar, base_options)
    if path is None:
        return []
    if path.is_file():
        try:
            os.utime(path)  # recently used: the last of the slot's caches to be evicted
        except OSError:
            pass
        return [f"-XX:AOTCache={path}", *QUIET_AOT_LOGGING]
    start_background_build(java, jar, path)
    return []


def start_background_build(java: JavaRuntime, jar: Path, path: Path) -> None:
    """Start a detached builder unless one is already at work."""
    lock = _lock_path(path)
    if lock.exists() and time.time() - lock.stat().st_mtime < STALE_BUILD_SECS:
        return
    builder = [sys.executable, "-m", "vllm_router.bridge.class_cache",
               "--java", java.executable, "--jar", str(jar)]
    try:
        # A shell starts the builder in the background and exits at once; reaping the shell leaves
        # the builder to init. Were the builder our own child, launch_router, which then execs into
        # the JVM, would leave it a zombie under the router for the router's whole life.
        subprocess.Popen(
            ["/bin/sh", "-c", '"$@" &', "sh", *builder],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,  # outlives this process and ignores its terminal's signals
        ).wait()
    except OSError:
        pass  # no cache: start-up is slower, nothing else changes


def build(java: JavaRuntime, jar: Path) -> Optional[Path]:
    """Make the cache with a training run of `serve`; the cache path, or None if not applicable."""
    path = cache_path(java, jar, base_jvm_options())
    if path is None:
        return None
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = _lock_path(path)
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        if time.time() - lock.stat().st_mtime < STALE_BUILD_SECS:
            return None  # another builder is at work
        lock.unlink()
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.close(fd)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        _training_run(java, jar, partial)
        if partial.is_file():
            os.replace(partial, path)
            _remove_other_caches(path)
    finally:
        lock.unlink()
        if partial.exists():
            partial.unlink()
    return path if path.is_file() else None


def ready(java: JavaRuntime, jar: Path, timeout: float = STALE_BUILD_SECS) -> Optional[Path]:
    """The cache, made now when missing, or waited for while another builder makes it (up to
    `timeout` seconds); None when caching does not apply or no cache came of it. For callers that
    time what routers do next: a router started without its cache runs beside a background
    builder (a training JVM, two mock workers and a driver) and without the JIT's profiles."""
    deadline = time.monotonic() + timeout
    while True:
        path = build(java, jar)
        expected = cache_path(java, jar, base_jvm_options())
        if path is not None or expected is None:
            return path
        if not _lock_path(expected).exists() or time.monotonic() > deadline:
            return None
        time.sleep(0.5)


def _training_run(java: JavaRuntime, jar: Path, output: Path) -> None:
    """Run `serve` once with -XX:AOTCacheOutput in front of mock workers, drive the workload
    through it, then end it normally: the cache then holds the classes of the proxy path and the
    JIT's profiles of it (JEP 515), so a router reaches its compiled steady state sooner."""
    # Imported here: the router's own start-up imports this module and never needs them.
    import urllib.request

    from ..mock_workers import MockWorkers, workload_command

    with MockWorkers(TRAINING_WORKERS, java=java, class_path=str(jar)) as workers:
        command = engine_command(java, jar, ["serve", "--config", "-"],
                                 [f"-XX:AOTCacheOutput={output}", *QUIET_AOT_LOGGING])
        engine = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        config = {"host": "127.0.0.1", "port": 0, "prometheus_port": 0,
                  "policy": "sticky_least_loaded", "worker_urls": workers.urls}
        engine.stdin.write(json.dumps(config).encode() + b"\n")
        engine.stdin.flush()
        # A JVM that neither gets ready nor fails is stopped; it then writes no cache.
        watchdog = threading.Timer(TRAINING_READY_TIMEOUT_SECS, engine.kill)
        watchdog.start()
        try:
            ready = read_event(engine.stdout)  # the JVM also prints AOT progress lines on stdout
        finally:
            watchdog.cancel()
        if ready and ready["event"] == "ready":
            base = f"http://127.0.0.1:{ready['port']}"
            for api in ("completions", "chat"):
                try:
                    subprocess.run(workload_command(base, [*TRAINING_WORKLOAD, "--api", api],
                                                    java=java, class_path=str(jar)),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   timeout=TRAINING_WORKLOAD_TIMEOUT_SECS)
                except subprocess.TimeoutExpired:
                    pass  # what ran so far is trained; the cache is still worth writing
            scraped = [base + route for route in ("/health", "/sessions", "/list_workers")]
            if ready.get("metrics_port"):
                scraped.append(f"http://127.0.0.1:{ready['metrics_port']}/metrics")
            for url in scraped:
                try:
                    urllib.request.urlopen(url, timeout=10).read()
                except OSError:
                    pass
        engine.stdin.close()  # lifeline EOF: a normal exit, during which the JVM writes the cache
        engine.stdout.read()
        engine.wait()


def _remove_other_caches(keep: Path) -> None:
    """Drop the caches of earlier jars with the same options at the same location, then the least
    recently used option sets beyond MAX_OPTION_SETS."""
    _, slot, options, _ = keep.name.split("-")
    stale, kept = [], []
    for other in keep.parent.glob(f"engine-{slot}-*.aot"):
        if other == keep:
            continue
        parts = other.name.split("-")
        # A name of another shape is an older release's cache, which no option set uses any more.
        if len(parts) != 4 or parts[2] == options:
            stale.append(other)
            continue
        try:
            kept.append((other.stat().st_mtime, other))
        except OSError:
            pass
    kept.sort(reverse=True)
    for other in stale + [other for _, other in kept[MAX_OPTION_SETS - 1:]]:
        try:
            other.unlink()
        except OSError:
            pass

def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".building")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vllm_router.bridge.class_cache",
        description="Build the engine's AOT class cache (faster router start-up).")
    parser.add_argument("--java", help="java executable (default: the one the router would use)")
    parser.add_argument("--jar", help="engine jar (default: the one the package ships)")
    options = parser.parse_args(argv)
    if options.java:
        major, problem = inspect_java(options.java)
        if problem:
            print(f"cannot use {options.java}: {problem}", file=sys.stderr)
            return 1
        java = JavaRuntime(options.java, major, "--java")
    else:
        java = find_java()
    jar = Path(options.jar) if options.jar else engine_jar()
    path = build(java, jar)
    print(f"class cache: {path}" if path else "class cache: not applicable or being built elsewhere")
    return 0


if __name__ == "__main__":
    sys.exit(main())
