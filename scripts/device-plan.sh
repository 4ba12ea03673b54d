#!/usr/bin/env bash
# The benchmark runs recorded in docs/notebook/benchmarks.md, as run on the lent GPU machines
# (one call of the device tool each). Results are packed into $OUT/results.tgz (the tool returns
# few files).
#   scripts/device-plan.sh h200     # 1 GPU, real 2KiB and 10-partition streams
#   scripts/device-plan.sh h200-p10 # the 10-partition stream with default settings, call cost
#   scripts/device-plan.sh h200-wait # GPU waits spinning vs blocking (CUZK_GPU_WAIT)
#   scripts/device-plan.sh x2       # 10-partition shape on 1 and 2 GPUs, a device
#                                   # removed mid-run, GPU call cost against width
#   scripts/device-plan.sh scaled   # the 32GiB-shaped scaled fixture on nvidia-h200-x2: 1 and 2
#                                   # GPUs, call cost, 1 GPU with 16 cores (parameters: 147 s)
#   scripts/device-plan.sh h200-hardening # damaged .params/.vk with the cuda build
#                                   # (PARAMS, never a crash), then a verified stream
#   scripts/device-plan.sh h200-pce-p10    # synthesis cost by path, alone and 16 at
#   scripts/device-plan.sh h200-pce-scaled # once; streams with pre-compiled and full synthesis
#                                   # against the incumbent (p10: pce twice, recorded then loaded)
#   scripts/device-plan.sh h200-own        # cuzk's GPU prover: self-tests (same bytes as the
#                                   # CPU), compute-sanitizer, call cost against supraseal
#   scripts/device-plan.sh h200-own-p10    # the same, and the 10-partition stream
#   scripts/device-plan.sh h200-own-staged # calls (--compare-cpu) and streams, 10-partition and
#                                   # real 2KiB, against the incumbent
#   scripts/device-plan.sh h200-own-scaled # the scaled fixture with both GPU provers, and its stream
#   scripts/device-plan.sh h200-go  # the Go package's tests with the cuda library on
#                                   # the GPU (carry .dev/cuzk and .dev/go: `make dev-go`)
#   scripts/device-plan.sh h200-witness # the engine sends pce partitions to the GPU as
#                                   # witnesses; streams against the product on the host
#   scripts/device-plan.sh h200-compact # the sparse product on the GPU from the compact
#                                   # witness: self-tests (same bytes as the CPU), sanitizer, calls
#   scripts/device-plan.sh h200-msm # cuzk's MSM driver (windows finished on the GPU):
#                                   # self-tests, sanitizer, calls against supraseal, the
#                                   # 10-partition stream against the incumbent
#   scripts/device-plan.sh h200-msm-tune # the H MSM's window size and batches (CUZK_MSM_WBITS,
#                                   # CUZK_MSM_BATCHES), an ncu kernel-time profile of one call,
#                                   # and the 10-partition stream against the incumbent
#   scripts/device-plan.sh h200-msm-2k # the same calls and stream on the real 2KiB circuit
#   scripts/device-plan.sh h200-msm-scaled # and on the scaled fixture
#   scripts/device-plan.sh h200-streamed # parameters resident and streamed (self-tests,
#                                   # memcheck), then the scaled and real 2KiB fixtures: calls in
#                                   # both modes and streams against the incumbent (the real
#                                   # 2KiB parameters are generated in the background meanwhile)
#   scripts/device-plan.sh h200-2k  # the real 2KiB circuit: calls and the stream against the
#                                   # incumbent (the part of h200-streamed that may not fit its
#                                   # call)
#   scripts/device-plan.sh h200-gpu-checks # make test-gpu's checks with carried binaries
#   scripts/device-plan.sh h200-restructure # the same checks and the 10-partition stream
#   scripts/device-plan.sh h200-native-p10 # the 10-partition stream, native witnesses
#                                   # against witness synthesis; GPU checks and Go tests
#   scripts/device-plan.sh h200-small # the GPU checks, the self-test with every lean plan
#                                   # (same bytes as the CPU, allocations within the limit) at 2^20,
#                                   # memcheck
# The full-size runs outlast a device call: scripts/device-full.sh (start, then poll).
# The plans listed before h200-streamed are for builds with supraseal-c2's GPU backend
# (CUZK_GPU_PROVER=supraseal), which this tree does not have: h200-own, h200-own-scaled and
# h200-msm select it and need such a build. From h200-streamed on, no plan uses it.
set -uo pipefail
FINAL=${OUT:-out}
export OUT=/tmp/cuzk-out
rm -rf "$OUT"; mkdir -p "$OUT"
# Each step re-packs what is there so far: a run cut short by the lease still returns it.
pack() { tar czf "$FINAL/results.tgz" -C "$OUT" . 2>/dev/null; }
# A failed step is named at once and again at the end, and the plan exits non-zero.
FAILED=()
step() { scripts/device-bench.sh "$@"; local rc=$?; pack
  (( rc == 0 )) || { FAILED+=("$* (exit $rc)"); echo "STEP FAILED: $* (exit $rc)" >&2; }
  return $rc; }
