"""Our router in front of two real vLLM workers (vLLM's CPU build, a tiny random-weight model),
and the same tests through the Rust router 0.1.17 (upstream's, the reference) where it has the
feature; where it has not, its case skips and says which feature.

Which worker served a request is read from vLLM itself: requests are sent one at a time and the
worker whose finished-request counter moved served it. Cache benefit is read from vLLM's own
prefix-cache counters.
"""

import json
import random
import time
import urllib.request
import uuid
from typing import Dict, List, Tuple

import pytest

import reference_router
import setup_vllm
from helpers import http, wait_until
from vllm_router import Router, RouterArgs
from vllm_router.bench.real_vllm import metric

OURS, REFERENCE = "ours", f"rust-{reference_router.VERSION}"

MODEL = setup_vllm.MODEL_NAME
FINISHED = "vllm:request_success_total"
CACHE_QUERIES = "vllm:prefix_cache_queries_total"
CACHE_HITS = "vllm:prefix_cache_hits_total"
RUNNING = "vllm:num_requests_running"
GENERATED = "vllm:generation_tokens_total"
# Deterministic words, so each conversation's text is its own and no two share a prefix.
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
         "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def counters(workers, name: str) -> List[float]:
    return [metric(worker.metrics(), name) for worker in workers]


def served_by(workers, send) -> Tuple[int, object]:
    """(index of the worker that finished the request `send()` made, send's result)."""
    before = counters(workers, FINISHED)
    result = send()
    after = counters(workers, FINISHED)
    moved = [i for i, (a, b) in enumerate(zip(before, after)) if b > a]
    assert len(moved) == 1, f"finished counters moved on {moved}"
    return moved[0], result


def launch(workers, policy: str, router: str = OURS, **kwargs):
    """A router of kind `router` in front of `workers`; kwargs are RouterArgs fields, given to the
    Rust router as its launch_router flags."""
    if router == OURS:
        args = RouterArgs(port=0, prometheus_port=0, policy=policy, worker_urls=[w.url for w in workers],
                          worker_startup_check_interval=1, **kwargs)
        return Router.from_args(args).launch()
    argv = ["--policy", policy, "--worker-urls", *[w.url for w in workers]]
    for name, value in kwargs.items():
        flag = "--" + name.replace("_", "-")
        for item in value if isinstance(value, list) else [value]:
            argv += [flag, str(item)]
    return reference_router.ReferenceRouter(argv)


@pytest.fixture(scope="module", params=[OURS, REFERENCE])
def router_kind(request) -> str:
    if request.param == REFERENCE and reference_router.not_ready_reason():
        pytest.skip(reference_router.not_ready_reason())
    return request.param


def only_ours(router_kind: str, feature: str) -> None:
    if router_kind != OURS:
        pytest.skip(f"the Rust router {reference_router.VERSION} has no {feature}")


def post(url: str, path: str, body: dict, headers: Dict[str, str] = None) -> dict:
    status, _, payload = http("POST", url + path, body, headers, timeout=120)
    assert status == 200, payload
    return json.loads(payload)


def words(seed: str, count: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(count))


def chat_body(messages: List[dict], max_tokens: int = 8) -> dict:
    return {"model": MODEL, "messages": messages, "max_tokens": max_tokens, "ignore_eos": True,
            "temperature": 0}


@pytest.fixture(scope="module")
def sticky_router(vllm_workers, router_kind):
    """sticky_least_loaded keyed by X-Session-ID (the Rust router's default header)."""
    extra = dict(session_id_headers=["x-session-id"], session_id_body_fields=[]) if router_kind == OURS else {}
    with launch(vllm_workers, "sticky_least_loaded", router_kind, **extra) as router:
        yield router


def test_completion(sticky_router):
    body = post(sticky_router.url, "/v1/completions",
                {"model": MODEL, "prompt": "def hello(name):", "max_tokens": 8, "ignore_eos": True})
    assert body["object"] == "text_completion"
    assert body["usage"]["completion_tokens"] == 8
    assert isinstance(body["choices"][0]["text"], str)


