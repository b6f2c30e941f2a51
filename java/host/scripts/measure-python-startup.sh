#!/bin/bash
# Where the seconds of `vllm-router python` go, from process spawn to exit: the JVM and GraalPy's
# context (`-c pass`), the package's imports (`-c 'from vllm_router import Router, RouterArgs'`),
# and a program that launches the engine over two mock workers and routes one request (spawn to
# exit: the time to the first routed request plus the drain at exit; and spawn to the moment the
# program holds the routed response, which it prints); the same program under CPython (process
# bridge, engine jar in python/vllm_router/_engine, a Java 21+ as the package finds one, e.g.
# VLLM_ROUTER_JAVA) for comparison. Each column is its own process.
#
#   java/host/scripts/measure-python-startup.sh [RUNS]     (after `mvn -pl java/host -am package`)
#   DIST=/path/to/vllm-router-dist java/host/scripts/measure-python-startup.sh [RUNS]
#   BASELINE_DIST=/path/to/another-dist java/host/scripts/measure-python-startup.sh [RUNS]
#
# BASELINE_DIST runs another distribution's three columns right after this one's in every round
# (its own archive directory and sources; GraalPy's resource cache, which this one's cold round
# fills, and the mock workers shared), and prints its medians
# and this one's as a ratio of it: on a busy machine only figures from the same rounds compare.
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

# private_copy DIST NAME: a copy of DIST's launcher and sources without bytecode, its jars and AOT
# caches linked, in $work/NAME.
private_copy() {
    mkdir -p "$work/$2"
    ln -s "$1/lib" "$work/$2/lib"
    [ ! -d "$1/aot" ] || ln -s "$1/aot" "$work/$2/aot"
    cp -r "$1/bin" "$1/conf" "$1/python" "$work/$2/"
    find "$work/$2/python" -name __pycache__ -prune -exec rm -rf {} +
}
private_copy "$dist" dist
names=dist
if [ -n "${BASELINE_DIST:-}" ]; then
    private_copy "$BASELINE_DIST" baseline
    names="dist baseline"
fi
export VLLM_ROUTER_JVM_OPTS="${VLLM_ROUTER_JVM_OPTS:-} -Dpolyglot.engine.userResourceCache=$work/polyglot"

"$dist/bin/vllm-router" mock-worker --count 2 >"$work/mock.out" 2>"$work/mock.err" &
for _ in $(seq 1 600); do grep -q ready "$work/mock.out" 2>/dev/null && break; sleep 0.1; done
read -r -a urls <<<"$(sed -n 's/.*"urls":\[\([^]]*\)\].*/\1/p' "$work/mock.out" | tr -d '"' | tr ',' ' ')"

cat >"$work/first_request.py" <<'PY'
import sys
import time
import urllib.request

from vllm_router import Router, RouterArgs

args = RouterArgs(worker_urls=sys.argv[1:], port=0, prometheus_port=0, worker_startup_check_interval=1)
with Router.from_args(args).launch() as router:
    with urllib.request.urlopen(router.url + "/v1/models", timeout=60) as response:
        assert response.status == 200
    print(time.time_ns(), flush=True)
PY

# Seconds a command takes from spawn to exit, and after a slash the CPU seconds (user + system) it
# used, which a busy machine inflates far less; when the command prints a wall-clock time in ns as
# its last line (the first-request program, as it holds the response), after another slash the
# seconds from spawn to then. A failure stops the script with its stderr.
secs() {
    local start end
    start=$(date +%s%N)
    if ! /usr/bin/time -o "$work/cpu" -f "%U %S" "$@" >"$work/run.out" 2>"$work/run.err"; then
        echo "failed: $*" >&2; tail -20 "$work/run.err" >&2; exit 1
    fi
    end=$(date +%s%N)
    local at
    at=$(tail -n 1 "$work/run.out")
    echo -n "$(echo "scale=2; ($end - $start) / 1000000000" | bc)/$(awk '{print $1 + $2}' "$work/cpu")"
    if [[ $at =~ ^[0-9]+$ ]]; then echo "/$(echo "scale=2; ($at - $start) / 1000000000" | bc)"; else echo; fi
}

for name in $names; do : >"$work/times-$name"; done
for round in cold $(seq 1 "$runs"); do
    for name in $names; do
        launcher=$work/$name/bin/vllm-router
        export VLLM_ROUTER_CDS_DIR=$work/cds-$name
        pass=$(secs "$launcher" python -c pass)
        imports=$(secs "$launcher" python -c 'from vllm_router import Router, RouterArgs')
        first=$(secs "$launcher" python "$work/first_request.py" "${urls[@]}")
        echo "$round $name (wall/CPU[/to the response] s): -c pass ${pass}, imports ${imports}," \
            "first routed request ${first}" \
            "(load $(cut -d' ' -f1 /proc/loadavg))"
        [ "$round" = cold ] || echo "$pass $imports $first" >>"$work/times-$name"
    done
    cpython=$(secs env PYTHONPATH="$repo/python" python3 "$work/first_request.py" "${urls[@]}")
    echo "$round CPython, process bridge (wall/CPU/to the response s): ${cpython}"
    [ "$round" = cold ] || echo "$cpython" >>"$work/times-cpython"
done
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# column NAME N F: the warm rounds' median of NAME's column N, wall seconds (F 1), CPU seconds (2) or
# seconds to the response (3, the first-request column)
column() { cut -d' ' -f"$2" "$work/times-$1" | cut -d/ -f"$3" | median; }
for name in $names; do
    echo "warm medians, $name (wall/CPU s): -c pass $(column "$name" 1 1)/$(column "$name" 1 2)," \
        "imports $(column "$name" 2 1)/$(column "$name" 2 2)," \
        "first routed request $(column "$name" 3 1)/$(column "$name" 3 2), its response at $(column "$name" 3 3)"
done
echo "warm median, CPython, process bridge (wall/CPU s): $(column cpython 1 1)/$(column cpython 1 2)," \
    "its response at $(column cpython 1 3)"
if [ -n "${BASELINE_DIST:-}" ]; then
    # ratio N F: dist's median over the baseline's, column N, field F as in `column`
    ratio() { echo "scale=2; $(column dist "$1" "$2") / $(column baseline "$1" "$2")" | bc; }
    echo "dist / baseline (wall, CPU): -c pass $(ratio 1 1), $(ratio 1 2);" \
        "imports $(ratio 2 1), $(ratio 2 2); first routed request $(ratio 3 1), $(ratio 3 2)," \
        "its response $(ratio 3 3)"
fi
