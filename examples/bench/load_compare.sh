#!/usr/bin/env bash
# Side-by-side proxy benchmark on loopback: one mock process serving 4 workers, then for each
# arm -- (a) direct to the mock, (b) HAProxy (leastconn + stick table on X-Session-ID),
# (c) our router (sticky_least_loaded) -- a JIT warm-up, then a closed-loop run per concurrency
# level with LoadMain. Reports requests/s, p50/p99 and the proxy's CPU microseconds per request
# (utime+stime delta from /proc/PID/stat over the measured window / measured requests).
#
# Every run has a bounded duration; everything started here is stopped by pid on exit.
#
# Environment (defaults in brackets):
#   ARMS ["direct haproxy router"]   CONCURRENCIES ["1 16 64"]
#   ARM_WARMUP_S [40]   JIT warm-up per arm (c=16, not measured). On a busy machine the JIT's compiler
#                       threads wait for CPU and 40 s can leave the router partly interpreted (seen: 3-8x its
#                       steady CPU per request at load 15); ARM_WARMUP_S=120 reached steady state there.
#   LEVEL_WARMUP_S [5]  warm-up inside each measured run (also warms the load generator)
#   DURATION_S [20]     measured seconds per concurrency level
#   BODY_BYTES [2048]   BASE_PORT [18100] (mock BASE+1..BASE+4, HAProxy BASE+10, router BASE+20)
#   JAVA [a JDK >= 21 found under /usr/lib/jvm, else java]   JAVA_OPTS [-Xms512m -Xmx1g]
#   ROUTER_CMD ["$JAVA -jar java/host/target/vllm-router-engine.jar serve --config $ROUTER_CONFIG"]
#              evaluated with ROUTER_CONFIG set to the generated config file
#   OUT_DIR [bench-results]  results as JSON lines, one per (arm, concurrency)
#   KEEP_WORK [unset]   keep the temporary directory (configs, process logs)
#
# Quick check:  ARM_WARMUP_S=3 LEVEL_WARMUP_S=1 DURATION_S=3 ARMS="direct haproxy" examples/bench/load_compare.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

ARMS=${ARMS:-"direct haproxy router"}
CONCURRENCIES=${CONCURRENCIES:-"1 16 64"}
ARM_WARMUP_S=${ARM_WARMUP_S:-40}
LEVEL_WARMUP_S=${LEVEL_WARMUP_S:-5}
DURATION_S=${DURATION_S:-20}
BODY_BYTES=${BODY_BYTES:-2048}
BASE_PORT=${BASE_PORT:-18100}
JAVA_OPTS=${JAVA_OPTS:-"-Xms512m -Xmx1g"}
OUT_DIR=${OUT_DIR:-bench-results}
CLK_TCK=$(getconf CLK_TCK)

MOCK_PORTS=($((BASE_PORT + 1)) $((BASE_PORT + 2)) $((BASE_PORT + 3)) $((BASE_PORT + 4)))
HAPROXY_PORT=$((BASE_PORT + 10))
ROUTER_PORT=$((BASE_PORT + 20))

WORK=$(mktemp -d /tmp/load_compare.XXXXXX)
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

log() { echo "[load_compare] $*" >&2; }

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

# The mock and LoadMain come from the engine jar when it is built, else from the mock module.
ENGINE_JAR="$ROOT/java/host/target/vllm-router-engine.jar"
if [[ -f "$ENGINE_JAR" ]]; then
  CP="$ENGINE_JAR"
else
  log "building java/mock (no engine jar yet)"
  mvn -B -ntp -q -pl java/mock compile dependency:build-classpath \
      -Dmdep.outputFile="$WORK/cp.txt" -Dmdep.includeScope=runtime >&2
  CP="$ROOT/java/mock/target/classes:$(cat "$WORK/cp.txt")"
fi

