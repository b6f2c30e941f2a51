"""AOT class cache bookkeeping: where it lives, when it is used, when a builder starts."""

import os
import threading
import time

import pytest

from vllm_router.bridge import class_cache, engine_command
from vllm_router.bridge.java_runtime import JavaRuntime

JAVA25 = JavaRuntime("/opt/java25/bin/java", 25, "test")
OPTIONS = ["-XX:+UseSerialGC"]


@pytest.fixture
def jar(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("VLLM_ROUTER_STARTUP_CACHE", raising=False)
    monkeypatch.delenv("VLLM_ROUTER_AOT_CACHE", raising=False)
    monkeypatch.setattr(engine_command, "_warned_deprecated", set())
    path = tmp_path / "engine.jar"
    path.write_bytes(b"v1")
    return path


@pytest.fixture
def builders(monkeypatch):
    """Records builder launches instead of starting them."""
    launched = []

    class Recorded:
        def __init__(self, command, **kwargs):
            launched.append(command)

        def wait(self):
            return 0

    monkeypatch.setattr(class_cache.subprocess, "Popen", Recorded)
    return launched


def test_not_used_before_java_25(jar):
    assert class_cache.cache_path(JavaRuntime("/j/bin/java", 21, "test"), jar, OPTIONS) is None
    assert class_cache.cache_path(JAVA25, jar, OPTIONS) is not None


@pytest.mark.parametrize("value", ["off", "0"])
def test_startup_cache_switch_turns_it_off(jar, monkeypatch, capsys, value):
    monkeypatch.setenv("VLLM_ROUTER_STARTUP_CACHE", value)
    assert class_cache.cache_path(JAVA25, jar, OPTIONS) is None
    assert capsys.readouterr().err == ""


def test_deprecated_switch_still_works_with_one_warning_line(jar, monkeypatch, capsys):
    monkeypatch.setenv("VLLM_ROUTER_AOT_CACHE", "0")
    assert class_cache.cache_path(JAVA25, jar, OPTIONS) is None
    assert class_cache.cache_path(JAVA25, jar, OPTIONS) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "VLLM_ROUTER_AOT_CACHE is deprecated" in err and "use VLLM_ROUTER_STARTUP_CACHE" in err


def test_new_switch_name_wins_over_the_deprecated_one(jar, monkeypatch, capsys):
    monkeypatch.setenv("VLLM_ROUTER_AOT_CACHE", "0")
    monkeypatch.setenv("VLLM_ROUTER_STARTUP_CACHE", "on")
    assert class_cache.cache_path(JAVA25, jar, OPTIONS) is not None
    assert capsys.readouterr().err == ""


def test_same_location_same_slot_new_version_on_change(jar):
    first = class_cache.cache_path(JAVA25, jar, OPTIONS)
    jar.write_bytes(b"version 2")
    rebuilt = class_cache.cache_path(JAVA25, jar, OPTIONS)
    other_options = class_cache.cache_path(JAVA25, jar, OPTIONS + ["-Xmx1g"])
    slots = {path.name.split("-")[1] for path in (first, rebuilt, other_options)}
    assert len(slots) == 1
    assert len({first, rebuilt, other_options}) == 3


def test_new_version_when_the_options_for_this_java_change(jar, monkeypatch):
    # The JVM refuses a cache made with other object headers, so a release that adds such an option
    # must not reuse the cache of the one before, even for the same jar file.
    before = class_cache.cache_path(JAVA25, jar, OPTIONS)
    monkeypatch.setattr(engine_command, "VERSIONED_OPTIONS",
                        engine_command.VERSIONED_OPTIONS + [(25, "-XX:+UseLargePages")])
    assert class_cache.cache_path(JAVA25, jar, OPTIONS) != before


def test_existing_cache_is_used_without_builder(jar, builders):
    path = class_cache.cache_path(JAVA25, jar, OPTIONS)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"cache")
    assert class_cache.jvm_options(JAVA25, jar, OPTIONS)[0] == f"-XX:AOTCache={path}"
    assert builders == []


def test_missing_cache_starts_one_detached_builder(jar, builders):
    assert class_cache.jvm_options(JAVA25, jar, OPTIONS) == []
    assert len(builders) == 1 and "vllm_router.bridge.class_cache" in builders[0]


def test_builder_is_not_left_a_child_of_the_launcher(jar, tmp_path, monkeypatch):
    # launch_router execs into the JVM, which never reaps a child it did not start: a builder that
    # is our child would stay a zombie under the router. It must still run, with another parent.
    seen = tmp_path / "builder.seen"
    fake_python = tmp_path / "python"
    fake_python.write_text(f'#!/bin/sh\necho "$PPID $*" > {seen}.tmp && mv {seen}.tmp {seen}\n')
    fake_python.chmod(0o755)
    monkeypatch.setattr(class_cache.sys, "executable", str(fake_python))

    class_cache.start_background_build(JAVA25, jar, class_cache.cache_path(JAVA25, jar, OPTIONS))

    deadline = time.monotonic() + 10
    while not seen.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    parent, arguments = seen.read_text().split(" ", 1)
    assert "-m vllm_router.bridge.class_cache --java /opt/java25/bin/java --jar" in arguments
    assert int(parent) != os.getpid()


