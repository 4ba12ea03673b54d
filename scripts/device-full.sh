#!/usr/bin/env bash
# Full-size (32 GiB / 64 GiB) runs on a GPU host from a bare machine, with binaries
# carried in .dev/ (cuzk built with --features cuda, .dev/fp-supraseal from
# scripts/build-baseline.sh). A run outlasts one device call (10 minutes), so it is started in
# the background in its own session and polled:
#   scripts/device-full.sh start PLAN   # PLAN: 32 (the 32 GiB run), 64 (the 64 GiB checks),
#                                       # small (32 GiB within 24 and 16 GiB of device memory;
#                                       # LIMITS="16GiB 12GiB" for others) or
#                                       # native (witness CPU by path, 16 at once, and
#                                       # the 32 GiB stream with native and witness synthesis)
#                                       # or both (native, then small's 24 and 16 GiB limits)
#                                       # or fresh (fresh processes' first proofs,
#                                       # a GPU shared with a co-tenant)
#                                       # or post (WinningPoSt beside a PoRep
#                                       # stream, WindowPoSt alone, beside a 2KiB stream and
#                                       # against the incumbent; SIZE=32GiB by default;
#                                       # post-window: the WindowPoSt part only)
#                                       # or snap (SnapDeals at SIZE, default 32GiB: a stream
#                                       # of SNAP_COUNT proofs, SNAP_J in flight, then the
#                                       # incumbent on the same fixture, SNAP_INCUMBENT proofs)
#                                       # or msm (parameters resident, read piece by piece: the
#                                       # host's peak; the H MSM's shapes swept in one engine,
#                                       # then the 6-proof stream with the fastest;
#                                       # MSM_SHAPES and MSM_SWEEP_PROOFS change the sweep)
#   scripts/device-full.sh poll [SECS]  # waits up to SECS (default 540) for the run, packs what
#                                       # is there into $OUT/results.tgz, prints the log's tail
#   scripts/device-full.sh check        # in the foreground, first: parameter sets generated on
#                                       # the GPU against the CPU's, byte for byte (10-partition
#                                       # fixture and real 2KiB), with their times
# Results and logs go to $W (on the disk with the most room; the parameter sets are ~47 GB).
set -uo pipefail
BIN=${BIN:-$PWD/.dev/cuzk}
SUPRA=${SUPRA:-$PWD/.dev/fp-supraseal}
pick_dir() {  # the mounted filesystem with the most free space that is not in memory
  df -P -B1 -x tmpfs -x devtmpfs -x overlay 2>/dev/null | awk 'NR>1 {print $4, $6}' | sort -rn | head -1 | awk '{print $2}'
}
W=${W:-/var/tmp/cuzk-full}
case ${1:-} in
  start)
    base=$(pick_dir); [[ -n $base && $base != / ]] && W=$base/cuzk-full
    mkdir -p "$W"; echo "$W" > /tmp/cuzk-full.dir
    setsid nohup "$0" run "$2" "$W" > "$W/log" 2>&1 < /dev/null &
    echo "started plan $2 in $W (pid $!)"; df -h; free -g ;;
  check)
    T=/tmp/cuzk-check; rm -rf "$T"; mkdir -p "$T"; rc=0
    for shape in "2KiB --partitions 10" "2KiB"; do
      for on in off gpu; do
        d=$T/$on; [[ $on = gpu ]] && unset CUZK_PARAMGEN_GPU || export CUZK_PARAMGEN_GPU=off
        t0=$SECONDS
        $BIN --params-dir "$d" params gen --sector-size $shape --no-recording > "$T/gen.json" 2> "$T/gen.log" \
          || { echo "params gen $shape ($on) failed"; tail -5 "$T/gen.log"; rc=1; }
        echo "$shape on $on: $((SECONDS - t0)) s; $(grep -E '"(points_on|points_seconds|eval_seconds)"' "$T/gen.json" | tr -d ' \n')"
      done
      unset CUZK_PARAMGEN_GPU
    done
    for f in "$T"/off/*.params "$T"/off/*.vk; do
      if cmp -s "$f" "$T/gpu/$(basename "$f")"; then echo "same bytes: $(basename "$f")"
      else echo "DIFFERENT: $(basename "$f")"; rc=1; fi
    done
    exit $rc ;;
  poll)
    # A fresh machine (the last one was given back) has no run: say so at once.
    [[ -s /tmp/cuzk-full.dir ]] || { echo "no run on this machine (it was given back?)"; exit 3; }
    W=$(cat /tmp/cuzk-full.dir)
    end=$((SECONDS + ${2:-540}))
    while (( SECONDS < end )) && ! grep -q '^== END' "$W/log"; do sleep 5; done
    tar czf "${OUT:-/tmp}/results.tgz" -C "$W" --exclude='*.params' --exclude='*.vk' --exclude='*.cuzk-pce' --exclude='*.json.c1' \
      --exclude=vanilla.bin --exclude=c1.json --exclude='*.timeline' . 2>/dev/null
    tail -c 6000 "$W/log"
    # A failed step fails the poll (and names it); a run still going is not a failure.
    if grep -q '^STEP FAILED' "$W/log"; then grep '^STEP FAILED' "$W/log" >&2; exit 1; fi ;;
  run)
    PLAN=$2 W=$3; cd "$(dirname "$0")/.." || exit 1
    export RUST_LOG=${RUST_LOG:-info} RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-}
    stamp() { echo "== $(date +%T) ($SECONDS s) $*"; }
    # Device memory every second while a step runs.
    smi() { nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader -l 1 > "$W/$1.smi" 2>/dev/null & echo $!; }
    # A command's wall time, peak RSS and exit code, its output in $W/NAME.{out,log}.
    timed() { local name=$1 t0=$SECONDS rc; shift
      if [[ -x /usr/bin/time ]]; then /usr/bin/time -v -o "$W/$name.time" "$@" > "$W/$name.out" 2> "$W/$name.log"; rc=$?
      else "$@" > "$W/$name.out" 2> "$W/$name.log"; rc=$?; fi
      echo "$name: exit $rc, $((SECONDS - t0)) s $(grep -E 'Maximum resident' "$W/$name.time" 2>/dev/null | sed 's/^\s*//')"
      [[ $rc = 0 ]] || { echo "STEP FAILED: $name (exit $rc)"; tail -5 "$W/$name.log"; }; return $rc; }
    # Room for a parameter set (~47 GB) and its recording (~6 GB)? Else the engine records.
    rec_opt() { local avail; avail=$(df -P -B1 "$1" | awk 'NR==2 {print $4}')
      (( avail > 56000000000 )) || echo --no-recording; }
    # The incumbent, one proof, killed (and its peak reported) before it takes the host down.
    baseline() { local size=$1 P=$2 cap=$((110 << 30)) peak=0
      FIL_PROOFS_PARAMETER_CACHE=$P $SUPRA --c1 "$P/c1-$size.json" --sector-id 1 --miner-id 1000 -c 1 -j 1 --label fp-supraseal \
        > "$W/baseline-$size.out" 2> "$W/baseline-$size.log" &
      local pid=$! t0=$SECONDS
      while kill -0 $pid 2>/dev/null; do
        rss=$(( $(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0) * 1024 ))
        (( rss > peak )) && peak=$rss
        if (( rss > cap )); then kill -9 $pid; echo "baseline $size: killed at $((SECONDS - t0)) s with $((rss >> 30)) GiB resident (cap $((cap >> 30)) GiB)"; break; fi
        sleep 1
      done
      wait $pid; echo "baseline $size: exit $?, $((SECONDS - t0)) s, peak RSS seen $((peak >> 30)) GiB"
      tail -3 "$W/baseline-$size.log"; cat "$W/baseline-$size.out"; }
    # Two 32 GiB proofs (parameters in $P) under each device memory limit given (none: no
    # limit), with the plan taken and the device's own memory peak (nvidia-smi, every second).
    limited() { local lim s
      for lim in "$@"; do
        stamp "two proofs, CUZK_GPU_MEM_LIMIT=$lim"
        s=$(smi bench-small-$lim)
        if [[ $lim = none ]]; then unset CUZK_GPU_MEM_LIMIT; else export CUZK_GPU_MEM_LIMIT=$lim; fi
        timed bench-small-$lim $BIN --params-dir "$P" bench batch --c1 "$P/c1-32GiB.json" ${ID:-} -c 2 -j 2 --memory-budget-gib 100 \
          --json "$W/bench-small-$lim.json" --timeline "$W/bench-small-$lim.timeline"
        kill $s; unset CUZK_GPU_MEM_LIMIT
        grep -E 'device memory for|cannot hold|lean|from host memory|resident on the GPU' "$W/bench-small-$lim.log" | head -8
        grep -vE '^\s*$' "$W/bench-small-$lim.out" | tail -14
        echo "device memory peak (nvidia-smi): $(awk -F', ' '{gsub(/ MiB/,"",$2); if ($2+0 > m) m = $2+0} END {print m " MiB"}' "$W/bench-small-$lim.smi")"
      done; }
    stamp "plan $PLAN in $W"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; free -g | head -2; df -h "$W"
    case $PLAN in
      32)
        P=$W/p32; mkdir -p "$P"
        stamp "32GiB parameters and recording"
        timed gen-32 $BIN --params-dir "$P" params gen --sector-size 32GiB $(rec_opt "$P"); cat "$W/gen-32.out" | head -40
        stamp "32GiB synthetic C1"
        timed fixture-32 $BIN fixture --sector-size 32GiB --sector-id 1 --miner-id 1000 -o "$P/c1-32GiB.json"; cat "$W/fixture-32.log"
        stamp "a stream of 3 proofs"
        s=$(smi bench-32)
        timed bench-32 $BIN --params-dir "$P" bench batch --c1 "$P/c1-32GiB.json" -c 3 -j 2 --memory-budget-gib 112 \
          --svg "$W/bench-32.svg" --json "$W/bench-32.json" --timeline "$W/bench-32.timeline"
        kill $s; grep -vE '^\s*$' "$W/bench-32.out" | tail -30
        stamp "filecoin-proofs + supraseal, one proof"
        baseline 32GiB "$P" ;;
      small)
        # The 32 GiB circuit on cards of 24 and 16 GiB (CUZK_GPU_MEM_LIMIT on the
        # H200), then without a limit, same parameters and C1, two proofs each (every one
        # verified by the self-check and verify_seal). The device's own reading of its memory
        # (nvidia-smi, every second) is in bench-small-*.smi.
        P=$W/p32; mkdir -p "$P"
        stamp "32GiB parameters and recording"
        timed gen-32 $BIN --params-dir "$P" params gen --sector-size 32GiB $(rec_opt "$P"); head -20 "$W/gen-32.out"
        timed fixture-32 $BIN fixture --sector-size 32GiB --sector-id 1 --miner-id 1000 -o "$P/c1-32GiB.json"
        limited ${LIMITS:-24GiB 16GiB none} ;;
      native)
        # A partition's witness CPU by path (witness synthesis, native), 16 at once on
        # the 16 cores, on the 32 GiB partition and the scaled fixture (neither needs
        # parameters); then the 32 GiB stream with native witnesses (the default) and with
        # witness synthesis (CUZK_SYNTHESIS=pce), same parameters, C1 and machine, every proof
        # verified (self-check and verify_seal).
        P=$W/p32; mkdir -p "$P"
        timed fixture-32 $BIN fixture --sector-size 32GiB --sector-id 1 --miner-id 1000 -o "$P/c1-32GiB.json"
        timed fixture-scaled $BIN fixture --sector-size 2KiB --partitions 10 --layers 11 --sector-id 1 --miner-id 1000 -o "$W/c1-scaled.json"
        stamp "witness CPU by path, 16 at once"
        timed synth-scaled $BIN bench synth --c1 "$W/c1-scaled.json" --sector-id 1 --miner-id 1000 --partitions 10 --layers 11 \
          --paths witness,native --concurrency 16 --reps 3 --json "$W/synth-scaled.json"; grep -v '^RESULT' "$W/synth-scaled.out"
        timed synth-32 $BIN bench synth --c1 "$P/c1-32GiB.json" --sector-id 1 --miner-id 1000 \
          --paths witness,native --concurrency 16 --reps 1 --json "$W/synth-32.json"; grep -v '^RESULT' "$W/synth-32.out"
        stamp "32GiB parameters and recording"
        timed gen-32 $BIN --params-dir "$P" params gen --sector-size 32GiB $(rec_opt "$P"); head -20 "$W/gen-32.out"
        for mode in native pce; do
          stamp "a stream of 6 proofs, CUZK_SYNTHESIS=$mode"
          s=$(smi stream-$mode); export CUZK_SYNTHESIS=$mode
          timed stream-$mode $BIN --params-dir "$P" bench batch --c1 "$P/c1-32GiB.json" -c 6 -j 3 \
            --memory-budget-gib 100 --json "$W/stream-$mode.json" --timeline "$W/stream-$mode.timeline"
          kill $s; unset CUZK_SYNTHESIS; grep -vE '^\s*$' "$W/stream-$mode.out" | tail -14
        done ;;
      msm)
        # The 32 GiB parameters resident on the GPU, read from the file piece
        # by piece (the host's peak RSS with them resident); the large MSMs' shapes (windows x
        # batches, 0x0 the default) swept in the same engine, two proofs each; then the stream
        # of 6 proofs with the shape of the fewest kernel ms. Every proof verified (self-check
        # and verify_seal).
        # The kernels' own tests first (~45 s): a kernel that computes wrong would send every
        # 32 GiB partition to the CPU after the self-check, and the run would spend its time there.
        if [[ -x ${GPU_TEST:-.dev/gpu.test} ]]; then
          stamp "the GPU prover against the CPU (tests/gpu.rs)"
          CUZK_TEST_GPU=1 timed gpu-gate "${GPU_TEST:-.dev/gpu.test}" --test-threads 1 || { stamp "END (the GPU tests failed)"; exit 1; }
          grep -E '^test |test result' "$W/gpu-gate.out" | head -12
        fi
        P=$W/p32; mkdir -p "$P"
        timed fixture-32 $BIN fixture --sector-size 32GiB --sector-id 1 --miner-id 1000 -o "$P/c1-32GiB.json"
        stamp "32GiB parameters and recording"
        timed gen-32 $BIN --params-dir "$P" params gen --sector-size 32GiB $(rec_opt "$P"); head -20 "$W/gen-32.out"
        stamp "MSM shapes, then a stream of 6 proofs"
        s=$(smi msm)
        timed msm $BIN --params-dir "$P" bench batch --c1 "$P/c1-32GiB.json" -c 6 -j 3 --memory-budget-gib 100 \
          --msm-shapes ${MSM_SHAPES:-0x0,16x1,18x1,20x1,20x8,22x1,22x4} --msm-sweep-proofs ${MSM_SWEEP_PROOFS:-2} \
          --json "$W/msm.json" --timeline "$W/msm.timeline" --svg "$W/msm.svg"
        kill $s
        grep -E 'resident on the GPU|streamed from|device memory for' "$W/msm.log" | head -4
        grep -vE '^\s*$' "$W/msm.out" | tail -24
        echo "device memory peak (nvidia-smi): $(awk -F', ' '{gsub(/ MiB/,"",$2); if ($2+0 > m) m = $2+0} END {print m " MiB"}' "$W/msm.smi")"
        # With NCU=1: each kernel's time in the first NCU_LAUNCHES launches of a one-proof run
        # (the first partition's upload and proof), by Nsight Compute (one metric, one pass).
        if [[ ${NCU:-0} = 1 ]] && command -v ncu > /dev/null; then
          stamp "kernel times of one partition (ncu)"
          timed ncu timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
            --launch-count ${NCU_LAUNCHES:-150} --log-file "$W/ncu.csv" \
            $BIN --params-dir "$P" bench batch --c1 "$P/c1-32GiB.json" -c 1 -j 1 --memory-budget-gib 100
          python3 - "$W/ncu.csv" <<'PY' || true
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]; k = head.index('Kernel Name'); v = head.index('Metric Value'); u = head.index('Metric Unit')
tot = collections.OrderedDict(); cnt = collections.Counter()
for r in rows[1:]:
    name = r[k].split('(')[0].split('<')[0].strip()
    x = float(r[v].replace(',', '')) * {'nsecond': 1e-6, 'usecond': 1e-3, 'msecond': 1.0, 'second': 1e3}.get(r[u], 1e-6)
    tot[name] = tot.get(name, 0) + x; cnt[name] += 1
