#!/usr/bin/env bash
# Runs on a GPU host (the H200 test machines) from a working tree that carries prebuilt
# binaries in .dev/: cuzk built with --features cuda, and the incumbent builds from
# scripts/build-baseline.sh as .dev/fp-supraseal and .dev/fp-ecgpu. Logs, JSON summaries,
# timelines and waterfalls go to $OUT.
#   scripts/device-bench.sh info | selftest | setup FIXTURE | bench NAME FIXTURE COUNT [ARGS...]
#                           | calls NAME FIXTURE DEVICES WIDTHS
# FIXTURE: 2k (real 2KiB), p10 (10 partitions x 1 challenge), scaled (p10 with 11 layers:
# the 32GiB-shaped scaled circuit). ARGS go to `cuzk bench batch` (e.g. -j 16 --gpu-batch 4
# --baseline-bin fp-supraseal=.dev/fp-supraseal --baseline-jobs 1 --baseline-count 10).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
BIN=${BIN:-.dev/cuzk}
export FIL_PROOFS_PARAMETER_CACHE=${FIL_PROOFS_PARAMETER_CACHE:-/tmp/cuzk-params}
export RUST_LOG=${RUST_LOG:-info}
P=$FIL_PROOFS_PARAMETER_CACHE
stamp() { echo "== $(date +%T) $*"; }
shape() {
  case $1 in
    2k) echo "" ;;
    p10) echo "--partitions 10" ;;
    scaled) echo "--partitions 10 --layers 11" ;;
    *) echo "unknown fixture $1" >&2; exit 2 ;;
  esac
}
c1() {
  case $1 in 2k) echo "$P/cuzk-fixtures/2KiB.c1.json" ;; p10) echo "$P/cuzk-fixtures/2KiB-p10.c1.json" ;;
    scaled) echo "$P/cuzk-fixtures/2KiB-p10-l11.c1.json" ;; esac
}
case ${1:-} in
  info)
    stamp info
    nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version,clocks.sm --format=csv
    nproc; lscpu | grep -E '^(Model name|Thread|Core|Socket)'; free -g | head -2 ;;
  selftest)
    stamp selftest
    $BIN selftest --constraints "${2:-65536}" ;;
  setup)
    stamp "setup $2"
    t0=$SECONDS
    $BIN setup --sector-size 2KiB $(shape "$2") > "$OUT/setup-$2.log" 2>&1 || { tail -5 "$OUT/setup-$2.log"; exit 1; }
    echo "setup $2: $((SECONDS - t0)) s" ;;
  bench)
    name=$2 fx=$3 count=$4; shift 4
    stamp "bench $name"
    nvidia-smi dmon -s u -d 1 > "$OUT/$name.dmon" 2>/dev/null &
    dmon=$!
    $BIN bench batch --c1 "$(c1 "$fx")" $(shape "$fx") -c "$count" "$@" \
      --svg "$OUT/$name.svg" --json "$OUT/$name.json" --timeline "$OUT/$name.timeline" \
      > "$OUT/$name.out" 2> "$OUT/$name.log"
    rc=$?
    kill $dmon 2>/dev/null
    grep -E "^(cuzk|fp-|device [0-9]+:|device [0-9]+ |GPU call|idle gaps|synthesis conc)" "$OUT/$name.out"
    exit $rc ;;
  calls)
    # One prover call with nothing else running: calls NAME FIXTURE DEVICES WIDTHS
    name=$2 fx=$3
    stamp "calls $name"
    $BIN bench calls --c1 "$(c1 "$fx")" --sector-id 1 --miner-id 1000 $(shape "$fx") --devices "$4" \
      --widths "$5" --reps 3 --json "$OUT/$name.json" > "$OUT/$name.out" 2> "$OUT/$name.log"
    rc=$?
    cat "$OUT/$name.out"; [[ $rc = 0 ]] || tail -3 "$OUT/$name.log"
    exit $rc ;;
  *) echo "usage: see the header" >&2; exit 2 ;;
esac