D=step
SUPRA="--baseline-bin fp-supraseal=.dev/fp-supraseal"
ECGPU="--baseline-bin fp-ecgpu=.dev/fp-ecgpu"
case ${1:-} in
  h200-small)
    $D info
    $D setup 2k
    $D gpu-checks
    $D selftest 1000000
    # memcheck over the self-test (every lean plan included); racecheck is the sanitize step's.
    compute-sanitizer --tool memcheck .dev/cuzk selftest --constraints 256 > "$OUT/memcheck.log" 2>&1
    echo "memcheck: exit $?; $(grep 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"; pack
    ;;
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
  h200-p10)
    # The 10-partition stream again with the current defaults (one synthesis worker per core,
    # lookahead of two calls), and the call cost on this host.
    $D info
    $D setup p10
    $D bench p10-now p10 20 -j 8 $SUPRA --baseline-jobs 1 --baseline-count 4
    $D calls calls-p10-h200 p10 1 1,4,10
    ;;
  h200-wait)
    # Threads waiting for the GPU: spinning (the CUDA runtime's default here) against blocking.
    $D info
    $D setup p10
    CUZK_GPU_WAIT=spin $D calls calls-p10-spin p10 1 4,10
    $D calls calls-p10-block p10 1 4,10
    CUZK_GPU_WAIT=spin $D bench p10-spin p10 20 -j 8
    $D bench p10-block p10 20 -j 8
    ;;
  x2)
    # One GPU is CUDA_VISIBLE_DEVICES=0 (cuzk and the incumbent alike): supraseal-c2 spreads a
    # call over every GPU the process sees.
    $D info
    $D setup p10
    CUDA_VISIBLE_DEVICES=0 $D bench x2-p10-1gpu p10 20 -j 8 $SUPRA --baseline-jobs 1 --baseline-count 4
    $D bench x2-p10-2gpu p10 20 -j 8 --devices 2 $SUPRA --baseline-jobs 1 --baseline-count 4
    $D bench x2-p10-remove p10 20 -j 8 --devices 2 --disable-device 1@6
    CUDA_VISIBLE_DEVICES=0 $D calls calls-p10-1gpu p10 1 1,2,4,8
    $D calls calls-p10-2gpu p10 2 2,4,8,16
    ;;
  scaled)
    $D setup scaled
    CUDA_VISIBLE_DEVICES=0 $D bench scaled-1gpu scaled 16 -j 6 $SUPRA --baseline-jobs 1 --baseline-count 2
    $D bench scaled-2gpu scaled 16 -j 6 --devices 2 $SUPRA --baseline-jobs 1 --baseline-count 2
    CUDA_VISIBLE_DEVICES=0 $D calls calls-scaled-1gpu scaled 1 1,2,4
    $D calls calls-scaled-2gpu scaled 2 2,4,8
    # The single-H200 host's 16 cores, emulated with an affinity mask.
    CUDA_VISIBLE_DEVICES=0 taskset -c 0-15 scripts/device-bench.sh bench scaled-1gpu-16c scaled 12 -j 4 \
      $SUPRA --baseline-jobs 1 --baseline-count 2; pack
    ;;
  h200-hardening)
    $D info
    $D selftest 65536
    $D setup p10
    $D params-faults p10
    $D bench p10-hardened p10 8 -j 4
    ;;
  h200-pce-p10)
    $D info
    $D setup p10
    $D synth synth-p10-1 p10 1 3
    $D synth synth-p10-16 p10 16 2
    CUZK_SYNTHESIS=pce $D bench p10-pce-first p10 20 -j 8
    CUZK_SYNTHESIS=full $D bench p10-full p10 20 -j 8 $SUPRA --baseline-jobs 1 --baseline-count 4
    CUZK_SYNTHESIS=pce $D bench p10-pce p10 20 -j 8
    ;;
  h200-pce-scaled)
    $D info
    $D setup scaled
    $D synth synth-scaled-1 scaled 1 2
    $D synth synth-scaled-16 scaled 16 1
    CUZK_SYNTHESIS=full $D bench scaled-full scaled 12 -j 4 $SUPRA --baseline-jobs 1 --baseline-count 2
    CUZK_SYNTHESIS=pce $D bench scaled-pce scaled 12 -j 4
    ;;
  h200-own)
    # cuzk's own GPU prover against the CPU (same bytes) and supraseal.
    $D info
    for n in 600 5000 65536 150000; do $D selftest $n; done
    $D sanitize 600
    $D setup p10
    CUZK_GPU_PROVER=cuzk $D calls calls-own-p10 p10 1 1 --compare-cpu
    CUZK_GPU_PROVER=supraseal $D calls calls-supra-p10 p10 1 1,4
    ;;
  h200-own-p10)
    # cuzk's GPU prover (sums of the bases whose scalar is one, tail MSMs): self-tests,
    # sanitizer, call cost, and the 10-partition stream against the incumbent.
    $D info
    for n in 600 5000 65536 150000; do $D selftest $n; done
    $D sanitize 600
    $D setup p10
    CUZK_GPU_PROVER=cuzk $D calls calls-own-p10 p10 1 1 --compare-cpu
    CUZK_GPU_PROVER=cuzk $D bench p10-own p10 20 -j 8 $SUPRA --baseline-jobs 1 --baseline-count 4
    ;;
  h200-own-staged)
    # cuzk's GPU prover (each partition's upload overlaps the previous one's kernels):
    # self-tests, sanitizer, call cost and streams on the 10-partition shape and real 2KiB.
    $D info
    for n in 600 5000 65536; do $D selftest $n; done
    $D sanitize 600
    $D setup p10
    CUZK_GPU_PROVER=cuzk $D calls calls-own-p10 p10 1 1,4 --compare-cpu
    CUZK_GPU_PROVER=cuzk $D bench p10-own p10 20 -j 8 $SUPRA --baseline-jobs 1 --baseline-count 4
    $D setup 2k
    CUZK_GPU_PROVER=cuzk $D calls calls-own-2k 2k 1 1,4 --compare-cpu
    CUZK_GPU_PROVER=cuzk $D bench 2k-own 2k 30 -j 16 $SUPRA --baseline-jobs 1 --baseline-count 8
    ;;
  h200-own-scaled)
    # The 32GiB-shaped scaled fixture (2^23 per partition) with both GPU provers.
    $D info
    $D setup scaled
    CUZK_GPU_PROVER=cuzk $D calls calls-own-scaled scaled 1 1,4 --compare-cpu
    CUZK_GPU_PROVER=supraseal $D calls calls-supra-scaled scaled 1 1,4
    CUZK_GPU_PROVER=cuzk $D bench scaled-own scaled 12 -j 4 $SUPRA --baseline-jobs 1 --baseline-count 2
    ;;
  h200-compact)
    # a, b, c computed on the GPU from the recording and the compact
    # witness (selftest's "(product on the GPU)" rows; calls --compact), against the full upload.
    $D info
    for n in 600 5000 65536; do $D selftest $n; done
    $D sanitize 600
    $D setup p10
    CUZK_GPU_PROVER=cuzk $D calls calls-compact-p10 p10 1 1,4 --compare-cpu --compact
    $D setup 2k
    CUZK_GPU_PROVER=cuzk $D calls calls-compact-2k 2k 1 1,4 --compare-cpu --compact
    ;;
  h200-witness)
    # The engine sends pce partitions to the GPU as witnesses (SYNTH_END
    # "pce;witness"), against the product on the host, same run.
    $D setup p10
    $D bench p10-witness p10 20 -j 8
    CUZK_SYNTHESIS=pce-host $D bench p10-pce-host p10 20 -j 8
    $D setup 2k
    $D bench 2k-witness 2k 30 -j 16
    CUZK_SYNTHESIS=pce-host $D bench 2k-pce-host 2k 30 -j 16
    ;;
  h200-msm)
    # cuzk's MSM driver (buffers kept, no host round trip between batches,
    # the windows finished on the GPU). Same bytes as the CPU first, then cost and streams.
    $D info
    for n in 600 5000 65536; do $D selftest $n; done
    $D sanitize 600
    $D setup p10
    $D calls calls-msm-p10 p10 1 1,4 --compare-cpu --compact
    CUZK_GPU_PROVER=supraseal $D calls calls-supra-p10 p10 1 1,4
    $D bench p10-msm p10 20 -j 8 $SUPRA --baseline-jobs 1 --baseline-count 4
    ;;
  h200-msm-tune)
    $D setup p10
    for wb in "" "13 1" "14 1" "15 1" "16 1" "16 2" "14 2"; do
      set -- $wb
      CUZK_MSM_WBITS=${1:-} CUZK_MSM_BATCHES=${2:-} $D calls "tune-${1:-d}-${2:-d}" p10 1 1 --compact
    done
    # Each kernel's time in one full-upload and one compact call (ncu serializes the kernels).
    export FIL_PROOFS_PARAMETER_CACHE=${FIL_PROOFS_PARAMETER_CACHE:-/tmp/cuzk-params}
    P=$FIL_PROOFS_PARAMETER_CACHE
    ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file "$OUT/ncu-p10.csv" \
      .dev/cuzk bench calls --c1 "$P/cuzk-fixtures/2KiB-p10.c1.json" --sector-id 1 --miner-id 1000 \
      --partitions 10 --widths 1 --reps 1 --compact > "$OUT/ncu-p10.out" 2>&1
    echo "ncu: exit $?, $(grep -c gpu__time_duration "$OUT/ncu-p10.csv") kernels"; pack
    $D bench p10-msm p10 20 -j 8 $SUPRA --baseline-jobs 1 --baseline-count 4
    ;;
  h200-streamed)
    # The streamed parameter mode beside the resident one; no supraseal backend.
    T0=$SECONDS
    $D info
    # The real 2KiB parameters take minutes on one core: made in the background meanwhile.
    ( scripts/device-bench.sh setup 2k > "$OUT/setup-2k.out" 2>&1 ) &
    SETUP2K=$!
    $D setup scaled
    for n in 600 5000 65536; do $D selftest $n; done
    compute-sanitizer --tool memcheck .dev/cuzk selftest --constraints 600 > "$OUT/sanitize-memcheck.log" 2>&1
    echo "memcheck: exit $?: $(grep 'ERROR SUMMARY' "$OUT/sanitize-memcheck.log")"; pack
    $D calls calls-scaled scaled 1 1,4 --compare-cpu --compact
    CUZK_GPU_PARAMS=streamed $D calls calls-scaled-streamed scaled 1 1 --compact
    $D bench scaled-msm scaled 12 -j 4 $SUPRA --baseline-jobs 1 --baseline-count 2
    # The real 2KiB circuit if its parameters are ready in time (this call has 600 s).
    while kill -0 $SETUP2K 2>/dev/null && (( SECONDS - T0 < 450 )); do sleep 5; done
    cat "$OUT/setup-2k.out"
    if ! kill -0 $SETUP2K 2>/dev/null; then
      $D calls calls-2k 2k 1 1,4 --compare-cpu --compact
      CUZK_GPU_PARAMS=streamed $D calls calls-2k-streamed 2k 1 1 --compact
      $D bench 2k-msm 2k 30 -j 16 $SUPRA --baseline-jobs 1 --baseline-count 8
    else
      echo "real 2KiB parameters not ready after $((SECONDS - T0)) s: skipped"
    fi
    ;;
  h200-2k)
    $D setup 2k
    $D calls calls-2k 2k 1 1,4 --compare-cpu --compact
    $D bench 2k-msm 2k 30 -j 16 $SUPRA --baseline-jobs 1 --baseline-count 8
    ;;
  h200-gpu-checks)
    # What `make test-gpu` checks, on the H200 with carried binaries (device-bench.sh
    # gpu-checks says which).
    $D info
    $D setup 2k
    $D gpu-checks
    $D sanitize-fixed-base
    [[ -x .dev/gpu-mutant.test ]] && $D gpu-mutant
    ;;
  h200-restructure)
    # make test-gpu's checks, then the 10-partition stream, to compare with an earlier build's
    # run of the same stream (docs/notebook/benchmarks.md section 9).
    $D info
    $D setup 2k
    $D gpu-checks
    $D setup p10
    $D bench p10 p10 10 -j 8
    ;;
  h200-kernels)
    # kernels/ on owning buffers and one header: make test-gpu's checks, then
    # compute-sanitizer (memcheck, racecheck) over a self-test and the fixed-base kernel.
    $D info
    $D setup 2k
    $D gpu-checks
    $D sanitize 4096
    $D sanitize-fixed-base
    ;;
  h200-issue23)
    # kernels/ on owning buffers and one header, the GPU backend split, the workspace:
    # make test-gpu's checks (the kernels' tests included), compute-sanitizer over the
    # fixed-base kernel, then the 10-partition stream (docs/notebook/benchmarks.md section 11).
    $D info
    $D setup 2k
    $D gpu-checks
    $D sanitize-fixed-base
    $D setup p10
    $D bench p10 p10 10 -j 8
    ;;
  h200-issue24)
    # A GPU-side defect's test (the streamed parameters' host copy held as resident) must fail
    # against a build without its fix and pass with it (device-bench.sh before-after).
    $D info
    $D setup 2k
    $D before-after the_streamed_parameters_host_copy_is_reserved_as_resident
    ;;
  h200-native-p10)
    # The 10-partition stream with native witnesses (the default) and with witness
    # synthesis, same run, and the GPU checks and Go tests against this build.
    $D info
    $D setup 2k
    $D setup p10
    $D bench p10-native p10 20 -j 8
    export CUZK_SYNTHESIS=pce; $D bench p10-pce p10 20 -j 8; unset CUZK_SYNTHESIS
    $D gpu-checks
    $D go
    ;;
  h200-issue26)
    # make test-gpu's checks with the error statuses on the GPU (kernel argument errors
    # INTERNAL, a row failure copied again), then the Go tests against the cuda static
    # library as make build-cuda leaves it (every symbol but cuzk_* local), on the GPU.
    $D info
    $D setup 2k
    $D gpu-checks
    $D go
    ;;
  h200-go)
    # A Go program built by the README's steps (-tags cuzk_cuda) proves on the GPU:
    # every Go test and example, the cuda test requiring "cuda:" devices in the timeline.
    $D info
    $D setup 2k
    $D go
    ;;
  *) echo "usage: $0 h200-native-p10|h200-gpu-checks|h200-restructure|h200-kernels|h200-issue23|h200-issue24|h200-issue26|h200-streamed|h200-msm|h200-msm-tune|h200-witness|h200-compact|h200-go|h200|h200-p10|h200-wait|x2|scaled|h200-hardening|h200-pce-p10|h200-pce-scaled|h200-own|h200-own-p10|h200-own-staged|h200-own-scaled" >&2; exit 2 ;;
esac
pack
ls -la "$FINAL"
if (( ${#FAILED[@]} )); then
  printf 'failed step: %s\n' "${FAILED[@]}" >&2
  exit 1
fi
echo "every step passed"
