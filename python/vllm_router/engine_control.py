"""The engine-control calls a trainer makes between steps, sent through the router.

The router relays each call to every worker (or to one, `worker=URL`) and answers with every
worker's result; see docs/usage.md, "Engine control". A call that failed on some worker raises
`ControlCallFailed`, which carries that answer: nothing is retried, since a weight update is not
idempotent.

`urllib` is imported by the calls: a trainer's program imports this module with `Router`, and
under GraalPy each module it imports is interpreted and costs.
"""

from __future__ import annotations

import json


class ControlCallFailed(RuntimeError):
    """Some worker did not answer a control call with 2xx; `result` is the router's answer:
    `success`, `failed` (the workers' URLs) and `results` (per worker: `worker`, and `status`
    with `body`, or `error`)."""

    def __init__(self, path: str, result: dict):
        self.result = result
        super().__init__(f"{path} failed on {', '.join(result.get('failed', [])) or 'some workers'}")


class EngineControl:
    """Control calls to the router at `url`, authenticated with its admin key when it has one."""

    def __init__(self, url: str, admin_api_key: str | None):
        self._url = url
        self._admin_api_key = admin_api_key

    def pause(self, mode: str, clear_cache: bool | None = None, worker: str | None = None) -> dict:
        """`POST /pause?mode=keep|abort|wait`: new turns for the paused workers wait at the router."""
        return self._call("POST", "/pause", {"mode": mode, "clear_cache": _flag(clear_cache), "worker": worker})

    def resume(self, worker: str | None = None) -> dict:
        return self._call("POST", "/resume", {"worker": worker})

    def sleep(self, level: int | None = None, tags: str | None = None, worker: str | None = None) -> dict:
        return self._call("POST", "/sleep", {"level": level, "tags": tags, "worker": worker})

    def wake_up(self, tags: str | None = None, worker: str | None = None) -> dict:
        return self._call("POST", "/wake_up", {"tags": tags, "worker": worker})

    def reset_prefix_cache(self, worker: str | None = None) -> dict:
        return self._call("POST", "/reset_prefix_cache", {"worker": worker})

    def collective_rpc(self, method: str, kwargs: dict | None = None, worker: str | None = None) -> dict:
        """`POST /collective_rpc` with `{"method": method, "kwargs": kwargs}` to every worker."""
        return self._call("POST", "/collective_rpc", {"worker": worker}, {"method": method, "kwargs": kwargs or {}})

    def init_weight_transfer_engine(self, body: dict, worker: str | None = None) -> dict:
        return self._call("POST", "/init_weight_transfer_engine", {"worker": worker}, body)

    def update_weights(self, body: dict, worker: str | None = None) -> dict:
        return self._call("POST", "/update_weights", {"worker": worker}, body)

    def fetch_weights(self, body: dict | None = None, worker: str | None = None) -> dict:
        return self._call("POST", "/fetch_weights", {"worker": worker}, body)

    def load_lora_adapter(self, body: dict, worker: str | None = None) -> dict:
        return self._call("POST", "/v1/load_lora_adapter", {"worker": worker}, body)

    def unload_lora_adapter(self, body: dict, worker: str | None = None) -> dict:
        return self._call("POST", "/v1/unload_lora_adapter", {"worker": worker}, body)

    def world_size(self, worker: str | None = None) -> int:
        """The sum of the workers' `/get_world_size` answers."""
        return int(self._call("GET", "/get_world_size", {"worker": worker})["world_size"])

    def _call(self, method: str, path: str, query: dict, body: dict | None = None) -> dict:
        import urllib.error
        import urllib.request
        from urllib.parse import urlencode

        params = [(k, str(v)) for k, v in query.items() if v is not None]
        target = self._url + path + ("?" + urlencode(params) if params else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(target, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self._admin_api_key:
            request.add_header("Authorization", f"Bearer {self._admin_api_key}")
        try:
            # No client timeout: the router bounds each worker's call by its request timeout, and a
            # weight update or a drain (mode=wait) is slow.
            with urllib.request.urlopen(request) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", errors="replace")
            if e.code == 502:
                raise ControlCallFailed(path, json.loads(detail)) from None
            raise RuntimeError(f"{method} {path} failed with HTTP {e.code}: {detail}") from None
        except urllib.error.URLError as e:
            raise RuntimeError(f"{method} {path} failed: {e.reason}") from None


def _flag(value: bool | None) -> str | None:
    return None if value is None else ("true" if value else "false")


__all__ = ["ControlCallFailed", "EngineControl"]