# Waits (bounded) for an HTTP 200 on a URL while process PID is alive.
wait_http() {
  local url=$1 pid=$2 deadline=$((SECONDS + ${3:-60}))
  until curl -fsS -o /dev/null "$url" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then log "process $pid exited before $url answered"; return 1; fi
    if (( SECONDS >= deadline )); then log "timeout waiting for $url"; return 1; fi
    sleep 0.2
  done
}

# --- the mock: one process, four workers ---------------------------------------------------------
ports_csv=$(IFS=,; echo "${MOCK_PORTS[*]}")
# shellcheck disable=SC2086
"$JAVA" $JAVA_OPTS -cp "$CP" org.vllmrouter.mock.MockWorkerMain --ports "$ports_csv" \
    > "$WORK/mock.out" 2> "$WORK/mock.err" &
MOCK_PID=$!
PIDS+=("$MOCK_PID")
for _ in $(seq 1 300); do
  grep -q '"event"' "$WORK/mock.out" 2>/dev/null && break
  sleep 0.1
done
if ! grep -q '"event":"ready"' "$WORK/mock.out"; then
  log "mock did not start: $(cat "$WORK/mock.out" "$WORK/mock.err")"
  exit 1
fi
log "mock ready (pid $MOCK_PID): $(head -1 "$WORK/mock.out")"

# --- arms ------------------------------------------------------------------------------------------
start_haproxy() {
  if ! command -v haproxy >/dev/null; then
    log "installing haproxy (Debian package)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >&2
  fi
  {
    echo "global"
    echo "    maxconn 4096"
    echo "defaults"
    echo "    mode http"
    echo "    option http-keep-alive"
    echo "    http-reuse always"
    echo "    timeout connect 5s"
    echo "    timeout client 60s"
    echo "    timeout server 60s"
    echo "frontend fe"
    echo "    bind 127.0.0.1:$HAPROXY_PORT"
    echo "    default_backend workers"
    echo "backend workers"
    echo "    balance leastconn"
    echo "    stick-table type string len 128 size 1m expire 2h"
    echo "    stick on req.fhdr(x-session-id)"
    local i=1
    for p in "${MOCK_PORTS[@]}"; do
      echo "    server w$i 127.0.0.1:$p"
      i=$((i + 1))
    done
  } > "$WORK/haproxy.cfg"
  haproxy -f "$WORK/haproxy.cfg" -db > "$WORK/haproxy.log" 2>&1 &
  PROXY_PID=$!
  PIDS+=("$PROXY_PID")
  wait_http "http://127.0.0.1:$HAPROXY_PORT/health" "$PROXY_PID" 30
  ARM_URL="http://127.0.0.1:$HAPROXY_PORT"
}

start_router() {
  ROUTER_CONFIG="$WORK/router.json"
  export ROUTER_CONFIG
  local urls
  urls=$(printf '"http://127.0.0.1:%s",' "${MOCK_PORTS[@]}")
  cat > "$ROUTER_CONFIG" <<EOF
{"worker_urls": [${urls%,}], "host": "127.0.0.1", "port": $ROUTER_PORT,
 "policy": "sticky_least_loaded", "prometheus_port": 0}
EOF
  if [[ -z "${ROUTER_CMD:-}" && ! -f "$ENGINE_JAR" ]]; then
    log "router arm skipped: $ENGINE_JAR is not built (or set ROUTER_CMD)"
    return 1
  fi
  local cmd=${ROUTER_CMD:-"$JAVA $JAVA_OPTS -jar $ENGINE_JAR serve --config $ROUTER_CONFIG"}
  if [[ -z "${ROUTER_CMD:-}" ]] && ! "$JAVA" -jar "$ENGINE_JAR" serve --help >/dev/null 2>&1; then
    # A launcher without `serve` yet: call the engine's entry point (EngineRunner.serve) from a one-file
    # program run by the JDK's source launcher, in the same JVM, so the pid measured is still the router's.
    cat > "$WORK/ServeEngine.java" <<'JAVA'
public class ServeEngine {
    public static void main(String[] args) throws Exception {
        try (var config = new java.io.FileInputStream(args[0])) {
            System.exit(org.vllmrouter.server.EngineRunner.serve(config, false));
        }
    }
}
JAVA
    log "the launcher has no serve command; running EngineRunner.serve directly"
    cmd="$JAVA $JAVA_OPTS -cp $ENGINE_JAR $WORK/ServeEngine.java $ROUTER_CONFIG"
  fi
  # exec, so that the pid we hold (and read CPU from) is the router itself.
  ( eval "exec $cmd" ) > "$WORK/router.out" 2> "$WORK/router.err" &
  PROXY_PID=$!
  PIDS+=("$PROXY_PID")
  if ! wait_http "http://127.0.0.1:$ROUTER_PORT/health" "$PROXY_PID" 60; then
    log "router did not become healthy: $(tail -5 "$WORK/router.err")"
    return 1
  fi
  ARM_URL="http://127.0.0.1:$ROUTER_PORT"
}

