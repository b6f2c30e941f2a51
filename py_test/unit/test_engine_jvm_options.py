"""The engine's JVM options, as the JVM the bridge finds reads them: our sizing is in force, and a
flag in $VLLM_ROUTER_JVM_OPTS overrides ours."""

import re
import subprocess

import pytest

from vllm_router.bridge import engine_command
from vllm_router.bridge.java_runtime import JavaRuntime, find_java


def engine_jvm(monkeypatch, user_options):
    """The Java runtime the bridge finds and the engine's own command line up to its class path,
    with $VLLM_ROUTER_JVM_OPTS set to `user_options` (unset for None)."""
    if user_options is None:
        monkeypatch.delenv("VLLM_ROUTER_JVM_OPTS", raising=False)
    else:
        monkeypatch.setenv("VLLM_ROUTER_JVM_OPTS", user_options)
    java = find_java()
    command = engine_command.engine_command(java, engine_command.ENGINE_OPTIONS_FILE, [])
    return java, command[:command.index("-cp")]


def final_flags(monkeypatch, user_options):
    """The JVM's final values of the flags the engine's command line sets."""
    java, options = engine_jvm(monkeypatch, user_options)
    dump = subprocess.run([*options, "-XX:+PrintFlagsFinal", "-version"], capture_output=True,
                          text=True, timeout=60, check=True).stdout
    flags = {}
    for line in dump.splitlines():
        match = re.match(r"\s*\S+\s+(\w+)\s+:?=\s+(\S+)", line)
        if match:
            flags[match.group(1)] = match.group(2)
    return java, flags


def system_properties(monkeypatch, user_options):
    """The system properties the engine's JVM starts with."""
    _, options = engine_jvm(monkeypatch, user_options)
    shown = subprocess.run([*options, "-XshowSettings:properties", "-version"], capture_output=True,
                           text=True, timeout=60, check=True).stderr
    return dict(re.findall(r"^\s+(\S+) = (.*)$", shown, re.MULTILINE))


FLOOR = "vllm.router.fullCollectionFloor"


def test_the_engine_bounds_its_heap_growth_by_default(monkeypatch):
    assert system_properties(monkeypatch, None)[FLOOR] == "16m"
    assert system_properties(monkeypatch, "-XX:+UseSerialGC")[FLOOR] == "16m"


def test_a_user_sets_the_floor_or_turns_the_bound_off(monkeypatch):
    assert system_properties(monkeypatch, f"-D{FLOOR}=64m")[FLOOR] == "64m"
    assert system_properties(monkeypatch, f"-D{FLOOR}=off")[FLOOR] == "off"


@pytest.mark.parametrize("collector", ["UseParallelGC", "UseG1GC"])
def test_a_collector_of_the_users_drops_our_whole_heap_collections(monkeypatch, collector):
    # G1, ZGC and Shenandoah collect their old generation concurrently; a forced whole-heap
    # collection would only stop them.
    assert FLOOR not in system_properties(monkeypatch, f"-XX:+{collector}")


def test_the_engine_runs_with_our_heap_sizing(monkeypatch):
    java, flags = final_flags(monkeypatch, None)
    assert flags["UseSerialGC"] == "true"
    assert int(flags["MaxNewSize"]) == 8 << 20
    assert int(flags["MaxMetaspaceSize"]) == 128 << 20
    assert flags["MarkSweepDeadRatio"] == "0"
    if java.major_version >= 22:
        assert flags["TrimNativeHeapInterval"] == "10000"
    if java.major_version >= 25:
        assert flags["UseCompactObjectHeaders"] == "true"


def test_user_jvm_opts_override_ours(monkeypatch):
    java, flags = final_flags(monkeypatch, "-Xmn48m -Xms128m -XX:-UseSerialGC -XX:+UseParallelGC"
                                           " -XX:MaxMetaspaceSize=256m"
                                           " -XX:TrimNativeHeapInterval=0 -XX:-UseCompactObjectHeaders")
    assert flags["UseParallelGC"] == "true"
    assert flags["UseSerialGC"] == "false"
    assert int(flags["InitialHeapSize"]) == 128 << 20
    assert int(flags["MaxNewSize"]) == 48 << 20
    assert int(flags["MaxMetaspaceSize"]) == 256 << 20
    if java.major_version >= 22:
        assert flags["TrimNativeHeapInterval"] == "0"
    if java.major_version >= 25:
        assert flags["UseCompactObjectHeaders"] == "false"


@pytest.mark.parametrize("collector", ["UseParallelGC", "UseG1GC"])
def test_a_collector_of_the_users_replaces_ours(monkeypatch, collector):
    # Given two collectors the JVM would refuse to start; the young generation sized for ours goes too.
    _, flags = final_flags(monkeypatch, f"-XX:+{collector}")
    assert flags[collector] == "true"
    assert flags["UseSerialGC"] == "false"
    assert int(flags["MaxNewSize"]) != 8 << 20
    assert int(flags["MaxMetaspaceSize"]) == 128 << 20


def test_a_collector_of_the_users_keeps_the_users_young_generation(monkeypatch):
    _, flags = final_flags(monkeypatch, "-XX:+UseParallelGC -Xmn24m")
    assert flags["UseParallelGC"] == "true"
    assert int(flags["MaxNewSize"]) == 24 << 20


def test_naming_our_own_collector_keeps_our_sizing(monkeypatch):
    _, flags = final_flags(monkeypatch, "-XX:+UseSerialGC")
    assert flags["UseSerialGC"] == "true"
    assert int(flags["MaxNewSize"]) == 8 << 20


def test_a_larger_young_generation_of_the_users_is_taken_as_given(monkeypatch):
    # Were it above the initial heap, the JVM would shrink it, and then refuse the class cache and
    # not start at all.
    _, flags = final_flags(monkeypatch, "-Xmn64m")
    assert int(flags["NewSize"]) == 64 << 20
    assert int(flags["MaxNewSize"]) == 64 << 20


@pytest.mark.parametrize("major, expected", [
    (21, []),
    (22, ["-XX:TrimNativeHeapInterval=10000"]),
    (23, ["--sun-misc-unsafe-memory-access=allow", "-XX:TrimNativeHeapInterval=10000"]),
    (25, ["--sun-misc-unsafe-memory-access=allow", "-XX:TrimNativeHeapInterval=10000",
          "-XX:+UseCompactObjectHeaders"]),
])
def test_versioned_options_only_where_the_jvm_has_them(major, expected):
    java = find_java()
    assert engine_command.versioned_options(JavaRuntime(java.executable, major, java.source)) == expected


def leak_detection_level(monkeypatch, user_options):
    """The Netty leak-detection level the engine's JVM starts with."""
    _, options = engine_jvm(monkeypatch, user_options)
    shown = subprocess.run([*options, "-XshowSettings:properties", "-version"], capture_output=True,
                           text=True, timeout=60, check=True).stderr
    match = re.search(r"io\.netty\.leakDetection\.level = (\S+)", shown)
    return match.group(1) if match else None


def test_the_engine_runs_without_the_leak_detectors_sampling(monkeypatch):
    assert leak_detection_level(monkeypatch, None) == "disabled"


def test_a_user_turns_the_leak_detector_back_on(monkeypatch):
    assert leak_detection_level(monkeypatch, "-Dio.netty.leakDetection.level=simple") == "simple"
