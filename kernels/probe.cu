// Device discovery and a launch check, linked against the static CUDA runtime so that the
// library loads on machines without the NVIDIA driver (every call then reports an error and the
// engine proves on the CPU). Prototypes, structs and the error convention: cuzk_kernels.h.

#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "cuzk/errors.cuh"

#ifndef CUZK_CUDA_ARCHS
#define CUZK_CUDA_ARCHS "unknown"
#endif


// Fills x[i] = i * k + 7 for i < n.
__global__ void cuzk_probe_kernel(unsigned int* x, unsigned int n, unsigned int k) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = i * k + 7u;
}

extern "C" {

const char* cuzk_cuda_archs(void) { return CUZK_CUDA_ARCHS; }

int cuzk_cuda_probe(int* count, int* driver_version, char* err, size_t errlen) {
    *count = 0;
    *driver_version = 0;
    cudaError_t e = cudaDriverGetVersion(driver_version);
    if (e != cudaSuccess) { return cuzk_fail_cuda(err, errlen, e, "cudaDriverGetVersion"); }
    if (*driver_version == 0)
        return cuzk_fail_cuda(err, errlen, cudaErrorInsufficientDriver, "no NVIDIA driver");
    e = cudaGetDeviceCount(count);
    if (e != cudaSuccess) { *count = 0; return cuzk_fail_cuda(err, errlen, e, "cudaGetDeviceCount"); }
    return 0;
}

// Makes host threads that wait for this device block (sleep) instead of spinning: with few
// GPUs and many cores the runtime's default spins, which takes a core from synthesis for the
// whole of every wait. Must run before the device's context is created to take effect there.
int cuzk_cuda_set_blocking_sync(int ordinal, char* err, size_t errlen) {
    int prev = 0;
    cudaGetDevice(&prev);
    cudaError_t e = cudaSetDevice(ordinal);
    if (e != cudaSuccess) { return cuzk_fail_cuda(err, errlen, e, "cudaSetDevice"); }
    e = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
    cudaSetDevice(prev);
    if (e != cudaSuccess) { return cuzk_fail_cuda(err, errlen, e, "cudaSetDeviceFlags"); }
    return 0;
}

int cuzk_cuda_device_info(int ordinal, struct cuzk_cuda_device* out, char* err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    out->ordinal = ordinal;
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, ordinal);
    if (e != cudaSuccess) { return cuzk_fail_cuda(err, errlen, e, "cudaGetDeviceProperties"); }
    out->major = p.major;
    out->minor = p.minor;
    out->multiprocessors = p.multiProcessorCount;
    out->total_mem = p.totalGlobalMem;
    snprintf(out->name, sizeof(out->name), "%s", p.name);
    int prev = 0;
    cudaGetDevice(&prev);
    e = cudaSetDevice(ordinal);
    if (e != cudaSuccess) { return cuzk_fail_cuda(err, errlen, e, "cudaSetDevice"); }
    size_t fr = 0, tot = 0;
    e = cudaMemGetInfo(&fr, &tot);
    cudaSetDevice(prev);
    if (e != cudaSuccess) { return cuzk_fail_cuda(err, errlen, e, "cudaMemGetInfo"); }
    out->free_mem = fr;
    return 0;
}

// Runs a small kernel on the device and checks its output: proves that this binary carries
// machine code (or PTX) the device can run.
int cuzk_cuda_launch_check(int ordinal, char* err, size_t errlen) {
    const unsigned int n = 1u << 16, k = 2654435761u;
    int prev = 0;
    cudaGetDevice(&prev);
    cudaError_t e = cudaSetDevice(ordinal);
    if (e != cudaSuccess) { return cuzk_fail_cuda(err, errlen, e, "cudaSetDevice"); }
    unsigned int* d = nullptr;
    unsigned int* h = (unsigned int*)malloc(n * sizeof(unsigned int));
    int rc = 0;
    if (!h) { if (err && errlen) snprintf(err, errlen, "out of host memory"); rc = CUZK_KERNELS_EHOST; goto out; }
    e = cudaMalloc(&d, n * sizeof(unsigned int));
    if (e != cudaSuccess) { rc = cuzk_fail_cuda(err, errlen, e, "cudaMalloc"); goto out; }
    cuzk_probe_kernel<<<(n + 255) / 256, 256>>>(d, n, k);
    e = cudaGetLastError();
    if (e != cudaSuccess) { rc = cuzk_fail_cuda(err, errlen, e, "launch"); goto out; }
    e = cudaMemcpy(h, d, n * sizeof(unsigned int), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { rc = cuzk_fail_cuda(err, errlen, e, "cudaMemcpy"); goto out; }
    for (unsigned int i = 0; i < n; i++) {
        if (h[i] != i * k + 7u) {
            if (err && errlen) snprintf(err, errlen, "probe kernel wrote %u at %u, expected %u", h[i], i, i * k + 7u);
            rc = CUZK_KERNELS_EWRONG;
            goto out;
        }
    }
out:
    if (d) cudaFree(d);
    free(h);
    cudaSetDevice(prev);
    return rc;
}

}  // extern "C"
