#!/usr/bin/env bash
# Side-by-side proxy benchmark on loopback. Backends: two nginx servers answering a fixed completion
# (BACKEND=nginx, so the backend costs little), or the mock (BACKEND=mock). In front of them, one arm at
# a time:
#   direct         wrk straight to the first backend (no proxy)
#   haproxy        HAProxy, leastconn + stick table on X-Session-ID
#   haproxy-1t     the same HAProxy on one thread (nbthread 1): what a single event loop costs any proxy here
#   nginx-hash     nginx, `hash $http_x_session_id consistent`
#   rust           upstream's vllm-router 0.1.17 (the Rust router), pip-installed into a venv of its own
#   router         this tree's router
#   router-base    the router of BASE_TREE (an older build, for "does main route as fast as it did")
#   router-before  the router of BEFORE_TREE (e.g. `git archive main | tar -x -C DIR`), for before/after
#   router-trace   this tree's router with --enable-trace, sampling 1.0, exporting every span over OTLP
#                  HTTP/protobuf to a live sink (an nginx server answering 200; BACKEND=nginx only)
#   router-trace-down  the same with the collector down (gRPC, as upstream, to a port nobody listens on):
#                  every export fails, the queue fills and spans are dropped (docs/perf/tracing.md)
# The Rust and our routers start the way a user starts them, `python -m vllm_router.launch_router
# --policy sticky_least_loaded ...`, so CPU and memory count the whole process tree (the Python process
# holding the Rust library; ours: the engine JVM, which takes the command's process, or, for an older tree,
# its Python launcher and the engine JVM). Per arm: start-up time (spawn to a healthy /health), idle RSS, a warm-up,
# then per concurrency level a wrk run (one thread, keep-alive, a BODY_BYTES POST to /v1/completions with
# a random X-Session-ID out of SESSIONS). Columns: requests/s, p50/p99/p99.9 (wrk's, which it corrects for
# coordinated omission: a stall counts once per mean interval it lasts; examples/bench/legs/legs.py gives
# the raw ones beside them), CPU microseconds per request
# of the proxy's process tree (utime+stime from /proc over the measured run / requests) and the tree's RSS
# at the end of the level; and the proxy's busiest thread: the share of the run it ran and the share it
# was runnable but waiting for a CPU (/proc schedstat), where a one-loop proxy's requests queue, and the
# share of the machine's CPU time left idle during the run (/proc/stat). With the
# nginx backend, an SSE probe follows: time to first byte of a small
# SSE answer over one keep-alive connection (median, minus the direct one = what the proxy adds) and the
# bytes per second of a large SSE answer relayed.
#
# ROUNDS > 0 runs the arms side by side instead: all of them start at once (each on a port of its own)
# and are warmed, then each level is measured in ROUNDS rounds of one DURATION_S window per arm, the
# arms' order rotated every round; a round plays the part of a run in the report, whose paired ratios
# (the median over rounds of an arm's value over HAProxy's in the same round, for CPU, req/s and
# each latency percentile from p50 to p99.9) then compare windows seconds apart. On a shared machine a
# window's req/s and p99 move a lot from one window to the next for the same warm proxy, for HAProxy as
# for ours; runs minutes apart cannot see a small difference through that, adjacent windows can
# (docs/perf/load-compare.md).
#
# RUNS > 1 (without ROUNDS) repeats the whole arm list (runs interleave arms, so a slow minute hits every arm alike), in
# reverse order on every second run: an arm that follows another JVM arm can measure slower than the same
# arm run first, so with an even RUNS each arm takes each place equally often; the
# report gives the median of the runs and ratios against HAProxy, and draws a PNG (latency percentiles,
# CPU per request and RSS per arm) next to the text output when matplotlib is importable.
#
# Every run has a bounded duration; everything started here is stopped by pid on exit.
#
# Environment (defaults in brackets):
#   ARMS ["direct haproxy haproxy-1t nginx-hash rust router"]   CONCURRENCIES ["16 64"]   RUNS [1]   ROUNDS [0]
#   BACKEND [nginx]      nginx | mock
#   ARM_WARMUP_S [240]   warm-up of a JVM arm (router*), not measured. On a busy machine the JIT's
#                        compiler threads wait for CPU and a short warm-up can leave the router partly
#                        interpreted; even on a quiet host the JIT refines the proxy path for minutes
#                        (docs/perf/load-compare.md).
#   LEVEL_WARMUP_S [5]   warm-up run before each measured level (and the whole warm-up of other arms)
#   WARMUP_CHUNK_S [10]  an arm's warm-up is split into wrk runs of at most this long, cycling through
#                        CONCURRENCIES, so that connection set-up and close are warm as well
#   DURATION_S [15]      measured seconds per level
#   IDLE_WAIT_S [12]     seconds between a healthy /health and the idle RSS sample (a JVM's start-up
#                        compilations hold C heap for a few seconds; our engine trims it every 10 s)
#   BODY_BYTES [2048]    SESSIONS [1000] (1 to 999999)    BASE_PORT [18100]
#   BODY_SHAPE [prompt]  prompt: {"model", "max_tokens", "prompt": one string of BODY_BYTES}; token_ids: a SkyRL
#                        generate body, {"model", "sampling_params", "token_ids": integers up to BODY_BYTES}
#   JAVA [a JDK >= 21 found under /usr/lib/jvm, else java]: runs the mock and our routers' engines
#   ROUTER_PYTHON [.venv/bin/python of this tree, else python3]: runs our routers' launchers; each router
#                        arm imports vllm_router from its tree's python/ and runs its tree's engine jar
#                        (built with `mvn -o package -DskipTests` in that tree when missing)
#   BASE_TREE [/work/wt/base]   BEFORE_TREE [unset]: source trees of router-base and router-before
#   RUST_VENV [/tmp/up117]: venv holding vllm-router==0.1.17 (created when missing)
#   VLLM_ROUTER_JVM_OPTS: passed to every router arm, as a user would
#   CLASS_CACHE_HOME [/tmp/load_compare-cache]: where our routers' start-up caches are built (before
#                        the arm starts, so no cache build runs during a measurement)
#   OUT_DIR [bench-results]   results: load_compare-<time>.jsonl (one line per arm, run and level),
#                        .txt (the report) and .png (the plot)
#   KEEP_WORK [unset]    keep the temporary directory (configs, process logs)
#   OWN_SESSIONS [0]     0: the backends and every arm's proxy run in this script's session, with wrk; 1: each
#                        starts in a session of its own (setsid), as a daemon or a service does (HAProxy and
#                        nginx daemonize into one by default). Where the kernel groups tasks by session
#                        (kernel.sched_autogroup_enabled=1, the default here and on most distributions) each
#                        session is one scheduling group, as heavy as any other, so this decides who gets a
#                        CPU: in one session the threads compete one by one, in sessions of their own program
#                        by program. 0 is how a trainer runs the router (its child, in its session) and what
#                        earlier results used. The choice moves the result (docs/perf/event-loops.md).
#
# Tracing's cost (docs/perf/tracing.md): ROUNDS=6 CONCURRENCIES=16 ARMS="haproxy router router-trace router-trace-down"
# Quick check:  ARM_WARMUP_S=3 LEVEL_WARMUP_S=1 DURATION_S=3 ARMS="direct haproxy router" examples/bench/load_compare.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

