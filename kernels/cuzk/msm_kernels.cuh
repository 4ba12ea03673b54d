// The MSM kernels cuzk adds to sppark's Pippenger: the G2 instantiations of sppark's kernels,
// and the windows' last step (bucket integration) on the GPU.

#ifndef CUZK_MSM_KERNELS_CUH
#define CUZK_MSM_KERNELS_CUH

#include "types.cuh"


// sppark's headers instantiate the MSM kernels for G1 (`bucket_t`, types.cuh); the G2 ones
// must be named here, or the device code would lack them.
template __global__
void accumulate<bucket2_t, affine2_d>(bucket2_t::mem_t buckets_[], uint32_t nwins,
                                      uint32_t wbits, affine2_d points_[],
                                      const vec2d_t<uint32_t> digits,
                                      const vec2d_t<uint32_t> histogram, uint32_t sid);
template __global__
void batch_addition<bucket2_t>(bucket2_t::mem_t buckets[], const affine2_d points[],
                               size_t npoints, const uint32_t digits[],
                               const uint32_t& ndigits);
template __global__
void integrate<bucket2_t>(bucket2_t::mem_t buckets_[], uint32_t nwins, uint32_t wbits,
                          uint32_t nbits);

// --- cuzk's MSM driver over sppark's Pippenger kernels ----------------------------------------
//
// sppark's kernels do the digit breakdown and sort, the bucket accumulation and the per-thread
// part of the bucket integration; sppark's own driver (msm_t::invoke) then finishes every
// window on host threads (~40k point operations per MSM) and waits for the GPU after each
// batch. This driver keeps its buffers between calls, queues every batch without a host round
// trip, and finishes the windows on the GPU (cuzk_msm_windows): what comes back is one point
// per window, which the host combines (msm_finish: ~255 doublings).

// A window's sum from sppark's `integrate` output. Row y holds, for each of the block's
// nt = MSM_NTHREADS / degree threads t, a pair (res_t, acc_t) over its chunk of the window's
// buckets. The window's sum is
//   sum_t res_t + 2^d * sum_t t * acc_t          (d = lsbits - 1 - log2 nt), or, for a top
//   sum_t (t / m + 1) * acc_t                     window of lsbits - 1 <= log2 nt bits,
// with m = 2^(log2 nt - (lsbits - 1)): the same sums sppark's host code forms. Each thread
// forms its term by double-and-add, the block adds the terms up in a tree (in place, in the
// row), and the result is added to wins[y] (kept across batches). One block per window.
template<class bucket>
__device__ __forceinline__ void cuzk_bucket_add(bucket& acc, const bucket& p)
{
    if (bucket::degree == 1)
        acc.add(p);
    else
        acc.uadd(p);
}

// Adds the block's logical threads' `sum`s up in a tree through slots[t * stride] (device
// memory, overwritten once every thread has read what it needed of it) and adds the total into
// *out. Called by the whole block.
template<class bucket>
__device__ __forceinline__ void cuzk_block_sum_into(bucket sum, typename bucket::mem_t* slots,
                                                    uint32_t stride,
                                                    typename bucket::mem_t* out)
{
    const uint32_t nt = blockDim.x / bucket::degree;
    const uint32_t t = threadIdx.x / bucket::degree;
    __syncthreads();
    slots[stride * t] = sum;
    __syncthreads();
    for (uint32_t half = nt / 2; half; half /= 2) {
        if (t < half) {
            bucket o = slots[stride * (t + half)];
            cuzk_bucket_add(sum, o);
            slots[stride * t] = sum;
        }
        __syncthreads();
    }
    if (t == 0) {
        bucket w = *out;
        cuzk_bucket_add(w, sum);
        *out = w;
    }
}

template<class bucket>
__launch_bounds__(MSM_NTHREADS) __global__
void cuzk_msm_windows(typename bucket::mem_t* rows, uint32_t wbits, uint32_t nbits,
                      typename bucket::mem_t* wins)
{
    const uint32_t degree = bucket::degree;
    const uint32_t nt = blockDim.x / degree;
    const uint32_t lg_nt = 31 - __clz(nt);
    const uint32_t t = threadIdx.x / degree;
    const uint32_t y = blockIdx.x;
    typename bucket::mem_t* row = rows + ((size_t)y << (wbits - 1));
    const uint32_t lsbits = (y + 1) * wbits > nbits ? nbits - y * wbits : wbits;

    bucket acc = row[2 * t + 1];
    uint32_t c, dbl = 0;
    bool with_res = false;
    if (lsbits - 1 <= lg_nt) {
        c = (t >> (lg_nt - (lsbits - 1))) + 1;
    } else {
        c = t;
        dbl = lsbits - 1 - lg_nt;
        with_res = true;
    }
    bucket sum;
    sum.inf();
    if (c) {
        sum = acc;
        for (int b = 30 - __clz(c); b >= 0; b--) {
            bucket twice = sum;
            cuzk_bucket_add(sum, twice);
            if ((c >> b) & 1)
                cuzk_bucket_add(sum, acc);
        }
        for (uint32_t k = 0; k < dbl; k++) {
            bucket twice = sum;
            cuzk_bucket_add(sum, twice);
        }
    }
    if (with_res) {
        bucket res = row[2 * t];
        cuzk_bucket_add(sum, res);
    }
    cuzk_block_sum_into(sum, row, 2, wins + y);
}

// *out += the sum of parts[0..n) (n >= the block's logical threads). One block.
template<class bucket>
__launch_bounds__(256) __global__
void cuzk_sum_into(typename bucket::mem_t* parts, uint32_t n, typename bucket::mem_t* out)
{
    const uint32_t degree = bucket::degree;
    const uint32_t nt = blockDim.x / degree;
    const uint32_t t = threadIdx.x / degree;
    bucket sum;
    sum.inf();
    for (uint32_t i = t; i < n; i += nt) {
        bucket p = parts[i];
        cuzk_bucket_add(sum, p);
    }
    cuzk_block_sum_into(sum, parts, 1, out);
}

template __global__ void cuzk_msm_windows<bucket_t>(bucket_t::mem_t*, uint32_t, uint32_t,
                                                    bucket_t::mem_t*);
template __global__ void cuzk_msm_windows<bucket2_t>(bucket2_t::mem_t*, uint32_t, uint32_t,
                                                     bucket2_t::mem_t*);
template __global__ void cuzk_sum_into<bucket_t>(bucket_t::mem_t*, uint32_t, bucket_t::mem_t*);
template __global__ void cuzk_sum_into<bucket2_t>(bucket2_t::mem_t*, uint32_t,
                                                  bucket2_t::mem_t*);

#endif  // CUZK_MSM_KERNELS_CUH
