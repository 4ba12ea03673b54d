#!/usr/bin/env bash
# Runs on a GPU host (the H200 test machines) from a working tree that carries prebuilt
# binaries in .dev/: cuzk built with --features cuda, and the incumbent builds from
# scripts/build-baseline.sh as .dev/fp-supraseal and .dev/fp-ecgpu. Logs, JSON summaries,
# timelines and waterfalls go to $OUT.
#   scripts/device-bench.sh info | selftest [N] | sanitize [N] | setup FIXTURE | bench NAME FIXTURE COUNT [ARGS...]
#                           | calls NAME FIXTURE DEVICES WIDTHS [ARGS...] | params-faults FIXTURE
#                           | synth NAME FIXTURE CONCURRENCY REPS | go [TEST_REGEXP] | gpu-checks | gpu-mutant
#                           | sanitize-fixed-base | before-after TEST
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
  gpu-checks)
    # What `make test-gpu` checks, with the binaries carried in .dev/ (the GPU hosts have no
    # Rust): the self-test's rows (resident and streamed, verified, identical), the real 2KiB
    # C1 proved on a cuda device and accepted by verify_seal, the kernels' tests against the
    # CPU (.dev/gpu.test: `cargo test --release --features cuda --test gpu --no-run`,
    # stripped), the Go test with CUZK_EXPECT_GPU=1 (.dev/go/cuzk-go.test). Exits non-zero
    # naming every failed check.
    stamp gpu-checks; bad=(); t0=$SECONDS
    $BIN selftest --constraints 65536 > "$OUT/gpu-selftest.out" 2> "$OUT/gpu-selftest.log" || bad+=(selftest)
    cat "$OUT/gpu-selftest.out"
    ok='verified: yes +same bytes as the CPU: yes'
    r=$(grep -cE "^ +cuda:[0-9]+ cuzk +prove .*$ok" "$OUT/gpu-selftest.out")
    s=$(grep -cE "^ +cuda:[0-9]+ cuzk streamed +prove .*$ok" "$OUT/gpu-selftest.out")
    [[ $r -ge 1 && $r -eq $s ]] || bad+=("selftest rows: $r resident, $s streamed")
    $BIN prove --c1 "$(c1 2k)" --sector-id 1 --miner-id 1000 --timeline -o "$OUT/gpu.proof" 2> "$OUT/gpu-prove.log" || bad+=(prove)
    grep -qE 'GPU_END.*cuda:' "$OUT/gpu-prove.log" || bad+=("2KiB proof not on a GPU")
    $BIN verify --c1 "$(c1 2k)" --sector-id 1 --miner-id 1000 --proof "$OUT/gpu.proof" || bad+=(verify_seal)
    if [[ -x .dev/gpu.test ]]; then
      CUZK_TEST_GPU=1 .dev/gpu.test --nocapture > "$OUT/gpu-unit.log" 2>&1 || bad+=("the kernels' tests (tests/gpu.rs)")
      grep -E '^test |GPU prover = CPU|windows|test result' "$OUT/gpu-unit.log"
    else bad+=("no .dev/gpu.test carried"); fi
    CUZK_EXPECT_GPU=1 CUZK_TEST_C1=$(c1 2k) .dev/go/cuzk-go.test -test.v -test.count=1 -test.timeout 20m \
      -test.run TestCudaBuild > "$OUT/gpu-go.log" 2>&1 || bad+=("Go with CUZK_EXPECT_GPU=1")
    grep -E "^(--- |ok|FAIL|PASS)|partitions proved on" "$OUT/gpu-go.log"
    echo "the GPU checks (make test-gpu's) took $((SECONDS - t0)) s"
    # The rest of make test-cuda must not fail for having a GPU: its discovery takes the GPU
    # branch (no "no usable GPU" line), and the C ABI test of the cuda library with the CPU
    # prover (CUZK_DEVICES=cpu; .dev/test_ffi_cuda: tests/c/test_ffi.c linked with
    # target/cuda/libcuzk.a, stripped) passes beside a GPU.
    $BIN selftest --constraints 4096 > /dev/null 2> "$OUT/cuda-selftest.log" || bad+=("selftest 4096")
    ! grep -q 'no usable GPU' "$OUT/cuda-selftest.log" || bad+=("discovery says no usable GPU")
    if [[ -x .dev/test_ffi_cuda ]]; then
      CUZK_DEVICES=cpu CUZK_TEST_C1=$(c1 2k) CUZK_TEST_SECTOR=1 CUZK_TEST_MINER=1000 CUZK_TEST_PARAMS=$P \
        CUZK_TEST_NO_GPU=1 .dev/test_ffi_cuda errors > "$OUT/test-ffi-cuda.log" 2>&1 || bad+=("test_ffi (cuda library, CUZK_DEVICES=cpu)")
      tail -1 "$OUT/test-ffi-cuda.log"
    else bad+=("no .dev/test_ffi_cuda carried"); fi
    if (( ${#bad[@]} )); then printf 'GPU CHECK FAILED: %s\n' "${bad[@]}" >&2; exit 1; fi
    echo "every GPU check passed ($((SECONDS - t0)) s)" ;;
  before-after)
    # A defect's test against the kernels' test binary built without its fix
    # (.dev/gpu-before.test, must fail) and with it (.dev/gpu.test, must pass).
    stamp "before-after $2"
    CUZK_TEST_GPU=1 .dev/gpu-before.test --exact "$2" > "$OUT/before-$2.log" 2>&1
    before=$?; grep -E "^test |panicked|must|left:|right:" "$OUT/before-$2.log" | head -8
    CUZK_TEST_GPU=1 .dev/gpu.test --exact "$2" > "$OUT/after-$2.log" 2>&1
    after=$?; grep -E "^test |panicked" "$OUT/after-$2.log" | head -4
    echo "without the fix: exit $before (must fail); with it: exit $after (must pass)"
    [[ $before != 0 && $after == 0 ]] || exit 1 ;;
  sanitize-fixed-base)
    # compute-sanitizer's memcheck over the fixed-base kernel's test (parameter generation's
    # points on the GPU), with a deadline.
    stamp sanitize-fixed-base
    CUZK_TEST_GPU=1 timeout 300 compute-sanitizer --tool memcheck .dev/gpu.test \
      the_gpus_fixed_base_multiplication_writes_the_cpus_bytes > "$OUT/sanitize-fixed-base.log" 2>&1
    rc=$?; echo "compute-sanitizer memcheck (fixed base): exit $rc"
    sum=$(grep -E "ERROR SUMMARY" "$OUT/sanitize-fixed-base.log" | tail -1); echo "$sum"
    grep -E "^test |test result" "$OUT/sanitize-fixed-base.log"
    [[ $rc = 0 && $sum == *" 0 errors"* ]] || { tail -30 "$OUT/sanitize-fixed-base.log"; exit 1; } ;;
  gpu-mutant)
    # The kernels' tests must fail against a kernel that returns a wrong point:
    # .dev/gpu-mutant.test is tests/gpu.rs built with kernels/groth16.cu mutated (see
    # scripts/gpu-mutant.sh). Exits non-zero if they pass.
    stamp gpu-mutant
    [[ -x .dev/gpu-mutant.test ]] || { echo "no .dev/gpu-mutant.test carried" >&2; exit 1; }
    CUZK_TEST_GPU=1 .dev/gpu-mutant.test --nocapture > "$OUT/gpu-mutant.log" 2>&1
    mrc=$?
    grep -E '^test |differs|windows|test result' "$OUT/gpu-mutant.log" | head -40
    if (( mrc == 0 )); then echo "the kernels' tests PASSED against a mutated kernel" >&2; exit 1; fi
    echo "the mutated kernel failed the kernels' tests (exit $mrc), as it must" ;;
  go)
    # The Go package's tests, built with -tags cuzk_cuda (`make dev-go`: .dev/go/cuzk-go.test),
    # on the real 2KiB fixture; CUZK_EXPECT_GPU=1 makes the cuda test fail unless every
    # partition is proved on a "cuda:" device.
    stamp "go ${2:-.}"
    CUZK_EXPECT_GPU=1 CUZK_TEST_C1=$(c1 2k) CUZK_GO_CONCURRENCY=16 .dev/go/cuzk-go.test -test.v -test.count=1 \
      -test.timeout 20m -test.run "${2:-.}" > "$OUT/go-test.log" 2>&1
    rc=$?
    grep -E "^(--- |ok|FAIL|PASS)|partitions proved on|devices" "$OUT/go-test.log"; exit $rc ;;
  selftest)
    stamp "selftest ${2:-65536}"
    $BIN selftest --constraints "${2:-65536}" ;;
  sanitize)
    # compute-sanitizer's memcheck (and racecheck of shared memory) over a small self-test.
    stamp "sanitize ${2:-600}"
    # racecheck reports warnings (not errors) in sppark's digit sort; errors fail the step.
    for tool in memcheck racecheck; do
      compute-sanitizer --tool $tool $BIN selftest --constraints "${2:-600}" \
        > "$OUT/sanitize-$tool.log" 2>&1
      rc=$?; echo "compute-sanitizer $tool: exit $rc"
      sum=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitize-$tool.log" | tail -1); echo "$sum"
      [[ $rc = 0 && ( $sum == *" 0 errors"* || $sum == *"(0 errors"* ) ]] || { tail -30 "$OUT/sanitize-$tool.log"; exit 1; }
    done ;;
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
      --widths "$5" --reps 3 --json "$OUT/$name.json" "${@:6}" > "$OUT/$name.out" 2> "$OUT/$name.log"
    rc=$?
    cat "$OUT/$name.out"; [[ $rc = 0 ]] || tail -3 "$OUT/$name.log"
    exit $rc ;;
  synth)
    # Synthesis cost by path (full, witness only, witness + sparse product): synth NAME FIXTURE
    # CONCURRENCY REPS.
    name=$2 fx=$3
    stamp "synth $name"
    $BIN bench synth --c1 "$(c1 "$fx")" --sector-id 1 --miner-id 1000 $(shape "$fx") \
      --concurrency "$4" --reps "$5" --json "$OUT/$name.json" > "$OUT/$name.out" 2> "$OUT/$name.log"
    rc=$?
    grep -v '^RESULT' "$OUT/$name.out"; [[ $rc = 0 ]] || tail -3 "$OUT/$name.log"
    exit $rc ;;
  params-faults)
    # The fixture's .params truncated at every section boundary (one byte either side too),
    # at 99%, with 7 bytes too many, and its .vk with gamma and delta swapped: `cuzk prove`
    # must end with a PARAMS error (exit 1), never a crash, and never a proof.
    fx=$2
    stamp "params-faults $fx"
    id=$($BIN setup --sector-size 2KiB $(shape "$fx") 2>/dev/null | sed -n 's/.*"params_id": "\(.*\)".*/\1/p')
    src=$P/v28-$id.params vk=$P/v28-$id.vk
    T=$(mktemp -d); cp "$vk" "$T/"; cp "$src" "$T/"
    len=$(stat -c %s "$src")
    cuts=$( { $BIN params sections "$src" | awk '{print $2-1; print $2; print $2+1}'; echo $((len / 100 * 99)); echo 100; } \
      | sort -n | uniq | awk -v L="$len" '$1 < L' | sort -rn)
    fail=0
    prove() { $BIN prove --params-dir "$T" --c1 "$(c1 "$fx")" --sector-id 1 --miner-id 1000 $(shape "$fx") -o "$T/proof" > "$T/out" 2>&1; }
    for c in $cuts; do
      truncate -s "$c" "$T/v28-$id.params"
      prove; rc=$?
      if [[ $rc = 1 ]] && grep -q "PARAMS" "$T/out"; then echo "cut $c of $len: rc=1 PARAMS"; else echo "cut $c of $len: rc=$rc UNEXPECTED: $(tail -2 "$T/out")"; fail=1; fi
    done
    cp "$src" "$T/"; printf '\0\0\0\0\0\0\0' >> "$T/v28-$id.params"
    prove; rc=$?; grep -q PARAMS "$T/out" && [[ $rc = 1 ]] && echo "7 trailing bytes: rc=1 PARAMS" || { echo "trailing bytes: rc=$rc UNEXPECTED"; fail=1; }
    cp "$src" "$T/"
    # vk: alpha_g1 96, beta_g1 96, beta_g2 192, gamma_g2 192 @384, delta_g1 96 @576, delta_g2 192 @672.
    { head -c 384 "$vk"; tail -c +673 "$vk" | head -c 192; tail -c +577 "$vk" | head -c 96; \
      tail -c +385 "$vk" | head -c 192; tail -c +865 "$vk"; } > "$T/v28-$id.vk"
    prove; rc=$?; grep -q PARAMS "$T/out" && [[ $rc = 1 ]] && echo "swapped vk: rc=1 PARAMS: $(grep -o 'does not match[^;]*' "$T/out" | head -1)" || { echo "swapped vk: rc=$rc UNEXPECTED: $(tail -2 "$T/out")"; fail=1; }
    cp "$vk" "$T/"
    prove; rc=$?; echo "sound files: rc=$rc $(grep -E '^RESULT' "$T/out")"
    $BIN verify --params-dir "$T" --c1 "$(c1 "$fx")" --sector-id 1 --miner-id 1000 $(shape "$fx") --proof "$T/proof" || fail=1
    rm -rf "$T"
    exit $fail ;;
  *) echo "usage: see the header" >&2; exit 2 ;;
esac