ARMS=${ARMS:-"direct haproxy haproxy-1t nginx-hash rust router"}
CONCURRENCIES=${CONCURRENCIES:-"16 64"}
RUNS=${RUNS:-1}
ROUNDS=${ROUNDS:-0}
[[ "$ROUNDS" =~ ^[0-9]+$ ]] || { echo "ROUNDS must be a whole number, not '$ROUNDS'" >&2; exit 2; }
BACKEND=${BACKEND:-nginx}
ARM_WARMUP_S=${ARM_WARMUP_S:-240}
LEVEL_WARMUP_S=${LEVEL_WARMUP_S:-5}
WARMUP_CHUNK_S=${WARMUP_CHUNK_S:-10}
IDLE_WAIT_S=${IDLE_WAIT_S:-12}
DURATION_S=${DURATION_S:-15}
BODY_BYTES=${BODY_BYTES:-2048}
BODY_SHAPE=${BODY_SHAPE:-prompt}
case "$BODY_SHAPE" in prompt|token_ids) ;; *) echo "BODY_SHAPE must be prompt or token_ids, not '$BODY_SHAPE'" >&2; exit 2 ;; esac
SESSIONS=${SESSIONS:-1000}
# wrk holds one built request (BODY_BYTES and its head) per session id.
[[ "$SESSIONS" =~ ^[1-9][0-9]{0,5}$ ]] || { echo "SESSIONS must be a whole number from 1 to 999999, not '$SESSIONS'" >&2; exit 2; }
OWN_SESSIONS=${OWN_SESSIONS:-0}
case "$OWN_SESSIONS" in
  1) DETACH=setsid ;;  # in a background subshell, not a group leader: setsid execs in place, so $! stays the pid
  0) DETACH= ;;
  *) echo "OWN_SESSIONS must be 0 or 1, not '$OWN_SESSIONS'" >&2; exit 2 ;;