stop_proxy() {
  if [[ -n "${PROXY_PID:-}" ]]; then
    kill "$PROXY_PID" 2>/dev/null || true
    wait "$PROXY_PID" 2>/dev/null || true
    PROXY_PID=
  fi
}

load() {
  # load C DURATION WARMUP CPU_PIDS -> one JSON line on stdout
  local c=$1 duration=$2 warmup=$3 pids=$4
  local bound
  bound=$(awk -v d="$duration" -v w="$warmup" 'BEGIN { printf "%d", d + w + 60 }')
  # shellcheck disable=SC2086
  timeout "$bound" "$JAVA" $JAVA_OPTS -cp "$CP" org.vllmrouter.mock.LoadMain --url "$ARM_URL/v1/completions" \
      --concurrency "$c" --duration-s "$duration" --warmup-s "$warmup" --body-bytes "$BODY_BYTES" \
      --session-header --cpu-pids "$pids" --clk-tck "$CLK_TCK" --json || true
}

mkdir -p "$OUT_DIR"
RESULTS="$OUT_DIR/load_compare-$(date +%Y%m%d-%H%M%S).jsonl"
log "results -> $RESULTS"
printf '%-8s %4s %10s %9s %9s %15s %14s\n' arm c "req/s" "p50 us" "p99 us" "proxy cpu us/req" "mock cpu us/req"

for arm in $ARMS; do
  PROXY_PID=
  case "$arm" in
    direct) ARM_URL="http://127.0.0.1:${MOCK_PORTS[0]}" ;;
    haproxy) start_haproxy ;;
    router) start_router || continue ;;
    *) log "unknown arm $arm"; continue ;;
  esac
  pids="$MOCK_PID${PROXY_PID:+,$PROXY_PID}"
  log "$arm: JIT warm-up ${ARM_WARMUP_S}s at c=16"
  load 16 "$ARM_WARMUP_S" 0 "$pids" > /dev/null
  for c in $CONCURRENCIES; do
    line=$(load "$c" "$DURATION_S" "$LEVEL_WARMUP_S" "$pids")
    if [[ "$line" != "{"* ]]; then
      log "$arm c=$c: no result (LoadMain failed)"
      continue
    fi
    echo "{\"arm\":\"$arm\",\"concurrency\":$c,\"result\":$line}" >> "$RESULTS"
    python3 - "$arm" "$c" "$MOCK_PID" "${PROXY_PID:-}" "$line" <<'PY'
import json, sys
arm, c, mock_pid, proxy_pid, line = sys.argv[1:6]
r = json.loads(line)
cpu = r["cpu_us_per_request"]
proxy = f'{cpu[proxy_pid]:.1f}' if proxy_pid and proxy_pid in cpu else "-"
mock = f'{cpu[mock_pid]:.1f}' if mock_pid in cpu else "-"
err = f'  ({r["errors"]} errors)' if r["errors"] else ""
print(f'{arm:<8} {c:>4} {r["requests_per_second"]:>10.0f} {r["p50_us"]:>9} {r["p99_us"]:>9} {proxy:>15} {mock:>14}{err}')
PY
  done
  stop_proxy
done
