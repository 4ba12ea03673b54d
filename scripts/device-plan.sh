#!/usr/bin/env bash
# The benchmark runs recorded in BENCHMARKS.md, as run on the lent GPU machines (one call of the
# device tool each). Results are packed into $OUT/results.tgz (the tool returns few files).
#   scripts/device-plan.sh h200     # issue 5: 1 GPU, real 2KiB and 10-partition streams
#   scripts/device-plan.sh x2       # issue 6: 2 GPUs, 1 vs 2 devices; 1 GPU on 16 cores
#   scripts/device-plan.sh x2-remove  # issue 6: a device removed mid-run
#   scripts/device-plan.sh scaled   # the 32GiB-shaped scaled fixture (on nvidia-h200-x2 it also
#                                   # runs 2 GPUs; parameter generation ~5 min, so give it a call
#                                   # of its own)
set -uo pipefail
FINAL=${OUT:-out}
export OUT=/tmp/cuzk-out
rm -rf "$OUT"; mkdir -p "$OUT"
# Each step re-packs what is there so far: a run cut short by the lease still returns it.
pack() { tar czf "$FINAL/results.tgz" -C "$OUT" . 2>/dev/null; }
step() { scripts/device-bench.sh "$@"; local rc=$?; pack; return $rc; }
D=step
SUPRA="--baseline-bin fp-supraseal=.dev/fp-supraseal"
ECGPU="--baseline-bin fp-ecgpu=.dev/fp-ecgpu"
case ${1:-} in
  h200)
    $D info
    $D selftest 65536
    $D setup 2k
    $D bench 2k-b1 2k 30 -j 16 --gpu-batch 1
    $D bench 2k 2k 30 -j 16 --gpu-batch 4 $SUPRA $ECGPU --baseline-jobs 1 --baseline-count 8
    $D setup p10
    $D bench p10-b1 p10 10 -j 4 --gpu-batch 1
    $D bench p10 p10 10 -j 4 --gpu-batch 4 $SUPRA $ECGPU --baseline-jobs 1 --baseline-count 4
    $D bench p10-b10 p10 10 -j 4 --gpu-batch 10
    ;;
  x2)
    $D info
    $D setup p10
    $D bench x2-p10-1gpu p10 20 -j 8 --devices 1 $SUPRA --baseline-jobs 1 --baseline-count 4
    $D bench x2-p10-2gpu p10 20 -j 8 --devices 2
    # The single-H200 host's 16 cores, emulated with an affinity mask (cuzk and the incumbent).
    taskset -c 0-15 scripts/device-bench.sh bench x2-p10-16c p10 10 -j 4 --devices 1 $SUPRA \
      --baseline-jobs 1 --baseline-count 4; pack
    taskset -c 0-15 scripts/device-bench.sh bench x2-p10-16c-w12 p10 10 -j 4 --devices 1 \
      --synthesis-workers 12; pack
    # The scaled fixture's parameters, in the background for the next call (`scaled`).
    setsid nohup scripts/device-bench.sh setup scaled > /tmp/scaled-setup.out 2>&1 < /dev/null &
    ;;
  x2-remove)
    # Writes straight to the returned folder (a short lease may end mid-run).
    export OUT=$FINAL
    pack() { :; }
    $D setup p10
    $D bench x2-p10-remove p10 12 -j 6 --devices 2 --disable-device 1@4
    exit ;;
  scaled)
    while pgrep -f 'setup --sector-size 2KiB --partitions 10 --layers 11' > /dev/null; do sleep 2; done
    cat /tmp/scaled-setup.out 2>/dev/null
    $D setup scaled
    taskset -c 0-15 scripts/device-bench.sh bench scaled-16c scaled 6 -j 3 --devices 1 $SUPRA \
      --baseline-jobs 1 --baseline-count 2; pack
    $D bench scaled-1gpu scaled 6 -j 3 --devices 1
    [[ $(nvidia-smi -L | wc -l) -ge 2 ]] && $D bench scaled-2gpu scaled 6 -j 3 --devices 2
    ;;
  *) echo "usage: $0 h200|x2|scaled" >&2; exit 2 ;;
esac
pack
ls -la "$FINAL"
