"""The class cache's training run proxies a workload, so a router started with the cache finds
the proxy path's classes in it (JEP 483) instead of loading them from the jar on the first
requests, and its JIT starts from the training run's profiles (JEP 515)."""

import json
import subprocess
import threading
import time

from vllm_router.bridge import class_cache
from vllm_router.bridge.engine_command import engine_command, jvm_options, read_event
from vllm_router.bridge.java_runtime import find_java

from helpers import http

BUILD_WAIT_SECS = 180
FROM_CACHE = "source: shared objects file"


def built_cache(java, jar):
    """The cache `make` built (or a builder is building) for the installed package; built here
    when there is none."""
    deadline = time.monotonic() + BUILD_WAIT_SECS
    path = class_cache.cache_path(java, jar, jvm_options())
    while not path.is_file() and time.monotonic() < deadline:
        if class_cache.build(java, jar) is None:
            time.sleep(1)  # another builder is at work
    assert path.is_file(), f"no class cache at {path} after {BUILD_WAIT_SECS} s"
    return path


def test_a_router_finds_the_proxy_path_in_the_class_cache(engine_jar, mock_workers):
    java = find_java()
    if java.major_version < class_cache.MIN_JAVA_MAJOR_FOR_AOT_CACHE:
        assert class_cache.cache_path(java, engine_jar, jvm_options()) is None
        return
    cache = built_cache(java, engine_jar)
    command = engine_command(java, engine_jar, ["serve", "--config", "-"],
                             [f"-XX:AOTCache={cache}", "-Xlog:class+load=info"])
    engine = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    lines = []
    try:
        config = {"host": "127.0.0.1", "port": 0, "prometheus_port": 0,
                  "policy": "sticky_least_loaded", "worker_urls": mock_workers[:2]}
        engine.stdin.write(json.dumps(config).encode() + b"\n")
        engine.stdin.flush()
        ready = read_event(engine.stdout, lines.append)
        assert ready and ready["event"] == "ready", ready
        reader = threading.Thread(target=lambda: lines.extend(engine.stdout))
        reader.start()
        base = f"http://127.0.0.1:{ready['port']}"
        for api, body in (("/v1/completions", {"model": "mock", "prompt": "hello", "max_tokens": 4}),
                          ("/v1/chat/completions",
                           {"model": "mock", "messages": [{"role": "user", "content": "hello"}]})):
            status, _, answer = http("POST", base + api, body, {"X-Session-ID": "t-1"})
            assert status == 200, answer
        engine.stdin.close()
        assert engine.wait(30) == 0
        reader.join(10)
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    loads = [line.decode(errors="replace") for line in lines if b"[class,load]" in line]
    proxy_path = [line for line in loads if " org.vllmrouter.server.proxy." in line]
    assert any("ProxyExchange " in line for line in proxy_path), "the router proxied nothing"
    from_jar = [line for line in proxy_path if FROM_CACHE not in line]
    assert not from_jar, "proxy-path classes loaded from the jar, not the cache:\n" + "\n".join(from_jar)
