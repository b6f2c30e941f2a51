"""The rollout bench's real-vLLM arm: vLLM workers already running (the real-vLLM tests' CPU build
and tiny model, started as py_test/real_vllm/vllm_process.py starts them with `bench=True`), read
through their own routes, and the simulator calibrated against them.

Calibration measures one idle worker: its decode time per token (vLLM's inter-token latency of one
sequence) and its prefill rate (prompt tokens computed over vLLM's prefill time, for long
prompts nothing of which is cached), and reads its KV capacity (blocks x block tokens) from
`vllm:cache_config_info`. `simulate` then runs the same workload on as many modelled workers with
those figures (`--decode-secs-per-token`, `--prefill-tokens-per-sec`, `--block-tokens`,
`--kv-tokens-per-worker`, and its scheduler's step budget and running limit from GET /server_info),
and `comparison` sets each measured row beside its policy's simulated one.
"""

import json
import random
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from typing import Dict, List, NamedTuple, Optional, Sequence

HITS, QUERIES = "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"
PREEMPTIONS, PROMPT_TOKENS = "vllm:num_preemptions_total", "vllm:prompt_tokens_total"
ITL_SUM, ITL_COUNT = "vllm:inter_token_latency_seconds_sum", "vllm:inter_token_latency_seconds_count"
PREFILL_SUM = "vllm:request_prefill_time_seconds_sum"
COUNTERS = (HITS, QUERIES, PREEMPTIONS, PROMPT_TOKENS, ITL_SUM, ITL_COUNT, PREFILL_SUM)
# Probe sizes: long enough that per-request overheads are small beside them, short of the tiny
# model's 4,096-token context.
DECODE_PROBE_TOKENS = 64
PREFILL_PROBE_WORDS = 2000
PROBES = 3
PROBE_WORDS = ("data", "file", "name", "value", "list", "return", "self", "import", "string", "error")


class NotRealVllm(Exception):
    """A worker URL that is not a vLLM the bench can use; the message is the whole error line."""


def _request(method: str, url: str, body: Optional[dict] = None, timeout: float = 120) -> bytes:
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return answer.read()


