// The error convention of kernels/cuzk_kernels.h for the entry points: a message into `err`
// (when there is room) and the code to return. Plain CUDA runtime only (probe.cu uses it too).

#ifndef CUZK_ERRORS_CUH
#define CUZK_ERRORS_CUH

#include <cuda_runtime.h>

#include <cstdio>

#include "../cuzk_kernels.h"

// The error convention: a message into err (when there is room), and the code to return.
static inline int cuzk_fail(char* err, size_t len, int code, const char* what)
{
    if (err && len)
        snprintf(err, len, "%s", what);
    return code;
}

static inline int cuzk_fail_cuda(char* err, size_t len, cudaError_t e, const char* what)
{
    if (err && len)
        snprintf(err, len, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    (void)cudaGetLastError();
    return (int)e;
}

#endif  // CUZK_ERRORS_CUH