esac
BASE_PORT=${BASE_PORT:-18100}
BASE_TREE=${BASE_TREE:-/work/wt/base}
BEFORE_TREE=${BEFORE_TREE:-}
RUST_VENV=${RUST_VENV:-/tmp/up117}
CLASS_CACHE_HOME=${CLASS_CACHE_HOME:-/tmp/load_compare-cache}
OUT_DIR=${OUT_DIR:-bench-results}
if [[ -z "${ROUTER_PYTHON:-}" ]]; then
  if [[ -x "$ROOT/.venv/bin/python" ]]; then ROUTER_PYTHON="$ROOT/.venv/bin/python"; else ROUTER_PYTHON=python3; fi
fi

BACKEND_PORTS=($((BASE_PORT + 1)) $((BASE_PORT + 2)))
# router-trace's span sink (served by the nginx backends' process) and router-trace-down's dead collector.
COLLECTOR_PORT=$((BASE_PORT + 3))
DEAD_COLLECTOR_PORT=$((BASE_PORT + 4))
PROXY_PORT=$((BASE_PORT + 10))
METRICS_PORT=$((BASE_PORT + 11))
SSE_SMALL_BYTES=2048
SSE_LARGE_MIB=256

WORK=$(mktemp -d /tmp/load_compare.XXXXXX)
chmod 755 "$WORK"  # nginx's workers (user nobody) read the SSE files in it
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [[ -z "${KEEP_WORK:-}" ]]; then rm -rf "$WORK"; else log "logs kept in $WORK"; fi
}
trap cleanup EXIT

log() { echo "[load_compare] $(date -u +%H:%M:%S) $*" >&2; }