for n, x in sorted(tot.items(), key=lambda t: -t[1]):
    print(f"{x:10.2f} ms {cnt[n]:4d}x {n}")
print(f"{sum(tot.values()):10.2f} ms in all")
PY
        fi ;;
      fresh)
        # (1) The first proof of a fresh process, three `cuzk prove` processes in a
        # row (the first with the page cache dropped: cold) and three through the Go drop-in
        # SealCommitPhase2 (.dev/go/cuzk-commit2 -dropin), each checked by `cuzk verify`;
        # (2) a GPU shared with another process: a stream of 5 proofs that starts while a
        # co-tenant holds all but 6 GiB of the card for 30 s, and meets a second one holding
        # all but 0.5 GiB for 30 s mid-stream (scripts/gpu-cotenant.py, PyTorch).
        P=$W/p32; mkdir -p "$P"; export CUZK_ALLOW_RANDOM_PARAMS=1
        C1=$P/c1-32GiB.json; ID="--sector-id 4711 --miner-id 31337"
        timed fixture-32 $BIN fixture --sector-size 32GiB $ID -o "$C1"
        stamp "32GiB parameters and recording"
        timed gen-32 $BIN --params-dir "$P" params gen --sector-size 32GiB $(rec_opt "$P"); head -20 "$W/gen-32.out"
        ls -la "$P"
        for n in 1 2 3; do
          if [[ $n = 1 ]]; then sync; echo 3 > /proc/sys/vm/drop_caches && echo "page cache dropped (cold)"; fi
          stamp "fresh process $n: cuzk prove"
          t0=$EPOCHREALTIME
          timed prove-$n $BIN --params-dir "$P" prove --c1 "$C1" $ID -o "$W/prove-$n.proof" --timeline
          echo "process start to proof: $(awk "BEGIN {printf \"%.1f\", $EPOCHREALTIME - $t0}") s (cuzk prove $n)"
          grep -E 'RESULT|waits for the recording|loaded from|resident on the GPU|lean' "$W/prove-$n.log" "$W/prove-$n.out" | head -6
          echo "SYNTH_END paths: $(grep -o 'SYNTH_END,[^ ]*' "$W/prove-$n.log" | awk -F, '{print $NF}' | sort | uniq -c | tr '\n' ' ')"
          timed verify-$n $BIN --params-dir "$P" verify --c1 "$C1" $ID --proof "$W/prove-$n.proof"; cat "$W/verify-$n.out"
        done
        for n in 1 2 3; do
          stamp "fresh process $n: Go SealCommitPhase2"
          t0=$EPOCHREALTIME
          FIL_PROOFS_PARAMETER_CACHE=$P timed dropin-$n .dev/go/cuzk-commit2 -dropin -sector 4711 -miner 31337 -o "$W/dropin-$n.proof" "$C1"
          echo "process start to proof: $(awk "BEGIN {printf \"%.1f\", $EPOCHREALTIME - $t0}") s (drop-in $n)"; cat "$W/dropin-$n.out"
          timed dverify-$n $BIN --params-dir "$P" verify --c1 "$C1" $ID --proof "$W/dropin-$n.proof"; cat "$W/dverify-$n.out"
        done
        stamp "a stream of 5 proofs on a GPU shared with a co-tenant"
        python3 scripts/gpu-cotenant.py 6 30 > "$W/cotenant-a.log" 2>&1 &
        a=$!
        for _ in $(seq 120); do grep -q holding "$W/cotenant-a.log" && break; sleep 0.5; done
        cat "$W/cotenant-a.log"; nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
        s=$(smi cotenant)
        timed cotenant $BIN --params-dir "$P" bench batch --c1 "$C1" $ID -c 5 -j 2 --memory-budget-gib 100 \
          --json "$W/cotenant.json" --timeline "$W/cotenant.timeline" &
        b=$!
        wait $a; cat "$W/cotenant-a.log"
        sleep 75
        python3 scripts/gpu-cotenant.py 0.5 30 > "$W/cotenant-b.log" 2>&1
        cat "$W/cotenant-b.log"
        wait $b; kill $s
        grep -E 'no room|room on the GPU again|cannot take the parameters|cannot hold' "$W/cotenant.log" | head -12
        grep -vE '^\s*$' "$W/cotenant.out" | tail -16
        # (3) The one-stage plans' device peaks against their figures.
        limited ${LIMITS:-16GiB 12GiB} ;;
      both)
        # The native and small plans in one device session, the 32 GiB parameters generated
        # once: the native plan, then the small plan's limits (native witnesses, the default),
        # two proofs each, every proof verified.
        "$0" run native "$W" || true
        P=$W/p32
        limited 24GiB 16GiB ;;
      post|post-window)
        # PoSt through the engine at SIZE (default 32GiB), fixtures without sectors.
        # (1) WinningPoSt beside a PoRep stream of 5 proofs: the stream once without PoSt, then
        # with 20 WinningPoSt submissions (submit to verified proof, p50/p99), after 3 alone.
        # (2) The PoRep set deleted (the disk holds one 47 GB set), WindowPoSt's generated: the
        # incumbent (filecoin-proofs + supraseal) on one full partition, killed past 110 GiB;
        # then cuzk on the same partition alone on the warm engine (submit to proof against GPU
        # time, stages), then 5 submissions beside a stream of the 2KiB 10-partition fixture.
        # Every proof verified (self-check, verify_seal, verify_{winning,window}_post).
        # COMPARE=0 skips the stream without PoSt, INCUMBENT=0 the incumbent; post-window runs
        # (2) only, INCUMBENT_PROOFS (default 4) sets the incumbent's count. First, the
        # WindowPoSt witness by witness synthesis and natively (WITNESS_REPS rounds each).
        SIZE=${SIZE:-32GiB}; P=$W/p-post; mkdir -p "$P"; export CUZK_ALLOW_RANDOM_PARAMS=1
        timed fixture-window $BIN fixture --kind window-post --sector-size $SIZE --sector-id 1 --miner-id 1000 -o "$W/window"
        # The WindowPoSt witness on this host's cores: witness synthesis against the native
        # generator (no parameters needed), its groups and assembly in the debug log.
        # WITNESS_REPS=0 skips it (measured once already: a run short of device time).
        if [[ ${WITNESS_REPS:-1} != 0 ]]; then
        RUST_LOG=${RUST_LOG},cuzk::pce::native::post=debug timed post-witness $BIN bench post-witness --post "$W/window" --reps ${WITNESS_REPS:-1}
        cat "$W/post-witness.out"; grep -h "native PoSt witness" "$W/post-witness.log" | tail -2
        fi
        if [[ $PLAN = post ]]; then
        timed fixture-porep $BIN fixture --sector-size $SIZE --sector-id 1 --miner-id 1000 -o "$P/c1.json"
        timed fixture-winning $BIN fixture --kind winning-post --sector-size $SIZE --sector-id 1 --miner-id 1000 -o "$W/winning"
        cat "$W"/fixture-*.log
        stamp "$SIZE PoRep and WinningPoSt parameters"
        timed gen-porep $BIN --params-dir "$P" params gen --sector-size $SIZE $(rec_opt "$P"); head -12 "$W/gen-porep.out"
        timed gen-winning $BIN --params-dir "$P" params gen --kind winning-post --sector-size $SIZE; head -12 "$W/gen-winning.out"
        stamp "WinningPoSt beside a PoRep stream"
        s=$(smi winning)
        timed winning $BIN --params-dir "$P" bench batch --c1 "$P/c1.json" -c ${STREAM:-5} -j 2 --memory-budget-gib 100 \
          --post "$W/winning" --post-count ${WINNING_COUNT:-20} --post-alone 3 $([[ ${COMPARE:-1} = 1 ]] && echo --post-compare) \
          --json "$W/winning.json" --timeline "$W/winning.timeline" --svg "$W/winning.svg"
        kill $s; grep -vE '^\s*$' "$W/winning.out" | grep -vE '^ +[0-9]+ +[0-9.]+ ' | tail -24
        rm -f "$P"/*stacked-proof-of-replication*; df -h "$P"
        fi
        stamp "$SIZE WindowPoSt parameters"
        # The 32 GiB WindowPoSt set is 61 GB (its witness is dense): with its recording (~8 GB,
        # 67 bytes a constraint) it does not fit a 64 GiB disk. The recording goes to host
        # memory (/dev/shm, where it has 12 GB free; the engine reads it through CUZK_PCE_DIR);
        # else the engine records the circuit when it first loads it (326 s on 16 cores).
        shm=$(df -P -B1 /dev/shm 2>/dev/null | awk 'NR==2 {print $4}')
        if (( ${shm:-0} > 12 << 30 )); then
          export CUZK_PCE_DIR=/dev/shm/cuzk-pce; win_rec="--recording-dir $CUZK_PCE_DIR"
        else win_rec=--no-recording; fi
        timed gen-window $BIN --params-dir "$P" params gen --kind window-post --sector-size $SIZE $win_rec; head -12 "$W/gen-window.out"
        timed setup-2k $BIN --params-dir "$P" setup --sector-size 2KiB --partitions 10
        # The incumbent first: its figure stands even where cuzk's run below ends early
        # (INCUMBENT_AFTER=1 runs it after cuzk's, for a session short of device time).
        incumbent() {
          if [[ -x $SUPRA && ${INCUMBENT:-1} = 1 ]]; then
            stamp "the incumbent on the same WindowPoSt partition (${INCUMBENT_PROOFS:-4} proofs, the first loading its parameters)"
            FIL_PROOFS_PARAMETER_CACHE=$P $SUPRA --post "$W/window" -c ${INCUMBENT_PROOFS:-4} --label fp-supraseal \
              > "$W/fp-window.out" 2> "$W/fp-window.log" &
            pid=$! t0=$SECONDS peak=0
            while kill -0 $pid 2>/dev/null; do
              rss=$(( $(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0) * 1024 ))
              (( rss > peak )) && peak=$rss
              if (( rss > 110 << 30 )); then kill -9 $pid; echo "incumbent killed with $((rss >> 30)) GiB resident"; break; fi
              sleep 1
            done
            wait $pid; echo "incumbent: exit $?, $((SECONDS - t0)) s, peak RSS seen $((peak >> 30)) GiB"
            tail -3 "$W/fp-window.log"; cat "$W/fp-window.out"
          fi
        }
        [[ ${INCUMBENT_AFTER:-0} = 1 ]] || incumbent
        stamp "WindowPoSt alone, then beside a 2KiB 10-partition stream"
        s=$(smi window)
        # A deadline (WINDOW_DEADLINE, default 900 s): a stalled run ends with its logs kept.
        timed window timeout --kill-after=30s ${WINDOW_DEADLINE:-900} $BIN --params-dir "$P" bench batch --c1 "$P/cuzk-fixtures/2KiB-p10.c1.json" --partitions 10 \
          -c ${STREAM_2K:-2000} -j 4 --memory-budget-gib 100 --post "$W/window" --post-count ${WINDOW_COUNT:-5} --post-alone 3 --post-ends-stream \
          --json "$W/window.json" --timeline "$W/window.timeline" --svg "$W/window.svg"
        kill $s; grep -vE '^\s*$' "$W/window.out" | grep -vE '^ +[0-9]+ +[0-9.]+ ' | tail -24
        [[ ${INCUMBENT_AFTER:-0} = 1 ]] && incumbent
        ;;
      snap)
        # SnapDeals through the engine at SIZE: the fixture (no sector data), the update's
        # random set and recording, the stream (each proof verified by filecoin-proofs), then
        # the incumbent (filecoin-proofs + supraseal) over the same fixture.
        SIZE=${SIZE:-32GiB}; P=$W/p-snap; mkdir -p "$P"; export CUZK_ALLOW_RANDOM_PARAMS=1
        timed fixture-snap $BIN fixture --kind snap --sector-size $SIZE --sector-id 1 --miner-id 1000 -o "$W/snap"
        cat "$W/fixture-snap.log"
        stamp "$SIZE update parameters"
        timed gen-snap $BIN --params-dir "$P" params gen --kind snap --sector-size $SIZE $(rec_opt "$P"); head -12 "$W/gen-snap.out"
        stamp "the SnapDeals stream"
        s=$(smi snap)
        timed snap-stream $BIN --params-dir "$P" bench snap --snap "$W/snap" -c ${SNAP_COUNT:-4} -j ${SNAP_J:-2} --json "$W/snap.json"
        kill $s; cat "$W/snap-stream.out"
        if [[ -x $SUPRA && ${SNAP_INCUMBENT:-2} != 0 ]]; then
          stamp "the incumbent on the same fixture"
          FIL_PROOFS_PARAMETER_CACHE=$P timed snap-incumbent $SUPRA --snap "$W/snap" -c ${SNAP_INCUMBENT:-2} --label fp-supraseal
          tail -3 "$W/snap-incumbent.log"; cat "$W/snap-incumbent.out"
        fi ;;
      64)
        rm -rf "$W/p32"; P=$W/p64; mkdir -p "$P"
        stamp "64GiB recording, synthetic C1, vanilla verification"
        timed fixture-64 $BIN fixture --sector-size 64GiB --sector-id 1 --miner-id 1000 -o "$P/c1-64GiB.json"; cat "$W/fixture-64.log"
        stamp "64GiB parameters and recording"
        timed gen-64 $BIN --params-dir "$P" params gen --sector-size 64GiB $(rec_opt "$P"); head -40 "$W/gen-64.out"
        stamp "one proof (10 partitions synthesized and proved)"
        s=$(smi bench-64)
        timed bench-64 $BIN --params-dir "$P" bench batch --c1 "$P/c1-64GiB.json" -c 1 -j 1 --memory-budget-gib 112 \
          --svg "$W/bench-64.svg" --json "$W/bench-64.json" --timeline "$W/bench-64.timeline"
        kill $s; grep -vE '^\s*$' "$W/bench-64.out" | tail -30 ;;
    esac
    stamp "END" ;;
  *) echo "usage: $0 check | start 32|64|small|native|both|msm|fresh|post|post-window|snap | poll [SECS]" >&2; exit 2 ;;
esac
