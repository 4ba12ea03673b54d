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

// --- the bucket integration spread over the whole GPU -------------------------------------------
//
// sppark's `integrate` runs one block per window: each of its nt threads walks a chunk of
// i = 2^(wbits-1) / nt buckets serially, leaving res = sum_q (q+1) B_q and acc = sum_q B_q over
// its chunk (q local). At 20-bit windows that is 13 blocks of 4,096 serial additions a thread
// while the other multiprocessors idle. Here each chunk is cut into K = 2^lgk sub-chunks of
// i' = i / K buckets, one block per (window, sub-chunk) (cuzk_integrate_fine), and each chunk's
// K pairs are joined back into sppark's pair (cuzk_integrate_join), which cuzk_msm_windows
// reads as before.
//
// In the top window of lsbits < wbits bits sppark's layout steps the weight every m =
// 2^(wbits - lsbits) buckets: res = sum_q (q / m + 1) B_q. With sub-chunk k's own (res'_k,
// acc'_k) over its local r (q = k i' + r, and m dividing i'),
//   res = sum_k res'_k + (i' / m) sum_k k acc'_k,   acc = sum_k acc'_k,
// and sum_k k acc'_k is the sum of the suffix sums sum_{k' >= k} acc'_k' for k >= 1. A window
// whose step m exceeds i / K takes fewer sub-chunks (as few as one: sppark's walk).

// The sub-chunks of window y: log2 of their count (at most lgk) and of their length, and log2
// of the window's weight step m.
__device__ __forceinline__ void cuzk_integrate_split(uint32_t y, uint32_t wbits, uint32_t nbits,
                                                     uint32_t lg_nt, uint32_t lgk,
                                                     uint32_t* lg_m, uint32_t* lg_k,
                                                     uint32_t* lg_sub)
{
    const uint32_t lsbits = (y + 1) * wbits > nbits ? nbits - y * wbits : wbits;
    const uint32_t lg_i = wbits - 1 - lg_nt;
    *lg_m = wbits - lsbits;
    *lg_k = lg_i > *lg_m ? min(lgk, lg_i - *lg_m) : 0;
    *lg_sub = lg_i - *lg_k;
}

// Block (k, y): sub-chunk k of every chunk of window y; thread t's pair (res'_k, acc'_k) goes
// to parts[((y << lgk) + k) * 2 nt + 2 t ...]. res' lives in shared memory (sppark's choice
// for points this large).
template<class bucket>
__launch_bounds__(MSM_NTHREADS) __global__
void cuzk_integrate_fine(const typename bucket::mem_t* rows, uint32_t wbits, uint32_t nbits,
                         uint32_t lgk, typename bucket::mem_t* parts)
{
    static_assert(bucket::degree == 1, "one thread per point");
    typedef typename bucket::mem_t bucket_d;
    extern __shared__ uint4 scratch_[];
    bucket_d* scratch = reinterpret_cast<bucket_d*>(scratch_);
    const uint32_t nt = blockDim.x;
    const uint32_t lg_nt = 31 - __clz(nt);
    const uint32_t t = threadIdx.x;
    const uint32_t k = blockIdx.x, y = blockIdx.y;
    uint32_t lg_m, lg_k, lg_sub;
    cuzk_integrate_split(y, wbits, nbits, lg_nt, lgk, &lg_m, &lg_k, &lg_sub);
    if (k >> lg_k)
        return;
    const uint32_t mask = (1u << lg_m) - 1;
    const bucket_d* row = rows + ((size_t)y << (wbits - 1)) + ((size_t)t << (lg_sub + lg_k)) +
                          ((size_t)k << lg_sub);
    uint32_t i = (1u << lg_sub) - 1;
    bucket acc = row[i];
    if (i & mask)
        scratch[t].inf();
    else
        scratch[t] = acc;
    #pragma unroll 1
    while (i--) {
        bucket p = row[i];
        acc.add(p);
        if (!(i & mask)) {
            bucket r = scratch[t];
            r.add(acc);
            scratch[t] = r;
        }
    }
    bucket_d* out = parts + (((size_t)y << lgk) + k) * 2 * nt;
    out[2 * t] = scratch[t];
    out[2 * t + 1] = acc;
}

// Block y: window y's chunks, thread t joining chunk t's pairs into rows[y][2t] (res) and
// rows[y][2t + 1] (acc), sppark's layout.
template<class bucket>
__launch_bounds__(MSM_NTHREADS) __global__
void cuzk_integrate_join(typename bucket::mem_t* rows, uint32_t wbits, uint32_t nbits,
                         uint32_t lgk, const typename bucket::mem_t* parts)
{
    static_assert(bucket::degree == 1, "one thread per point");
    typedef typename bucket::mem_t bucket_d;
    const uint32_t nt = blockDim.x;
    const uint32_t lg_nt = 31 - __clz(nt);
    const uint32_t t = threadIdx.x;
    const uint32_t y = blockIdx.x;
    uint32_t lg_m, lg_k, lg_sub;
    cuzk_integrate_split(y, wbits, nbits, lg_nt, lgk, &lg_m, &lg_k, &lg_sub);
    const bucket_d* in = parts + ((size_t)y << lgk) * 2 * nt + 2 * t;
    bucket run, tw, res;
    run.inf();
    tw.inf();
    res.inf();
    #pragma unroll 1
    for (uint32_t k = (1u << lg_k) - 1; k > 0; k--) {
        bucket a = in[(size_t)k * 2 * nt + 1];
        run.add(a);
        tw.add(run);
        bucket r = in[(size_t)k * 2 * nt];
        res.add(r);
    }
    {
        bucket a = in[1];
        run.add(a);
        bucket r = in[0];
        res.add(r);
    }
    if (lg_k) {
        #pragma unroll 1
        for (uint32_t d = lg_sub - lg_m; d--;) {
            bucket twice = tw;
            tw.add(twice);
        }
        res.add(tw);
    }
    bucket_d* row = rows + ((size_t)y << (wbits - 1));
    row[2 * t] = res;
    row[2 * t + 1] = run;
}

template __global__ void cuzk_integrate_fine<bucket_t>(const bucket_t::mem_t*, uint32_t,
                                                       uint32_t, uint32_t, bucket_t::mem_t*);
template __global__ void cuzk_integrate_join<bucket_t>(bucket_t::mem_t*, uint32_t, uint32_t,
                                                       uint32_t, const bucket_t::mem_t*);

template __global__ void cuzk_msm_windows<bucket_t>(bucket_t::mem_t*, uint32_t, uint32_t,
                                                    bucket_t::mem_t*);
template __global__ void cuzk_msm_windows<bucket2_t>(bucket2_t::mem_t*, uint32_t, uint32_t,
                                                     bucket2_t::mem_t*);
template __global__ void cuzk_sum_into<bucket_t>(bucket_t::mem_t*, uint32_t, bucket_t::mem_t*);
template __global__ void cuzk_sum_into<bucket2_t>(bucket2_t::mem_t*, uint32_t,
                                                  bucket2_t::mem_t*);

#endif  // CUZK_MSM_KERNELS_CUH
