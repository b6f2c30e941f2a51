"""Small HTTP and process helpers shared by the tests (standard library only)."""

import json
import os
import socket
import time
import urllib.error
import urllib.request
from typing import Dict, List, Optional, Tuple


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method: str, url: str, body: Optional[dict] = None, headers: Optional[Dict[str, str]] = None,
         timeout: float = 10.0) -> Tuple[int, Dict[str, str], bytes]:
    """(status, lower-cased headers, body); HTTP error statuses are returned, not raised."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def wait_healthy(base_url: str, timeout: float = 30.0, alive=lambda: True) -> float:
    """Poll GET /health until 200, as a trainer does; seconds waited. Fails fast if not alive()."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if not alive():
            raise AssertionError("router process exited before /health answered 200")
        try:
            if http("GET", base_url + "/health", timeout=1.0)[0] == 200:
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"{base_url}/health not 200 within {timeout} s")


def chat(base_url: str, session_id: Optional[str], content: str) -> Tuple[int, str]:
    """One chat completion through the router; (status, id of the worker that answered)."""
    headers = {"X-Session-ID": session_id} if session_id else {}
    status, response_headers, _ = http(
        "POST", base_url + "/v1/chat/completions",
        {"model": "mock", "messages": [{"role": "user", "content": content}], "max_tokens": 4},
        headers,
    )
    return status, response_headers.get("x-worker-id", "")


def child_pids(pid: int) -> List[int]:
    """Direct children of `pid` (Linux /proc)."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(entry))
    return children


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_until(predicate, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
