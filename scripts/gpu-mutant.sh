#!/usr/bin/env bash
# Builds .dev/gpu-mutant.test: tests/gpu.rs (the kernels against the CPU) linked with a
# kernels/groth16.cu that has one planted fault, for `scripts/device-bench.sh gpu-mutant`,
# which requires those tests to fail on a GPU. The fault: the MSM's top window is read one bit
# short (an off-by-one in cuzk_msm_windows), so every MSM returns a wrong point. The source is
# restored afterwards, and the next build recompiles the real kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
f=kernels/groth16.cu
cp "$f" "$f.orig"
trap 'mv "$f.orig" "$f"; touch "$f"' EXIT
sed -i 's/? nbits - y \* wbits : wbits;/? nbits - y * wbits - 1 : wbits;/' "$f"
cmp -s "$f" "$f.orig" && { echo "the mutation did not apply" >&2; exit 1; }
eval "$(scripts/install-nvcc.sh --env)"
exe=$(cargo test --release --locked --features cuda --test gpu --no-run --message-format=json 2>/dev/null |
  grep -o '"executable":"[^"]*/deps/gpu-[^"]*"' | cut -d'"' -f4 | tail -1)
mkdir -p .dev
strip -o .dev/gpu-mutant.test "$exe"
echo "built .dev/gpu-mutant.test (mutated: $(grep -c 'nbits - y \* wbits - 1' "$f") line)"
