#!/bin/bash
# Where the seconds of `vllm-router python` go, from process spawn to exit: the JVM and GraalPy's
# context (`-c pass`), the package's imports (`-c 'from vllm_router import Router, RouterArgs'`),
# and a program that launches the engine over two mock workers and routes one request (the time to
# the first routed request, plus the drain at exit); the same program under CPython (process
# bridge, engine jar in python/vllm_router/_engine, a Java 21+ as the package finds one, e.g.
# VLLM_ROUTER_JAVA) for comparison. Each column is its own process.
#
#   java/host/scripts/measure-python-startup.sh [RUNS]     (after `mvn -pl java/host -am package`)
#   DIST=/path/to/vllm-router-dist java/host/scripts/measure-python-startup.sh [RUNS]
#
# Round "cold" runs on a private copy of the distribution's python/ (no __pycache__), a new
# class-data archive directory and a new GraalPy resource cache (the standard library extracted
# again, no bytecode), so it is a first run after installing; the caches fill column by column, as
# a user's first commands fill them. The rounds after it are warm. Prints each round and the medians
# of the warm ones, with the load average (the figures are only comparable at similar load).
set -euo pipefail

runs=${1:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$here/../.." && pwd)
dist=${DIST:-$here/target/vllm-router-dist}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT INT TERM

mkdir -p "$work/dist"
ln -s "$dist/lib" "$work/dist/lib"
[ ! -d "$dist/aot" ] || ln -s "$dist/aot" "$work/dist/aot"
cp -r "$dist/bin" "$dist/conf" "$dist/python" "$work/dist/"
find "$work/dist/python" -name __pycache__ -prune -exec rm -rf {} +
launcher=$work/dist/bin/vllm-router
export VLLM_ROUTER_CDS_DIR=$work/cds
export VLLM_ROUTER_JVM_OPTS="${VLLM_ROUTER_JVM_OPTS:-} -Dpolyglot.engine.userResourceCache=$work/polyglot"

"$dist/bin/vllm-router" mock-worker --count 2 >"$work/mock.out" 2>"$work/mock.err" &
for _ in $(seq 1 600); do grep -q ready "$work/mock.out" 2>/dev/null && break; sleep 0.1; done
read -r -a urls <<<"$(sed -n 's/.*"urls":\[\([^]]*\)\].*/\1/p' "$work/mock.out" | tr -d '"' | tr ',' ' ')"

cat >"$work/first_request.py" <<'PY'
import sys
import urllib.request

from vllm_router import Router, RouterArgs

args = RouterArgs(worker_urls=sys.argv[1:], port=0, prometheus_port=0, worker_startup_check_interval=1)
with Router.from_args(args).launch() as router:
    with urllib.request.urlopen(router.url + "/v1/models", timeout=60) as response:
        assert response.status == 200
PY

# Seconds a command takes from spawn to exit, and after a slash the CPU seconds (user + system) it
# used, which a busy machine inflates far less; a failure stops the script with its stderr.
secs() {
    local start end
    start=$(date +%s%N)
    if ! /usr/bin/time -o "$work/cpu" -f "%U %S" "$@" >"$work/run.out" 2>"$work/run.err"; then
        echo "failed: $*" >&2; tail -20 "$work/run.err" >&2; exit 1
    fi
    end=$(date +%s%N)
    echo "$(echo "scale=2; ($end - $start) / 1000000000" | bc)/$(awk '{print $1 + $2}' "$work/cpu")"
}

: >"$work/times"
for round in cold $(seq 1 "$runs"); do
    pass=$(secs "$launcher" python -c pass)
    imports=$(secs "$launcher" python -c 'from vllm_router import Router, RouterArgs')
    first=$(secs "$launcher" python "$work/first_request.py" "${urls[@]}")
    cpython=$(secs env PYTHONPATH="$repo/python" python3 "$work/first_request.py" "${urls[@]}")
    echo "$round (wall/CPU s): -c pass ${pass}, imports ${imports}, first routed request ${first};" \
        "CPython ${cpython} (load $(cut -d' ' -f1 /proc/loadavg))"
    [ "$round" = cold ] || echo "$pass $imports $first $cpython" >>"$work/times"
done
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# column N [1|2]: the warm rounds' median of column N, wall seconds (1) or CPU seconds (2)
column() { cut -d' ' -f"$1" "$work/times" | cut -d/ -f"$2" | median; }
echo "warm medians (wall/CPU s): -c pass $(column 1 1)/$(column 1 2)," \
    "imports $(column 2 1)/$(column 2 2)," \
    "first routed request $(column 3 1)/$(column 3 2)," \
    "CPython $(column 4 1)/$(column 4 2)"