def metric(text: str, name: str) -> float:
    """The sum of a metric's samples (every label set) in a Prometheus text page."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and line[len(name):len(name) + 1] in ("{", " "))


class RealWorkers(NamedTuple):
    urls: List[str]
    model: str
    kv_blocks: int
    block_tokens: int

    @staticmethod
    def connect(urls: Sequence[str], model: Optional[str]) -> "RealWorkers":
        """The workers checked: each a vLLM reporting its cache config and serving
        /reset_prefix_cache; NotRealVllm (one line) when one is not."""
        if not urls:
            raise NotRealVllm("--worker-urls names no worker")
        blocks = set()
        for url in urls:
            try:
                page = _request("GET", url + "/metrics", timeout=10).decode()
                models = json.loads(_request("GET", url + "/v1/models", timeout=10))["data"]
                _request("POST", url + "/reset_prefix_cache", timeout=30)
            except urllib.error.HTTPError as e:
                raise NotRealVllm(f"{url}: {e.url} answered {e.code}; the bench needs a vLLM started with its "
                                  f"development routes (VLLM_SERVER_DEV_MODE=1)") from None
            except (OSError, ValueError, KeyError) as e:
                raise NotRealVllm(f"{url}: not a vLLM answering /metrics and /v1/models ({e})") from None
            config = re.search(r'^vllm:cache_config_info\{([^}]*)\}', page, re.M)
            labels = dict(re.findall(r'(\w+)="([^"]*)"', config.group(1))) if config else {}
            if "num_gpu_blocks" not in labels or "block_size" not in labels:
                raise NotRealVllm(f"{url}: its /metrics has no vllm:cache_config_info with its KV blocks")
            blocks.add((int(labels["num_gpu_blocks"]), int(labels["block_size"])))
            model = model or (models[0]["id"] if models else None)
        if len(blocks) != 1:
            raise NotRealVllm(f"the workers' KV caches differ ({sorted(blocks)}); the bench compares like with like")
        (kv_blocks, block_tokens), = blocks
        return RealWorkers(list(urls), model, kv_blocks, block_tokens)

    def reset_prefix_caches(self) -> None:
        for url in self.urls:
            _request("POST", url + "/reset_prefix_cache", timeout=30)

    def counters(self) -> Dict[str, float]:
        pages = [_request("GET", url + "/metrics", timeout=10).decode() for url in self.urls]
        return {name: sum(metric(page, name) for page in pages) for name in COUNTERS}

    def kv_event_sources(self) -> List[str]:
        """Upstream's launcher flags naming each worker's KV event publisher (its `tcp://*`
        endpoint at the worker's host), which its kv_aware needs to be told."""
        flags = []
        for url in self.urls:
            endpoint = json.loads(_request("GET", url + "/kv_event_sources", timeout=10))["0"]["endpoint"]
            host = urllib.parse.urlsplit(url).hostname
            flags += ["--kv-event-source", f"{url}={endpoint.replace('*', host, 1)}"]
        return flags + ["--kv-event-block-size", str(self.block_tokens), "--kv-event-model", self.model]


def with_counters(result: dict, before: Dict[str, float], after: Dict[str, float], kv_blocks: int) -> dict:
    """A driver's result with vLLM's own figures over the batch: the hit rate from its prefix-cache
    counters (the answers' cached tokens kept as `answered_hit_rate`), its preemptions, its blocks."""
    queries = after[QUERIES] - before[QUERIES]
    return dict(result, pressure="real", kv_blocks_per_worker=kv_blocks, answered_hit_rate=result["prefix_hit_rate"],
                prefix_hit_rate=round((after[HITS] - before[HITS]) / queries, 4) if queries else 0.0,
                preemptions=int(after[PREEMPTIONS] - before[PREEMPTIONS]))


class Calibration(NamedTuple):
    decode_secs_per_token: float
    prefill_tokens_per_sec: float
    block_tokens: int
    kv_tokens_per_worker: int
    max_batched_tokens: int
    max_running: int

    def simulate_flags(self) -> List[str]:
        return ["--decode-secs-per-token", f"{self.decode_secs_per_token:.6g}",
                "--prefill-tokens-per-sec", f"{self.prefill_tokens_per_sec:.6g}",
                "--block-tokens", str(self.block_tokens), "--kv-tokens-per-worker", str(self.kv_tokens_per_worker),
                "--max-batched-tokens", str(self.max_batched_tokens), "--max-running", str(self.max_running)]


def calibrate(workers: RealWorkers) -> Calibration:
    """Probes the first worker alone (the others idle): PROBES decodes of DECODE_PROBE_TOKENS from
    a short prompt, and PROBES prefills of a fresh PREFILL_PROBE_WORDS-word prompt; its cache
    emptied before and after."""
    one = RealWorkers(workers.urls[:1], workers.model, workers.kv_blocks, workers.block_tokens)
    one.reset_prefix_caches()
    words = random.Random(0)
    start = one.counters()
    for i in range(PROBES):
        _complete(one, f" probe {i} decode", DECODE_PROBE_TOKENS)
    decoded = one.counters()
    for i in range(PROBES):
        _complete(one, "".join(" " + words.choice(PROBE_WORDS) for _ in range(PREFILL_PROBE_WORDS)), 1)
    prefilled = one.counters()
    one.reset_prefix_caches()
    intervals = decoded[ITL_COUNT] - start[ITL_COUNT]
    computed = (prefilled[PROMPT_TOKENS] - decoded[PROMPT_TOKENS]) - (prefilled[HITS] - decoded[HITS])
    prefill_seconds = prefilled[PREFILL_SUM] - decoded[PREFILL_SUM]
    if intervals <= 0 or prefill_seconds <= 0 or computed <= 0:
        raise RuntimeError(f"{one.urls[0]}: its /metrics did not count the probes' inter-token latency and prefill "
                           f"time (vLLM's {ITL_COUNT} and {PREFILL_SUM}); cannot calibrate")
    decode = (decoded[ITL_SUM] - start[ITL_SUM]) / intervals
    scheduler = _scheduler_config(one.urls[0])
    return Calibration(decode, computed / prefill_seconds, workers.block_tokens, workers.kv_blocks * workers.block_tokens,
                       scheduler["max_num_batched_tokens"], scheduler["max_num_seqs"])


def _scheduler_config(url: str) -> dict:
    """The worker's step budget and running limit, from vLLM's development route GET /server_info."""
    try:
        info = json.loads(_request("GET", url + "/server_info?config_format=json", timeout=120))
        config = info["vllm_config"]
        scheduler = (json.loads(config) if isinstance(config, str) else config)["scheduler_config"]
        return {key: int(scheduler[key]) for key in ("max_num_batched_tokens", "max_num_seqs")}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RuntimeError(f"{url}/server_info did not give its scheduler's max_num_batched_tokens and max_num_seqs "
                           f"({e.__class__.__name__}); cannot calibrate") from None


def _complete(workers: RealWorkers, prompt: str, tokens: int) -> None:
    """One probe; RuntimeError (one line) when the worker refuses it."""
    try:
        _request("POST", workers.urls[0] + "/v1/completions", {"model": workers.model, "prompt": prompt,
                                                               "max_tokens": tokens, "temperature": 0,
                                                               "ignore_eos": True})
    except OSError as e:
        raise RuntimeError(f"{workers.urls[0]}: a calibration probe failed ({' '.join(str(e).split())}); "
                           f"cannot calibrate") from None


def simulated(command: List[str]) -> List[dict]:
    """`simulate ... --json`'s results; RuntimeError when it fails."""
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"simulate failed with status {done.returncode}")
    return json.loads(done.stdout)["results"]


def comparison(measured: List[dict], simulated_rows: List[dict], calibration: Calibration) -> str:
    """Each measured row beside the simulated row of its policy (a foreign router's `NAME:POLICY`
    beside POLICY's): group p50/p90, turn p50/p90 and hit rate, measured / simulated."""
    by_policy = {r["policy"]: r for r in simulated_rows}
    c = calibration
    lines = [f"calibrated: decode {1000 * c.decode_secs_per_token:.2f} ms/token, prefill "
             f"{c.prefill_tokens_per_sec:.0f} tokens/s, {c.kv_tokens_per_worker} KV tokens a worker in blocks of "
             f"{c.block_tokens}, {c.max_batched_tokens} tokens and {c.max_running} sequences a step; "
             f"measured / simulated",
             f"{'policy':<32} {'group50 s':>13} {'group90 s':>13} {'turn50 s':>13} {'turn90 s':>13} {'hit%':>11}"]
    for m in measured:
        s = by_policy.get(m["policy"].split(":")[-1])
        if s is None:
            continue
        pair = lambda key, q: f"{m[key][q]:.2f}/{s[key][q]:.2f}"  # noqa: E731
        lines.append(f"{m['policy']:<32} {pair('group_latency_s', 'p50'):>13} {pair('group_latency_s', 'p90'):>13} "
                     f"{pair('turn_latency_s', 'p50'):>13} {pair('turn_latency_s', 'p90'):>13} "
                     f"{100 * m['prefix_hit_rate']:>5.1f}/{100 * s['prefix_hit_rate']:<5.1f}")
    return "\n".join(lines) + "\n"
