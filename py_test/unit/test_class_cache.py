"""AOT class cache bookkeeping: where it lives, when it is used, when a builder starts."""

import os

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
    monkeypatch.setattr(class_cache.subprocess, "Popen", lambda command, **kwargs: launched.append(command))
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
