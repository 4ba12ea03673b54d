#!/usr/bin/env bash
# Installs nvcc 13.0 (matching the H200 hosts' CUDA 13.0 driver) from PyPI wheels into a
# virtual environment, without root, and prints the exports a build needs.
# Usage: scripts/install-nvcc.sh [DIR]   (default: $CUZK_CUDA_VENV or ~/.cache/cuzk/cuda-venv)
#        eval "$(scripts/install-nvcc.sh --env)"   installs if needed, then exports.
set -euo pipefail
emit_env=0
if [[ "${1:-}" == "--env" ]]; then emit_env=1; shift; fi
DIR=${1:-${CUZK_CUDA_VENV:-$HOME/.cache/cuzk/cuda-venv}}
PY=${PYTHON:-python3}
if [[ ! -x "$DIR/bin/python" ]]; then
  "$PY" -m venv "$DIR" >&2
fi
CU=$("$DIR/bin/python" -c 'import nvidia,os;print(os.path.join(os.path.dirname(nvidia.__path__[0]),"nvidia","cu13"))' 2>/dev/null || true)
if [[ -z "$CU" || ! -x "$CU/bin/nvcc" ]]; then
  "$DIR/bin/pip" install -q --disable-pip-version-check \
    nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 \
    nvidia-cuda-cccl==13.0.85 nvidia-nvvm==13.0.88 >&2
  CU=$("$DIR/bin/python" -c 'import nvidia,os;print(os.path.join(os.path.dirname(nvidia.__path__[0]),"nvidia","cu13"))')
fi
# nvcc.profile looks for lib64; the wheels ship lib.
[[ -e "$CU/lib64" ]] || ln -sfn lib "$CU/lib64"
"$CU/bin/nvcc" --version >&2
if [[ $emit_env == 1 ]]; then
  echo "export CUDA_HOME='$CU' PATH='$CU/bin':\"\$PATH\""
else
  echo "export CUDA_HOME='$CU' PATH='$CU/bin':\"\$PATH\"" >&2
fi
