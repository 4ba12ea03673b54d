#!/usr/bin/env bash
# Builds the incumbent for benchmarks: bench/fp-baseline (filecoin-proofs' seal_commit_phase2)
# with `cuda-supraseal` and with `cuda`, into target/fp-baseline/{supraseal,ec-gpu-gen}/.
# filecoin-proofs' GPU builds link libcuda.so.1 at load time; where no driver is installed (a
# build machine) a link stub is generated here, and the real driver is used at run time.
# Usage: scripts/build-baseline.sh [cuda-supraseal|cuda ...]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
eval "$(scripts/install-nvcc.sh --env)"
export CARGO_TARGET_DIR=$ROOT/target/fp-baseline
STUB=$CARGO_TARGET_DIR/cuda-stub
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1'; then
  mkdir -p "$STUB/lib64"
  # Every CUDA driver entry point the GPU crates reference; each stub returns
  # CUDA_ERROR_NO_DEVICE (100).
  syms="cuInit cuDriverGetVersion cuDeviceGet cuDeviceGetCount cuDeviceGetName cuDeviceGetUuid
    cuDeviceGetUuid_v2 cuDeviceTotalMem_v2 cuDeviceGetAttribute cuDeviceGetProperties
    cuDeviceComputeCapability cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRelease
    cuDevicePrimaryCtxRelease_v2 cuDevicePrimaryCtxReset cuDevicePrimaryCtxReset_v2
    cuDevicePrimaryCtxSetFlags cuDevicePrimaryCtxSetFlags_v2 cuDevicePrimaryCtxGetState
    cuDeviceGetPCIBusId cuCtxCreate_v2 cuCtxDestroy_v2 cuCtxPushCurrent_v2 cuCtxPopCurrent_v2
    cuCtxSetCurrent cuCtxGetCurrent cuCtxGetDevice cuCtxSynchronize cuCtxGetApiVersion
    cuCtxGetCacheConfig cuCtxSetCacheConfig cuCtxGetLimit cuCtxSetLimit cuCtxGetSharedMemConfig
    cuCtxSetSharedMemConfig cuCtxGetStreamPriorityRange cuCtxGetFlags cuModuleLoad
    cuModuleLoadData cuModuleLoadDataEx cuModuleLoadFatBinary cuModuleUnload cuModuleGetFunction
    cuModuleGetGlobal_v2 cuMemAlloc_v2 cuMemFree_v2 cuMemAllocHost_v2 cuMemFreeHost
    cuMemHostAlloc cuMemHostRegister_v2 cuMemHostUnregister cuMemcpyHtoD_v2 cuMemcpyDtoH_v2
    cuMemcpyDtoD_v2 cuMemcpyHtoDAsync_v2 cuMemcpyDtoHAsync_v2 cuMemcpyDtoDAsync_v2 cuMemsetD8_v2
    cuMemsetD32_v2 cuMemsetD8Async cuMemsetD32Async cuMemGetInfo_v2 cuMemAllocManaged
    cuMemAllocPitch_v2 cuMemcpy2D_v2 cuLaunchKernel cuStreamCreate cuStreamCreateWithPriority
    cuStreamDestroy_v2 cuStreamSynchronize cuStreamQuery cuStreamWaitEvent cuStreamAddCallback
    cuStreamGetPriority cuStreamGetFlags cuEventCreate cuEventDestroy_v2 cuEventRecord
    cuEventSynchronize cuEventQuery cuEventElapsedTime cuFuncGetAttribute cuFuncSetCacheConfig
    cuFuncSetSharedMemConfig cuFuncSetAttribute cuGetErrorString cuGetErrorName
    cuPointerGetAttribute cuOccupancyMaxActiveBlocksPerMultiprocessor cuProfilerStart
    cuProfilerStop cuLinkCreate_v2 cuLinkAddData_v2 cuLinkComplete cuLinkDestroy"
  extra=$(for r in "$CARGO_TARGET_DIR"/release/deps/*.rlib; do nm -u "$r" 2>/dev/null; done \
          | awk '{print $2}' | grep -E '^cu[A-Z]' || true)
  { echo '/* generated link stub: no CUDA driver on this machine */';
    for s in $(printf '%s\n' $syms $extra | sort -u); do echo "int $s(void) { return 100; }"; done
  } > "$STUB/stub.c"
  cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$STUB/lib64/libcuda.so.1" "$STUB/stub.c"
  ln -sfn libcuda.so.1 "$STUB/lib64/libcuda.so"
  export CUDA_LIBRARY_PATH=$STUB LIBRARY_PATH=$STUB/lib64${LIBRARY_PATH:+:$LIBRARY_PATH}
  export LD_LIBRARY_PATH=$STUB/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# ec-gpu-gen's kernels: machine code for the H100/H200, PTX for newer chips.
export EC_GPU_CUDA_NVCC_ARGS="--fatbin --gpu-architecture=sm_90 --generate-code=arch=compute_90,code=sm_90 --generate-code=arch=compute_90,code=compute_90"
cp Cargo.lock bench/fp-baseline/Cargo.lock
for feat in "${@:-cuda-supraseal cuda}"; do
  for f in $feat; do
    (cd bench/fp-baseline && cargo build --release --features "$f")
    name=$([[ $f == cuda ]] && echo ec-gpu-gen || echo supraseal)
    mkdir -p "$CARGO_TARGET_DIR/$name"
    cp "$CARGO_TARGET_DIR/release/fp-baseline" "$CARGO_TARGET_DIR/$name/fp-baseline"
    echo "built $CARGO_TARGET_DIR/$name/fp-baseline"
  done
done