def test_no_second_builder_while_one_is_at_work(jar, builders):
    path = class_cache.cache_path(JAVA25, jar, OPTIONS)
    path.parent.mkdir(parents=True)
    lock = path.with_name(path.name + ".building")
    lock.write_text("")
    assert class_cache.jvm_options(JAVA25, jar, OPTIONS) == []
    assert builders == []

    stale = lock.stat().st_mtime - class_cache.STALE_BUILD_SECS - 1
    os.utime(lock, (stale, stale))
    class_cache.jvm_options(JAVA25, jar, OPTIONS)
    assert len(builders) == 1


def _built(path, mtime):
    """Stands for a finished build of `path`, last used at `mtime`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"cache")
    os.utime(path, (mtime, mtime))


def test_routers_with_other_options_keep_their_own_caches(jar):
    defaults = class_cache.cache_path(JAVA25, jar, OPTIONS)
    larger_heap = class_cache.cache_path(JAVA25, jar, OPTIONS + ["-Xmx4g"])
    _built(defaults, 1000)
    _built(larger_heap, 2000)
    class_cache._remove_other_caches(larger_heap)
    assert defaults.is_file() and larger_heap.is_file()
    assert class_cache.jvm_options(JAVA25, jar, OPTIONS)[0] == f"-XX:AOTCache={defaults}"


def test_a_rebuilt_jar_replaces_the_cache_of_its_options_only(jar):
    old = class_cache.cache_path(JAVA25, jar, OPTIONS)
    other_options = class_cache.cache_path(JAVA25, jar, OPTIONS + ["-Xmx4g"])
    _built(old, 1000)
    _built(other_options, 1000)
    jar.write_bytes(b"version 2")
    new = class_cache.cache_path(JAVA25, jar, OPTIONS)
    _built(new, 3000)
    class_cache._remove_other_caches(new)
    assert not old.exists()
    assert new.is_file() and other_options.is_file()


def test_least_recently_used_option_sets_go_beyond_the_limit(jar, builders):
    paths = [class_cache.cache_path(JAVA25, jar, OPTIONS + [f"-Xmx{n}g"])
             for n in range(class_cache.MAX_OPTION_SETS + 1)]
    for n, path in enumerate(paths):
        _built(path, 1000 + n)
    # Using the oldest makes it the most recently used; the second oldest goes instead.
    class_cache.jvm_options(JAVA25, jar, OPTIONS + ["-Xmx0g"])
    newest = class_cache.cache_path(JAVA25, jar, OPTIONS + ["-Xmx9g"])
    _built(newest, time.time() + 10)
    class_cache._remove_other_caches(newest)
    left = sorted(p.name for p in newest.parent.glob("engine-*.aot"))
    assert len(left) == class_cache.MAX_OPTION_SETS
    assert paths[0].is_file() and newest.is_file() and not paths[1].exists()


def test_an_older_release_cache_in_the_slot_is_dropped(jar):
    current = class_cache.cache_path(JAVA25, jar, OPTIONS)
    slot = current.name.split("-")[1]
    older_shape = current.with_name(f"engine-{slot}-0123456789abcdef.aot")
    _built(older_shape, 1000)
    _built(current, 2000)
    class_cache._remove_other_caches(current)
    assert not older_shape.exists() and current.is_file()


@pytest.fixture
def training(monkeypatch):
    """Records training runs instead of starting JVMs; each writes the cache it was asked for."""
    runs = []

    def train(java, jar, output):
        runs.append(output)
        output.write_bytes(b"cache")

    monkeypatch.setattr(class_cache, "_training_run", train)
    return runs


def test_ready_makes_a_missing_cache_before_it_returns(jar, training):
    path = class_cache.ready(JAVA25, jar)
    assert path == class_cache.cache_path(JAVA25, jar, class_cache.base_jvm_options())
    assert path.is_file() and len(training) == 1
    assert class_cache.ready(JAVA25, jar) == path and len(training) == 1


def test_ready_waits_for_the_builder_at_work_instead_of_returning_without_a_cache(jar, training):
    path = class_cache.cache_path(JAVA25, jar, class_cache.base_jvm_options())
    path.parent.mkdir(parents=True)
    lock = path.with_name(path.name + ".building")
    lock.write_text("")

    def other_builder_finishes():
        time.sleep(0.3)
        path.write_bytes(b"cache")
        lock.unlink()

    other = threading.Thread(target=other_builder_finishes)
    other.start()
    try:
        assert class_cache.ready(JAVA25, jar, timeout=30) == path
    finally:
        other.join()
    assert training == []


def test_ready_gives_up_when_the_other_builder_leaves_no_cache(jar, training):
    path = class_cache.cache_path(JAVA25, jar, class_cache.base_jvm_options())
    path.parent.mkdir(parents=True)
    path.with_name(path.name + ".building").write_text("")
    assert class_cache.ready(JAVA25, jar, timeout=0) is None
    assert training == []
