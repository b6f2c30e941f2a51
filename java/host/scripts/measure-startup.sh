#!/bin/bash
# Cold start of the packaged launcher, from process spawn to the first 200 on /health:
# `launch ARGS` (GraalPy parses the flags; the parse cache is off) against `serve --config FILE`
# (no Python) and against `launch ARGS` again with the parse cache on (the same flags were parsed
# before, as when a training job restarts its router), same machine, same run, interleaved so all
# see the same load. Prints each run and the medians.
#
#   java/host/scripts/measure-startup.sh [RUNS]        (after `mvn -pl java/host -am package`)
#   BASELINE_DIST=/path/to/other/vllm-router-dist java/host/scripts/measure-startup.sh [RUNS]
#
# With BASELINE_DIST, that distribution's `launch` is timed in the same rounds (a side-by-side
# baseline, e.g. a build of an earlier commit). Each run is a new JVM. The class-data archives of
# bin/vllm-router are made by one unmeasured warm-up run per command (as a user's first run makes
# them), then reused; the flag parser's AOT cache comes from the build (`make-startup-cache`).
set -euo pipefail

runs=${1:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
launcher=$here/target/vllm-router-dist/bin/vllm-router
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT INT TERM

"$launcher" mock-worker --count 2 >"$work/mock.out" 2>"$work/mock.err" &
for _ in $(seq 1 600); do grep -q ready "$work/mock.out" 2>/dev/null && break; sleep 0.1; done
urls=$(sed -n 's/.*"urls":\[\([^]]*\)\].*/\1/p' "$work/mock.out" | tr -d '"' | tr ',' ' ')
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# A 1 s worker start-up check: the engine reports healthy once it has seen its workers.
printf '{"worker_urls":[%s],"policy":"sticky_least_loaded","port":%s,"prometheus_port":0,"worker_startup_check_interval":1}\n' \
    "$(echo "$urls" | sed 's/[^ ]*/"&"/g; s/ /,/g')" "$port" >"$work/router.json"

# Seconds from spawn to the first HTTP 200 on /health; then SIGTERM and wait for the exit.
time_to_health() {
    local start end pid
    start=$(date +%s%N)
    "$@" >"$work/run.out" 2>"$work/run.err" &
    pid=$!
    until [ "$(curl -s -o /dev/null -w '%{http_code}' -m 1 "http://127.0.0.1:$port/health")" = 200 ]; do
        if ! kill -0 "$pid" 2>/dev/null; then echo "router exited early:" >&2; tail -5 "$work/run.err" >&2; exit 1; fi
        sleep 0.02
    done
    end=$(date +%s%N)
    kill -TERM "$pid"; wait "$pid" || true
    echo "scale=2; ($end - $start) / 1000000000" | bc
}

serve_cmd=("$launcher" serve --config "$work/router.json")
# shellcheck disable=SC2206 # the worker URLs are separate arguments
launch_cmd=("$launcher" launch --worker-urls $urls --policy sticky_least_loaded --port "$port" --prometheus-port 0
    --worker-startup-check-interval 1)
uncached=(env VLLM_ROUTER_PARSE_CACHE=off)

baseline_cmd=()
if [ -n "${BASELINE_DIST:-}" ]; then
    baseline_cmd=("${uncached[@]}" "$BASELINE_DIST/bin/vllm-router" "${launch_cmd[@]:1}")
fi

time_to_health "${serve_cmd[@]}" >/dev/null
time_to_health "${uncached[@]}" "${launch_cmd[@]}" >/dev/null
time_to_health "${launch_cmd[@]}" >/dev/null
[ ${#baseline_cmd[@]} -eq 0 ] || time_to_health "${baseline_cmd[@]}" >/dev/null

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
: >"$work/serve.times"; : >"$work/launch.times"; : >"$work/cached.times"; : >"$work/baseline.times"
for i in $(seq 1 "$runs"); do
    s=$(time_to_health "${serve_cmd[@]}"); echo "$s" >>"$work/serve.times"
    l=$(time_to_health "${uncached[@]}" "${launch_cmd[@]}"); echo "$l" >>"$work/launch.times"
    c=$(time_to_health "${launch_cmd[@]}"); echo "$c" >>"$work/cached.times"
    b=""
    if [ ${#baseline_cmd[@]} -gt 0 ]; then
        b=$(time_to_health "${baseline_cmd[@]}"); echo "$b" >>"$work/baseline.times"; b=" baseline launch ${b}s"
    fi
    echo "run $i: serve ${s}s launch ${l}s launch-cached ${c}s$b (load $(cut -d' ' -f1 /proc/loadavg))"
done
echo "median serve --config:   $(median <"$work/serve.times") s"
echo "median launch:           $(median <"$work/launch.times") s"
echo "median launch (cached):  $(median <"$work/cached.times") s"
if [ ${#baseline_cmd[@]} -gt 0 ]; then
    echo "median baseline launch:  $(median <"$work/baseline.times") s"
fi