def test_chat_completion_counts_the_prompt_tokenize_counts(sticky_router):
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "import os"}]
    body = post(sticky_router.url, "/v1/chat/completions", chat_body(messages))
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["usage"]["completion_tokens"] == 8
    tokenized = post(sticky_router.url, "/tokenize", {"model": MODEL, "messages": messages,
                                                       "add_generation_prompt": True})
    assert body["usage"]["prompt_tokens"] == tokenized["count"] == len(tokenized["tokens"])


def test_stream_sends_events_then_done(sticky_router):
    body = chat_body([{"role": "user", "content": "for i in range(3):"}], max_tokens=6)
    body.update(stream=True, stream_options={"include_usage": True})
    request = urllib.request.Request(sticky_router.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = [line[len(b"data: "):].strip() for line in response if line.startswith(b"data: ")]
    assert events[-1] == b"[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert chunks[-1]["usage"]["completion_tokens"] == 6
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert sum(1 for d in deltas if d.get("content")) >= 1


def test_client_disconnect_mid_stream_ends_the_generation_in_vllm(sticky_router, vllm_workers):
    """A client that goes away mid-stream: the router drops its upstream stream and vLLM stops
    generating (nothing left running, far fewer tokens made than asked, no request finished;
    vLLM counts no client abort in request_success_total)."""
    max_tokens = 3000
    finished, generated = totals(vllm_workers, FINISHED), totals(vllm_workers, GENERATED)
    body = chat_body([{"role": "user", "content": "while True:"}], max_tokens=max_tokens)
    body["stream"] = True
    request = urllib.request.Request(sticky_router.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    response = urllib.request.urlopen(request, timeout=120)
    for _ in range(5):
        assert response.readline()
    assert totals(vllm_workers, RUNNING) == 1
    response.close()
    assert wait_until(lambda: totals(vllm_workers, RUNNING) == 0, 120)
    assert totals(vllm_workers, FINISHED) == finished
    assert totals(vllm_workers, GENERATED) - generated < max_tokens


def totals(workers, name: str) -> float:
    return sum(counters(workers, name))


def test_render_gives_the_token_ids_tokenize_gives(sticky_router):
    prompt = "class Router:\n    def route(self, request):"
    rendered = post(sticky_router.url, "/v1/completions/render", {"model": MODEL, "prompt": prompt})
    tokenized = post(sticky_router.url, "/tokenize", {"model": MODEL, "prompt": prompt})
    assert render_token_ids(rendered) == tokenized["tokens"]


def render_token_ids(rendered) -> List[int]:
    """The token ids of the one prompt a render answer carries."""
    first = rendered[0] if isinstance(rendered, list) else rendered
    return first["token_ids"]


def test_sessions_stick_and_finish_session_releases(sticky_router, vllm_workers):
    sessions = [uuid.uuid4().hex for _ in vllm_workers]
    owners = {}
    for turn in range(3):
        for session in sessions:
            messages = [{"role": "user", "content": f"{session} turn {turn}"}]
            worker, _ = served_by(vllm_workers, lambda: post(
                sticky_router.url, "/v1/chat/completions", chat_body(messages), {"X-Session-ID": session}))
            assert owners.setdefault(session, worker) == worker, "a session's turn changed worker"
    assert sorted(owners.values()) == list(range(len(vllm_workers))), "new sessions did not spread"
    assert session_stats(sticky_router)["active_by_worker"] == {w.url: 1 for w in vllm_workers}

    released = session_stats(sticky_router)["released"]
    for session in sessions:
        status, _, _ = http("POST", f"{sticky_router.url}/finish_session?session_id={session}")
        assert status == 200
    stats = session_stats(sticky_router)
    assert (stats["active_sessions"], stats["released"] - released) == (0, len(sessions))


def session_stats(router) -> dict:
    status, _, body = http("GET", router.url + "/sessions")
    assert status == 200, body
    return json.loads(body)


def conversation_hits(router_url: str, workers, name: str, turns: int, session_header: bool) -> Tuple[float, float, int]:
    """One conversation, each turn's prompt the whole conversation so far: (hits, queries) of
    vLLM's prefix cache over its follow-up turns, summed over the workers, and the first
    turn's prompt tokens."""
    messages = [{"role": "system", "content": words(name, 400)}]
    headers = {"X-Session-ID": name} if session_header else {}
    hits = queries = 0.0
    first_prompt_tokens = 0
    for turn in range(turns):
        messages.append({"role": "user", "content": words(f"{name}-{turn}", 60)})
        before = (counters(workers, CACHE_HITS), counters(workers, CACHE_QUERIES))
        answer = post(router_url, "/v1/chat/completions", chat_body(messages, max_tokens=16), headers)
        if turn == 0:
            first_prompt_tokens = answer["usage"]["prompt_tokens"]
        else:
            hits += sum(counters(workers, CACHE_HITS)) - sum(before[0])
            queries += sum(counters(workers, CACHE_QUERIES)) - sum(before[1])
        messages.append({"role": "assistant", "content": answer["choices"][0]["message"]["content"]})
    return hits, queries, first_prompt_tokens


def test_sticky_sessions_keep_the_conversation_cached(sticky_router, vllm_workers, router_kind):
    """A session's follow-up turns find its earlier turns in vLLM's prefix cache, where
    round_robin, alternating the two workers, finds only the turn before last."""
    turns = 4
    sticky_hits, sticky_queries, first_prompt = conversation_hits(
        sticky_router.url, vllm_workers, uuid.uuid4().hex, turns, True)
    with launch(vllm_workers, "round_robin", router_kind) as round_robin:
        rr_hits, rr_queries, _ = conversation_hits(round_robin.url, vllm_workers, uuid.uuid4().hex, turns, False)
    # Every follow-up starts with the first turn's prompt, whose full blocks (those before its
    # last token) stay on the session's worker: the cache is far larger than the conversation.
    block = setup_vllm.KV_BLOCK_TOKENS
    assert sticky_hits >= (turns - 1) * ((first_prompt - 1) // block) * block
    assert sticky_hits / sticky_queries > rr_hits / rr_queries


def router_metric(router, name: str, worker=None) -> float:
    """`name` summed over the router's label sets, or over those of `worker` only."""
    status, _, body = http("GET", f"http://127.0.0.1:{router.metrics_port}/metrics")
    assert status == 200
    lines = body.decode().splitlines()
    if worker is not None:
        lines = [line for line in lines if f'worker="{worker.url}"' in line]
    return metric("\n".join(lines), name)


APPLIED = "vllm_router_kv_events_applied_total"


def hold_once_subscribed(router, worker, messages: List[dict]) -> None:
    """`messages` sent straight to `worker` once the router hears its KV events. A publisher drops
    what it sends before a subscriber's connection is up, and the router subscribes after it is
    ready, so short prompts go to the worker first until the router has applied one of their
    events; then `messages`, and the wait for its events."""
    fillers = iter(range(10_000))

    def heard() -> bool:
        if router_metric(router, APPLIED, worker) > 0:
            return True
        filler = [{"role": "user", "content": words(f"filler-{uuid.uuid4().hex}-{next(fillers)}", 200)}]
        post(worker.url, "/v1/chat/completions", chat_body(filler, max_tokens=1))
        return False

    assert wait_until(heard, 120, interval=1.0), "the router applied no KV event from the worker's publisher"
    applied = router_metric(router, APPLIED, worker)
    post(worker.url, "/v1/chat/completions", chat_body(messages))
    assert wait_until(lambda: router_metric(router, APPLIED, worker) > applied, 30), \
        "the router applied no KV event of the prompt"


def place_follow_ups_on(router, workers, holder: int) -> List[int]:
    """A prompt sent straight to worker `holder`, then follow-ups sharing its prefix sent through
    `router`; the workers that served the follow-ups. `holder` is the last worker in
    registration order, which registry order would not choose."""
    prefix = [{"role": "system", "content": words(uuid.uuid4().hex, 600)}]
    hold_once_subscribed(router, workers[holder], prefix + [{"role": "user", "content": "first"}])
    served = []
    for i in range(4):
        follow_up = prefix + [{"role": "user", "content": f"follow-up {i}"}]
        served.append(served_by(workers, lambda: post(router.url, "/v1/chat/completions", chat_body(follow_up)))[0])
    return served


def kv_event_source(worker) -> str:
    """URL=ENDPOINT for --kv-event-source: the worker's rank-0 publisher, its `tcp://*` bound
    address given the worker's host."""
    status, _, body = http("GET", worker.url + "/kv_event_sources")
    assert status == 200, body
    endpoint = json.loads(body)["0"]["endpoint"]
    assert endpoint.startswith("tcp://*:")
    return f"{worker.url}={endpoint.replace('*', '127.0.0.1', 1)}"


def test_kv_aware_places_on_the_holder_with_named_publishers(vllm_workers, router_kind):
    holder = len(vllm_workers) - 1
    with launch(vllm_workers, "kv_aware", router_kind, kv_event_source=[kv_event_source(w) for w in vllm_workers],
                kv_event_block_size=setup_vllm.KV_BLOCK_TOKENS, kv_event_model=MODEL) as router:
        assert place_follow_ups_on(router, vllm_workers, holder) == [holder] * 4


def test_kv_aware_subscribes_itself_and_places_on_the_holder(vllm_workers, router_kind):
    """kv_aware finds each worker's publisher through /kv_event_sources (its `tcp://*` endpoint
    mapped to the worker's host), with no publisher named."""
    holder = len(vllm_workers) - 1
    with launch(vllm_workers, "kv_aware", router_kind) as router:
        assert place_follow_ups_on(router, vllm_workers, holder) == [holder] * 4


# The series of a worker's /metrics that sticky_balanced's load reader takes (VllmLoadMetrics).
LOAD_SERIES = ("vllm:num_requests_waiting", RUNNING, "vllm:kv_cache_usage_perc")
LOAD_SCRAPE_ROUNDS_SECS = 3.5


def has_series(text: str, name: str) -> bool:
    return any(line.startswith(name) and line[len(name):len(name) + 1] in ("{", " ") for line in text.splitlines())


def test_sticky_balanced_reads_the_workers_own_load_from_real_metrics(vllm_workers, router_kind, capfd):
    """The live load of sticky_balanced: real vLLM publishes the queue, the batch and the KV-cache
    use under the names the router reads, a stream in flight shows in them, and the router's
    reader takes them (it logs a worker whose /metrics gives no load)."""
    only_ours(router_kind, "sticky_balanced (placement by the workers' own /metrics)")
    with launch(vllm_workers, "sticky_balanced", session_id_headers=["x-session-id"],
                session_id_body_fields=[]) as router:
        body = chat_body([{"role": "user", "content": "while True:"}], max_tokens=3000)
        body["stream"] = True
        request = urllib.request.Request(router.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json", "X-Session-ID": "live"},
                                         method="POST")
        with urllib.request.urlopen(request, timeout=120) as response:
            for _ in range(5):
                assert response.readline()
            texts = [w.metrics() for w in vllm_workers]
            assert all(has_series(t, name) for t in texts for name in LOAD_SERIES)
            assert sum(metric(t, RUNNING) for t in texts) == 1
            assert sum(metric(t, "vllm:num_requests_waiting") for t in texts) == 0
            assert max(metric(t, "vllm:kv_cache_usage_perc") for t in texts) > 0
            # A few of the reader's rounds (one a second) while the stream runs.
            time.sleep(LOAD_SCRAPE_ROUNDS_SECS)
    assert "no load from /metrics" not in capfd.readouterr().err