find_java() {
  if [[ -n "${JAVA:-}" ]]; then echo "$JAVA"; return; fi
  local candidate
  for candidate in /usr/lib/jvm/*/bin/java "$(command -v java || true)"; do
    [[ -x "$candidate" ]] || continue
    local major
    major=$("$candidate" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
    if [[ "${major%%.*}" -ge 21 ]]; then echo "$candidate"; return; fi
  done
  echo "no JDK >= 21 found (set JAVA)" >&2
  exit 1
}
JAVA=$(find_java)

need() {  # need COMMAND DEBIAN_PACKAGE: benchmark tools only, installed on first use
  command -v "$1" >/dev/null && return
  log "installing $2 (Debian package)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2
}
need wrk wrk
need curl curl

# Waits (bounded) for an HTTP 200 on a URL while process PID is alive.
wait_http() {
  local url=$1 pid=$2 deadline=$((SECONDS + ${3:-60}))
  until curl -fsS -o /dev/null "$url" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then log "process $pid exited before $url answered"; return 1; fi
    if (( SECONDS >= deadline )); then log "timeout waiting for $url"; return 1; fi
    sleep 0.02
  done
}

# tree_stats PID -> "CPU_TICKS RSS_KIB" of PID and all its descendants (utime+stime; resident set).
tree_stats() { python3 "$ROOT/examples/bench/proc_stats.py" tree "$1"; }

# busiest_thread PID [BEFORE_FILE]: without BEFORE_FILE, the scheduler's counters of every thread of PID's
# process tree as JSON; with it, the thread that ran most since BEFORE_FILE was written, as {"run_ns",
# "wait_ns", "busy_threads"} (see proc_stats.py). A proxy whose one busiest thread runs and waits most of
# the window queues its requests there; the haproxy-1t arm shows what that costs a proxy that is not ours.
busiest_thread() { python3 "$ROOT/examples/bench/proc_stats.py" threads "$@"; }

# host_cpu [BEFORE_FILE]: without BEFORE_FILE, the machine's CPU counters as JSON; with it, the share of the
# CPU time since then that no process used. A proxy whose one loop is the pipeline's serial stage leaves the
# other CPU idle while the client and the workers wait on it, even with requests queued.
host_cpu() { python3 "$ROOT/examples/bench/proc_stats.py" host "$@"; }

# --- backends --------------------------------------------------------------------------------------
COMPLETION='{"id":"cmpl-bench","object":"text_completion","created":0,"model":"mock","choices":[{"index":0,"text":" a fixed answer of the benchmark backend","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":512,"completion_tokens":8,"total_tokens":520}}'

nginx_bin() { need nginx nginx; command -v nginx; }

start_nginx_backends() {
  mkdir -p "$WORK/sse"
  python3 - "$WORK/sse" "$SSE_SMALL_BYTES" "$SSE_LARGE_MIB" <<'PY'
import sys
directory, small, large_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
event = b'data: {"id":"cmpl-bench","object":"text_completion","choices":[{"index":0,"text":" token"}]}\n\n'
def write(name, size):
    with open(f"{directory}/{name}.txt", "wb") as f:
        f.write(event * max(1, size // len(event)) + b"data: [DONE]\n\n")
write("small", small)
write("large", large_mib << 20)
PY
  {
    echo "worker_processes 2;"
    echo "pid $WORK/nginx-backend.pid;"
    echo "events { worker_connections 4096; }"
    echo "http {"
    echo "  access_log off;"
    echo "  keepalive_requests 100000000;"
    echo "  keepalive_timeout 300s;"
    echo "  client_body_buffer_size 64k;"
    for p in "${BACKEND_PORTS[@]}"; do
      echo "  server {"
      echo "    listen 127.0.0.1:$p backlog=4096;"
      # A request carrying X-Bench-Sse gets a static SSE file of that name; error_page turns the static
      # module's 405 for a POST into the file (as a GET).
      echo "    location /v1/completions {"
      echo "      if (\$http_x_bench_sse) { rewrite ^ /sse/\$http_x_bench_sse.txt last; }"
      echo "      default_type application/json;"
      echo "      return 200 '$COMPLETION';"
      echo "    }"
      echo "    location /sse/ {"
      echo "      alias $WORK/sse/;"
      echo "      default_type text/event-stream;"
      echo "      error_page 405 =200 \$uri;"
      echo "    }"
      echo "    location / { default_type application/json; return 200 '{\"status\":\"ok\"}'; }"
      echo "  }"
    done
    # The span sink of router-trace: accepts every OTLP/HTTP export and drops it.
    echo "  server {"
    echo "    listen 127.0.0.1:$COLLECTOR_PORT;"
    echo "    client_max_body_size 64m;"
    echo "    location / { return 200; }"
    echo "  }"
    echo "}"
  } > "$WORK/nginx-backend.conf"
  $DETACH "$(nginx_bin)" -p "$WORK" -e "$WORK/nginx-backend.err" -c "$WORK/nginx-backend.conf" -g 'daemon off;' \
      > "$WORK/nginx-backend.log" 2>&1 &
  BACKEND_PID=$!
  PIDS+=("$BACKEND_PID")
  for p in "${BACKEND_PORTS[@]}"; do
    wait_http "http://127.0.0.1:$p/health" "$BACKEND_PID" 30
  done
}

start_mock_backends() {
  local jar="$ROOT/java/host/target/vllm-router-engine.jar"
  [[ -f "$jar" ]] || { log "BACKEND=mock needs $jar (make engine-jar)"; exit 1; }
  local ports_csv
  ports_csv=$(IFS=,; echo "${BACKEND_PORTS[*]}")
  $DETACH "$JAVA" -Xms256m -Xmx512m -cp "$jar" org.vllmrouter.mock.MockWorkerMain --ports "$ports_csv" \
      > "$WORK/mock.out" 2> "$WORK/mock.err" &
  BACKEND_PID=$!
  PIDS+=("$BACKEND_PID")
  for p in "${BACKEND_PORTS[@]}"; do
    wait_http "http://127.0.0.1:$p/health" "$BACKEND_PID" 60
  done
}

# --- arms ------------------------------------------------------------------------------------------
worker_urls() { printf 'http://127.0.0.1:%s ' "${BACKEND_PORTS[@]}"; }

# start_haproxy [THREADS]: HAProxy with its default thread count (one a CPU), or THREADS.
start_haproxy() {
  need haproxy haproxy
  {
    echo "global"
    echo "    maxconn 4096"
    [[ -n "${1:-}" ]] && echo "    nbthread $1"
    echo "defaults"
    echo "    mode http"
    echo "    option http-keep-alive"
    echo "    http-reuse always"
    echo "    timeout connect 5s"
    echo "    timeout client 60s"
    echo "    timeout server 60s"
    echo "frontend fe"
    echo "    bind 127.0.0.1:$PROXY_PORT"
    echo "    default_backend workers"
    echo "backend workers"
    echo "    balance leastconn"
    echo "    stick-table type string len 128 size 1m expire 2h"
    echo "    stick on req.fhdr(x-session-id)"
    local i=1
    for p in "${BACKEND_PORTS[@]}"; do
      echo "    server w$i 127.0.0.1:$p"
      i=$((i + 1))
    done
  } > "$WORK/haproxy.cfg"
  spawn "haproxy -f $WORK/haproxy.cfg -db"
}

start_nginx_hash() {
  {
    echo "worker_processes auto;"
    echo "pid $WORK/nginx-hash.pid;"
    echo "events { worker_connections 4096; }"
    echo "http {"
    echo "  access_log off;"
    echo "  keepalive_requests 100000000;"
    echo "  upstream workers {"
    echo "    hash \$http_x_session_id consistent;"
    for p in "${BACKEND_PORTS[@]}"; do echo "    server 127.0.0.1:$p;"; done
    echo "    keepalive 128;"
    echo "    keepalive_requests 100000000;"
    echo "  }"
    echo "  server {"
    echo "    listen 127.0.0.1:$PROXY_PORT backlog=4096;"
    echo "    location / {"
    echo "      proxy_pass http://workers;"
    echo "      proxy_http_version 1.1;"
    echo "      proxy_set_header Connection \"\";"
    echo "      proxy_buffering off;"
    echo "    }"
    echo "  }"
    echo "}"
  } > "$WORK/nginx-hash.conf"
  spawn "$(nginx_bin) -p $WORK -e $WORK/nginx-hash.err -c $WORK/nginx-hash.conf -g 'daemon off;'"
}

launch_flags() {
  echo "--host 127.0.0.1 --port $PROXY_PORT --prometheus-port $METRICS_PORT --policy sticky_least_loaded --worker-urls $(worker_urls)"
}

start_rust() {
  if [[ ! -x "$RUST_VENV/bin/python" ]] || ! "$RUST_VENV/bin/python" -c 'import vllm_router_rs' 2>/dev/null; then
    log "installing vllm-router==0.1.17 into $RUST_VENV"
    python3 -m venv "$RUST_VENV"
    "$RUST_VENV/bin/pip" -q install vllm-router==0.1.17 >&2
  fi
  spawn "$RUST_VENV/bin/python -m vllm_router.launch_router $(launch_flags)"
}

# start_our_router TREE: that tree's launcher and engine jar, started as a user starts them.
# start_our_router TREE [FLAGS] [ENV]: TREE's router, with FLAGS after the common ones and ENV (NAME=VALUE ...)
# in its environment.
start_our_router() {
  local tree=$1 flags=${2:-} extra_env=${3:-}
  local jar="$tree/java/host/target/vllm-router-engine.jar"
  if [[ ! -f "$jar" ]]; then
    log "building the engine jar of $tree"
    (cd "$tree" && mvn -B -ntp -o -q -pl java/host -am package -DskipTests >&2)
  fi
  local env="PYTHONPATH=$tree/python VLLM_ROUTER_ENGINE_JAR=$jar VLLM_ROUTER_JAVA=$JAVA XDG_CACHE_HOME=$CLASS_CACHE_HOME $extra_env"
  # The start-up cache a user's `make` builds; built here, before the arm starts, so that no
  # background build runs during a measurement.
  (eval "env $env $ROUTER_PYTHON -m vllm_router.bridge.class_cache") >&2 || true
  spawn "env $env $ROUTER_PYTHON -m vllm_router.launch_router $(launch_flags) $flags"
}

# spawn COMMAND: starts the arm's proxy (exec, so the pid held is the tree's root) and waits for its
# /health; sets PROXY_PID, START_S and IDLE_RSS_KIB.
spawn() {
  local started
  started=$(date +%s.%N)
  ( eval "exec $DETACH $1" ) > "$WORK/proxy-$PROXY_PORT.out" 2> "$WORK/proxy-$PROXY_PORT.err" &
  PROXY_PID=$!
  PIDS+=("$PROXY_PID")
  if ! wait_http "http://127.0.0.1:$PROXY_PORT/health" "$PROXY_PID" 120; then
    log "proxy did not become healthy: $(tail -5 "$WORK/proxy-$PROXY_PORT.err")"
    return 1
  fi
  START_S=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  sleep "$IDLE_WAIT_S"
  IDLE_RSS_KIB=$(tree_stats "$PROXY_PID" | cut -d' ' -f2)
}

stop_proxy() {
  if [[ -n "${PROXY_PID:-}" ]]; then
    kill "$PROXY_PID" 2>/dev/null || true
    wait "$PROXY_PID" 2>/dev/null || true
    PROXY_PID=
  fi
}

# --- load ------------------------------------------------------------------------------------------
cat > "$WORK/post.lua" <<LUA
local body
if "$BODY_SHAPE" == "token_ids" then
  local ids, length = {}, 0
  while length < $BODY_BYTES - 100 do
    ids[#ids + 1] = tostring(1000 + (#ids * 7919) % 150000)
    length = length + #ids[#ids] + 1
  end
  body = '{"model":"mock","sampling_params":{"temperature":1.0,"max_tokens":8},"token_ids":['
    .. table.concat(ids, ",") .. ']}'
else
  body = '{"model":"mock","max_tokens":8,"prompt":"' .. string.rep("x", math.max(0, $BODY_BYTES - 60)) .. '"}'
end
-- One request per session id, built once: formatting the request on every call costs wrk CPU that it
-- shares with the proxy under test and its backends (docs/perf/load-compare.md).
local built = {}
local thread_seed = os.time()

init = function(args)
  math.randomseed(thread_seed)
  for i = 1, $SESSIONS do
    built[i] = wrk.format("POST", "/v1/completions",
      {["Content-Type"] = "application/json", ["X-Session-ID"] = "bench-" .. i}, body)
  end
end

request = function()
  return built[math.random($SESSIONS)]
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"duration_us":%d,"socket_errors":%d,"status_errors":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"p995_us":%d,"p999_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.5),
    latency:percentile(99.9), latency.max))
end
LUA

# wrk_run URL C SECONDS -> the done() JSON line
wrk_run() {
  timeout $(($3 + 60)) wrk -t1 -c"$2" -d"$3s" --timeout 10s -s "$WORK/post.lua" "$1" | grep '^{' || true
}

# sse_probe URL -> JSON: median time to first byte of the small SSE answer (200 of them after 2,000 unmeasured; one
# keep-alive connection) and the median bytes/s of five large ones after three unmeasured.
sse_probe() {
  local url=$1
  python3 - "$url" "$(stat -c %s "$WORK/sse/large.txt")" <<'PY'
import http.client, json, statistics, sys, time
from urllib.parse import urlsplit
u = urlsplit(sys.argv[1])
body = b'{"model":"mock","stream":true,"prompt":"hello"}'
def request(conn, size):
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json",
                 "X-Bench-Sse": size, "X-Session-ID": "sse-probe"})
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
ttfb = []
# The first answers open the proxy's worker connections and, in a JIT-compiled proxy, run its streaming path
# before it is compiled (the load levels before this probe relay plain JSON answers only): measure after them.
WARM = 2000
for i in range(WARM + 200):
    start = time.perf_counter()
    request(conn, "small")
    response = conn.getresponse()
    if response.status != 200:
        sys.exit(f"SSE probe: HTTP {response.status} from {sys.argv[1]}")
    response.read(1)
    first = time.perf_counter() - start
    response.read()
    if i >= WARM:
        ttfb.append(first)
# Relaying a large answer runs the proxy's backpressure path (the client's buffer fills, reads pause and resume),
# which no load level or small answer reaches: in a JIT-compiled proxy the first large answers run it before it is
# compiled, so the first ones are not measured (docs/perf/load-compare.md).
WARM_LARGE, MEASURED_LARGE = 3, 5
rates = []
for i in range(WARM_LARGE + MEASURED_LARGE):
    start = time.perf_counter()
    request(conn, "large")
    response = conn.getresponse()
    total = 0
    while True:
        chunk = response.read(1 << 20)
        if not chunk:
            break
        total += len(chunk)
    if total != int(sys.argv[2]):
        sys.exit(f"SSE probe: {total} bytes, expected {sys.argv[2]}, from {sys.argv[1]}")
    if i >= WARM_LARGE:
        rates.append(total / (time.perf_counter() - start))
print(json.dumps({"ttfb_us": round(statistics.median(ttfb) * 1e6), "sse_bytes_per_s": round(statistics.median(rates))}))
PY
}

# --- run -------------------------------------------------------------------------------------------
case "$BACKEND" in
  nginx) start_nginx_backends ;;
  mock) start_mock_backends ;;
  *) log "unknown BACKEND $BACKEND"; exit 1 ;;
esac
log "backends ($BACKEND) ready on ${BACKEND_PORTS[*]}"

mkdir -p "$OUT_DIR"
STAMP=$(date +%Y%m%d-%H%M%S)
RESULTS="$OUT_DIR/load_compare-$STAMP.jsonl"
log "results -> $RESULTS"

DIRECT_SSE=""
if [[ "$BACKEND" == nginx ]]; then
  DIRECT_SSE=$(sse_probe "http://127.0.0.1:${BACKEND_PORTS[0]}" || echo null)
  log "SSE, direct: $DIRECT_SSE"
fi

# start_arm ARM: starts ARM's proxy on PROXY_PORT (none for direct) and sets ARM_URL, PROXY_PID,
# START_S and IDLE_RSS_KIB; fails when the arm is unknown or did not start.
start_arm() {
  PROXY_PID= START_S=null IDLE_RSS_KIB=null
  local started_ok=1
  case "$1" in
    direct) ARM_URL="http://127.0.0.1:${BACKEND_PORTS[0]}"; return 0 ;;
    haproxy) start_haproxy || started_ok=0 ;;
    haproxy-1t) start_haproxy 1 || started_ok=0 ;;
    nginx-hash) start_nginx_hash || started_ok=0 ;;
    rust) start_rust || started_ok=0 ;;
    router) start_our_router "$ROOT" || started_ok=0 ;;
    router-base) start_our_router "$BASE_TREE" || started_ok=0 ;;
    router-trace)
      if [[ "$BACKEND" != nginx ]]; then log "router-trace needs BACKEND=nginx (its span sink)"; return 1; fi
      start_our_router "$ROOT" "--enable-trace --otlp-traces-endpoint http://127.0.0.1:$COLLECTOR_PORT --otel-sampling-ratio 1.0" \
          "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf" || started_ok=0 ;;
    router-trace-down)
      start_our_router "$ROOT" "--enable-trace --otlp-traces-endpoint 127.0.0.1:$DEAD_COLLECTOR_PORT --otel-sampling-ratio 1.0" \
          || started_ok=0 ;;
    router-before)
      if [[ -z "$BEFORE_TREE" ]]; then log "router-before needs BEFORE_TREE"; return 1; fi
      start_our_router "$BEFORE_TREE" || started_ok=0 ;;
    *) log "unknown arm $1"; return 1 ;;
  esac
  if (( ! started_ok )); then stop_proxy; return 1; fi
  ARM_URL="http://127.0.0.1:$PROXY_PORT"
}

# warm_arm ARM URL LABEL: the arm's unmeasured warm-up (ARM_WARMUP_S for our routers, else LEVEL_WARMUP_S).
warm_arm() {
  local warmup=$LEVEL_WARMUP_S
  [[ "$1" == router* ]] && warmup=$ARM_WARMUP_S
  log "$3: warm-up ${warmup}s in runs of up to ${WARMUP_CHUNK_S}s"
  # Several runs, cycling through the measured concurrencies: each run opens and closes its
  # connections, and the JIT has to see those paths too. After a single long run they were first
  # taken in the measured level, whose first seconds then held a burst of deoptimizations and
  # recompiles (docs/perf/load-compare.md).
  local levels=($CONCURRENCIES) chunk left
  for ((chunk = 0; chunk * WARMUP_CHUNK_S < warmup; chunk++)); do
    left=$((warmup - chunk * WARMUP_CHUNK_S))
    wrk_run "$2/v1/completions" "${levels[chunk % ${#levels[@]}]}" \
        "$((left < WARMUP_CHUNK_S ? left : WARMUP_CHUNK_S))" > /dev/null
  done
}

# measure RUN ARM URL PID C SECONDS IDLE_RSS_KIB START_S: one measured wrk run, appended to RESULTS.
measure() {
  local run=$1 arm=$2 url=$3 pid=$4 c=$5 seconds=$6 before after line host_idle proxy_json=null
  local backend_before backend_after
  before=$([[ -n "$pid" ]] && tree_stats "$pid" || echo "0 0")
  backend_before=$(tree_stats "$BACKEND_PID")
  [[ -n "$pid" ]] && busiest_thread "$pid" > "$WORK/threads.before"
  host_cpu > "$WORK/host.before"
  line=$(wrk_run "$url/v1/completions" "$c" "$seconds")
  after=$([[ -n "$pid" ]] && tree_stats "$pid" || echo "0 0")
  backend_after=$(tree_stats "$BACKEND_PID")
  host_idle=$(host_cpu "$WORK/host.before")
  if [[ "$line" != "{"* ]]; then
    log "$arm c=$c: no result from wrk"
    return
  fi
  if [[ -n "$pid" ]]; then
    proxy_json="{\"cpu_ticks\":$(( ${after% *} - ${before% *} )),\"rss_kib\":${after#* },\"idle_rss_kib\":$7,\"start_s\":$8,\"busiest_thread\":$(busiest_thread "$pid" "$WORK/threads.before")}"
  fi
  echo "{\"run\":$run,\"arm\":\"$arm\",\"concurrency\":$c,\"clk_tck\":$(getconf CLK_TCK),\"wrk\":$line,\"host_idle\":$host_idle,\"backend_cpu_ticks\":$(( ${backend_after% *} - ${backend_before% *} )),\"own_sessions\":$OWN_SESSIONS,\"proxy\":$proxy_json}" >> "$RESULTS"
  log "$arm c=$c: $line ${after}"
}

# probe_sse RUN ARM URL: the SSE probe of one arm (nginx backends only), appended to RESULTS.
probe_sse() {
  if [[ "$BACKEND" == nginx && "$2" != direct ]]; then
    local sse
    sse=$(sse_probe "$3" || echo null)
    echo "{\"run\":$1,\"arm\":\"$2\",\"sse\":$sse,\"direct_sse\":${DIRECT_SSE:-null}}" >> "$RESULTS"
    log "SSE, $2: $sse"
  fi
}

if (( ROUNDS > 0 )); then
  # Side by side: every arm runs at once on a port of its own and is warmed, then each level is
  # measured in ROUNDS rounds of one DURATION_S window per arm, the arms' order rotated every round.
  # A slow minute on this shared machine then lands on neighbouring windows of every arm, and a
  # round's windows compare like with like (the report's paired ratios).
  declare -A URL_OF PID_OF IDLE_OF START_OF
  up=()
  port=$PROXY_PORT
  for arm in $ARMS; do
    PROXY_PORT=$port METRICS_PORT=$((port + 1))
    port=$((port + 2))
    start_arm "$arm" || continue
    log "$arm: started in ${START_S}s on port $PROXY_PORT"
    URL_OF[$arm]=$ARM_URL PID_OF[$arm]=$PROXY_PID IDLE_OF[$arm]=$IDLE_RSS_KIB START_OF[$arm]=$START_S
    up+=("$arm")
  done
  for arm in "${up[@]}"; do warm_arm "$arm" "${URL_OF[$arm]}" "$arm"; done
  for c in $CONCURRENCIES; do
    for arm in "${up[@]}"; do wrk_run "${URL_OF[$arm]}/v1/completions" "$c" "$LEVEL_WARMUP_S" > /dev/null; done
    for round in $(seq 1 "$ROUNDS"); do
      for ((k = 0; k < ${#up[@]}; k++)); do
        arm=${up[(k + round) % ${#up[@]}]}
        measure "$round" "$arm" "${URL_OF[$arm]}" "${PID_OF[$arm]}" "$c" "$DURATION_S" \
            "${IDLE_OF[$arm]}" "${START_OF[$arm]}"
      done
    done
  done
  for arm in "${up[@]}"; do probe_sse 1 "$arm" "${URL_OF[$arm]}"; done
else
  for run in $(seq 1 "$RUNS"); do
    run_arms=$ARMS
    if (( run % 2 == 0 )); then run_arms=$(printf '%s\n' $ARMS | tac | xargs); fi
    for arm in $run_arms; do
      start_arm "$arm" || continue
      warm_arm "$arm" "$ARM_URL" "run $run, $arm: started in ${START_S}s;"
      for c in $CONCURRENCIES; do
        wrk_run "$ARM_URL/v1/completions" "$c" "$LEVEL_WARMUP_S" > /dev/null
        measure "$run" "$arm" "$ARM_URL" "$PROXY_PID" "$c" "$DURATION_S" "$IDLE_RSS_KIB" "$START_S"
      done
      probe_sse "$run" "$arm" "$ARM_URL"
      stop_proxy
    done
  done
fi

"$ROUTER_PYTHON" "$ROOT/examples/bench/load_compare_report.py" "$RESULTS" | tee "${RESULTS%.jsonl}.txt"
