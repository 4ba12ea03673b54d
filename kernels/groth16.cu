// cuzk's own Groth16 prover: one partition's h polynomial and all five multi-scalar
// multiplications on one GPU, from parameters resident in that GPU's memory.
//
// Field and curve arithmetic, the NTT and the Pippenger MSM come from sppark's headers
// (BLS12-381 Fp, Fp2, Fr; jacobian/xyzz points); the orchestration, the density compaction,
// the h combination, the scalar classification, the sparse product and its check are ours. The
// host's part of a partition is the upload of its evaluations and assignment
// (cuzk_gpu_upload), or of its compact witness only where the circuit's recording is on the
// GPU (cuzk_gpu_upload_witness); the final combination with the verifying key and r, s (a few
// scalar multiplications) happens in Rust.
//
// Thread-safety: calls on different GPUs may run at once; calls on one GPU must not overlap
// (they share sppark's three streams of that GPU). The Rust wrapper holds a lock per GPU.
// Every entry point catches CUDA errors and C++ exceptions and returns a non-zero code with a
// message in `err`; nothing throws across the boundary.

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef jacobian_t<fp2_t> point2_t;
typedef xyzz_t<fp2_t> bucket2_t;
typedef bucket2_t::affine_t affine2_t;
typedef fr_t scalar_t;

// sppark's one non-template kernel, `sort`, would clash with any other sppark-based code linked
// into the same program (filecoin-ffi's supraseal in a Curio binary that also links cuzk): ours
// gets another name. Everything the header pulls in is included first, so that the rename
// reaches only sppark's kernel.
#include <cassert>
#include <cooperative_groups.h>
#include <cuda.h>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <util/exception.cuh>
#include <util/gpu_t.cuh>
#include <util/rusterror.h>
#include <util/slice_t.hpp>
#include <util/vec2d_t.hpp>
#include <ff/shfl.cuh>
#define sort cuzk_msm_sort
#include <msm/pippenger.cuh>
#undef sort
#include <ntt/ntt.cuh>

typedef affine_t::mem_t affine_d;
typedef affine2_t::mem_t affine2_d;

// sppark's headers instantiate the MSM kernels for G1 (the `bucket_t` above); the G2 ones
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

// The h chain's element-wise step: a = (a * b - c) * z, in place.
__launch_bounds__(1024) __global__
void cuzk_h_combine(fr_t* a, const fr_t* b, const fr_t* c, fr_t z, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        fr_t t = a[i] * b[i];
        t -= c[i];
        a[i] = t * z;
    }
}

// Keeps the elements of `in` whose bit is set in `bits` (one bit per element, 64 per word),
// in order: out[prefix[w] + rank of the bit within word w] = in[i]. `prefix[w]` counts the
// set bits of the words before w.
__launch_bounds__(1024) __global__
void cuzk_compact(fr_t* out, const fr_t* in, size_t n, const uint64_t* bits,
                  const uint32_t* prefix)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        uint64_t w = bits[i / 64];
        uint32_t b = i % 64;
        if ((w >> b) & 1) {
            uint64_t below = b ? (w & ((~(uint64_t)0) >> (64 - b))) : 0;
            out[prefix[i / 64] + __popcll(below)] = in[i];
        }
    }
}

// Splits n scalars into the indices of those equal to one and of the others that are not zero
// (zeros drop out of an MSM), in one list of n entries: the ones from the front, the others
// from the back (idx[n-1], idx[n-2], ...). Warp-aggregated appends: the lists come out in no
// fixed order, which sums do not mind. counts[0] (ones) and counts[1] (others) must be zero on
// entry.
__launch_bounds__(1024) __global__
void cuzk_classify(const fr_t* s, uint32_t n, uint32_t* idx, uint32_t* counts, fr_t one_mont)
{
    const uint32_t lane = threadIdx.x % 32;
    const uint32_t below = (1u << lane) - 1;
    for (uint32_t i0 = blockIdx.x * blockDim.x; i0 < n; i0 += blockDim.x * gridDim.x) {
        uint32_t i = i0 + threadIdx.x;
        bool one = false, other = false;
        if (i < n) {
            // Compared limb by limb with one in Montgomery form (passed in: sppark's is_one
            // trips an internal error of nvcc 13.0 here).
            const uint32_t* v = reinterpret_cast<const uint32_t*>(&s[i]);
            const uint32_t* o = reinterpret_cast<const uint32_t*>(&one_mont);
            uint32_t d1 = 0, z = 0;
            for (int k = 0; k < 8; k++) {
                d1 |= v[k] ^ o[k];
                z |= v[k];
            }
            one = d1 == 0;
            other = !one && z != 0;
        }
        uint32_t m1 = __ballot_sync(0xffffffff, one);
        uint32_t m2 = __ballot_sync(0xffffffff, other);
        uint32_t b1 = 0, b2 = 0;
        if (lane == 0) {
            if (m1) b1 = atomicAdd(&counts[0], __popc(m1));
            if (m2) b2 = atomicAdd(&counts[1], __popc(m2));
        }
        b1 = __shfl_sync(0xffffffff, b1, 0);
        b2 = __shfl_sync(0xffffffff, b2, 0);
        if (one) idx[b1 + __popc(m1 & below)] = i;
        if (other) idx[n - 1 - (b2 + __popc(m2 & below))] = i;
    }
}

// out[j] = in[idx[j]] for elements of `words` 16-byte words (points, scalars).
__launch_bounds__(1024) __global__
void cuzk_gather(uint4* out, const uint4* in, const uint32_t* idx, uint32_t n, uint32_t words)
{
    size_t total = (size_t)n * words;
    for (size_t k = threadIdx.x + (size_t)blockIdx.x * blockDim.x; k < total;
         k += (size_t)blockDim.x * gridDim.x) {
        size_t j = k / words, w = k % words;
        out[k] = in[(size_t)idx[j] * words + w];
    }
}

// --- The sparse product on the GPU (pre-compiled circuits) ---------------------------------
//
// A circuit's recording (three CSR matrices: u32 row starts, u32 columns with inputs marked by
// the top bit, u16 coefficient codes into a dictionary whose codes 0 and 1 are one and minus
// one) stays on the GPU beside the parameters. Per partition only the compact witness comes
// over: the inputs, two class bits per aux value (0 zero, 1 one, 2 other) and the values of
// the others. The GPU rebuilds the dense aux vector, computes a = A·w, b = B·w, c = C·w and
// checks a·b = c on every row.

#define CUZK_INPUT_BIT 0x80000000u

__device__ __forceinline__ uint32_t cuzk_class(const uint64_t* classes, uint32_t j)
{
    return (uint32_t)(classes[j / 32] >> (2 * (j % 32))) & 3;
}

// aux[j] = 1 where the class says one, else 0 (the others are scattered in afterwards).
__launch_bounds__(1024) __global__
void cuzk_expand(fr_t* aux, const uint64_t* classes, size_t n, fr_t one, fr_t zero)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        aux[i] = cuzk_class(classes, (uint32_t)i) == 1 ? one : zero;
}

__launch_bounds__(1024) __global__
void cuzk_scatter(fr_t* aux, const uint32_t* idx, const fr_t* val, size_t n)
{
    for (size_t k = threadIdx.x + (size_t)blockIdx.x * blockDim.x; k < n;
         k += (size_t)blockDim.x * gridDim.x)
        aux[idx[k]] = val[k];
}

// out[r] = (row r of the matrix) · w, one thread per row; terms on variables that are zero
// are skipped without reading their value.
__launch_bounds__(256) __global__
void cuzk_product(fr_t* out, const uint32_t* row_start, const uint32_t* cols,
                  const uint16_t* coeffs, size_t rows, const fr_t* dict, const fr_t* inp,
                  const fr_t* aux, const uint64_t* classes, fr_t one, fr_t zero)
{
    for (size_t r = threadIdx.x + (size_t)blockIdx.x * blockDim.x; r < rows;
         r += (size_t)blockDim.x * gridDim.x) {
        fr_t acc = zero;
        for (uint32_t t = row_start[r], end = row_start[r + 1]; t < end; t++) {
            uint32_t col = cols[t];
            uint32_t k = coeffs[t];
            fr_t v;
            if (col & CUZK_INPUT_BIT) {
                v = inp[col & ~CUZK_INPUT_BIT];
            } else {
                uint32_t c = cuzk_class(classes, col);
                if (c == 0)
                    continue;
                v = c == 1 ? one : aux[col];
            }
            if (k == 0)
                acc += v;
            else if (k == 1)
                acc -= v;
            else
                acc += v * dict[k];
        }
        out[r] = acc;
    }
}

// The first row where a·b != c, into *bad (which holds the row count on entry).
__launch_bounds__(256) __global__
void cuzk_check(const fr_t* a, const fr_t* b, const fr_t* c, size_t rows,
                unsigned long long* bad)
{
    for (size_t r = threadIdx.x + (size_t)blockIdx.x * blockDim.x; r < rows;
         r += (size_t)blockDim.x * gridDim.x) {
        fr_t ab = a[r] * b[r];
        const uint32_t* x = reinterpret_cast<const uint32_t*>(&ab);
        const uint32_t* y = reinterpret_cast<const uint32_t*>(&c[r]);
        uint32_t d = 0;
        for (int k = 0; k < (int)(sizeof(fr_t) / 4); k++)
            d |= x[k] ^ y[k];
        if (d)
            atomicMin(bad, (unsigned long long)r);
    }
}

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

// Window sizes and batches of an MSM of n points (sppark's choice for its driver).
struct msm_shape_t {
    size_t n = 0, stride = 0;
    uint32_t wbits = 10, nwins = 0, batches = 1;
};

static uint32_t lg2_floor(size_t n)
{
    uint32_t r = 0;
    while (n >>= 1) r++;
    return r;
}

// Windows never exceed this many (wbits >= 10 for a 255-bit scalar).
#define CUZK_MAX_WINS 26
// Partial sums left by one batch_addition launch (a grid of one block per SM).
static size_t msm_parts(int sms) { return (size_t)sms * BATCH_ADD_BLOCK_SIZE / WARP_SZ; }

// Tuning knobs for MSMs of at least 2^16 points (the H MSM): CUZK_MSM_WBITS (10-18) and
// CUZK_MSM_BATCHES (1-64) replace the window size and the batch count chosen below.
static uint32_t msm_knob(const char* name, uint32_t lo, uint32_t hi)
{
    const char* v = getenv(name);
    if (!v || !*v)
        return 0;
    long x = strtol(v, nullptr, 10);
    return x >= (long)lo && x <= (long)hi ? (uint32_t)x : 0;
}

static msm_shape_t msm_shape(size_t n, size_t max_stride = SIZE_MAX)
{
    static const uint32_t knob_wbits = msm_knob("CUZK_MSM_WBITS", 10, 18);
    static const uint32_t knob_batches = msm_knob("CUZK_MSM_BATCHES", 1, 64);
    const bool large = n >= ((size_t)1 << 16);
    msm_shape_t s;
    s.n = n;
    // Measured on the H200 at 2^21 points (BENCHMARKS.md, stage 5): one batch beats sppark's
    // four (26.4 against 31.3 ms at 13-bit windows; its batches bound its host-side work, which
    // this driver does not have), and 15-bit windows beat 13, 14 and 16 (23.6 ms). So: windows
    // of log2(1.5 n) - 6 bits within 10..16, and batches only to keep a batch's digits within
    // 2^24 points (~1.3 GB of digits and sort space).
    const uint32_t lg = lg2_floor(n + n / 2);  // 21 for the 2^21 - 1 points of H at 2^21
    s.wbits = lg < 16 ? 10 : std::min<uint32_t>(lg - 6, 16);
    if (large && knob_wbits)
        s.wbits = knob_wbits;
    const uint32_t nbits = fr_t::bit_length();
    s.nwins = (nbits - 1) / s.wbits + 1;
    s.batches = (uint32_t)std::max<size_t>(1, (n + ((size_t)1 << 24) - 1) >> 24);
    if (large && knob_batches)
        s.batches = knob_batches;
    if (max_stride < SIZE_MAX)
        s.batches = std::max<uint32_t>(s.batches, (uint32_t)((n + max_stride - 1) / max_stride));
    size_t stride = (n + s.batches - 1) / s.batches;
    s.stride = std::max<size_t>(WARP_SZ, (stride + WARP_SZ - 1) & ~(size_t)(WARP_SZ - 1));
    return s;
}

// Grows a device array to hold n elements (with a quarter to spare unless `exact`); cudaFree
// waits for the GPU.
template<class T>
static void grow(T*& p, size_t& cap, size_t n, bool exact = false)
{
    if (n <= cap)
        return;
    cudaFree(p);
    p = nullptr;
    cap = 0;
    size_t want = exact ? n : n + n / 4;
    CUDA_OK(cudaMalloc((void**)&p, want * sizeof(T)));
    cap = want;
}

template<class T> struct nodeduce { typedef T type; };

template<class... P>
static void launch_coop(cudaStream_t st, void (*f)(P...), dim3 grid, dim3 block, size_t shared,
                        typename nodeduce<P>::type... args)
{
    void* va[sizeof...(P)] = {&args...};
    CUDA_OK(cudaLaunchCooperativeKernel((const void*)f, grid, block, va, shared, st));
}

// Device buffers of the driver for one curve: the windows' buckets followed by the partial
// sums of a batch addition, the digits' histogram, and the digits with the sort's temporaries.
// They grow on demand and are kept; one MSM at a time uses them.
template<class bucket>
struct msm_ws_t {
    typedef typename bucket::mem_t bucket_d;
    bucket_d* buckets = nullptr;
    uint32_t* hist = nullptr;
    uint8_t* temp = nullptr;
    bucket_d* parts = nullptr;  // the partial sums of a batch addition
    size_t n_buckets = 0, n_hist = 0, temp_bytes = 0, n_parts = 0;

    msm_ws_t() = default;
    msm_ws_t(const msm_ws_t&) = delete;
    msm_ws_t& operator=(const msm_ws_t&) = delete;
    ~msm_ws_t() { release(); }
    void release()
    {
        cudaFree(buckets); cudaFree(hist); cudaFree(temp); cudaFree(parts);
        buckets = nullptr; hist = nullptr; temp = nullptr; parts = nullptr;
        n_buckets = n_hist = temp_bytes = n_parts = 0;
    }
    size_t bytes() const
    {
        return (n_buckets + std::max<size_t>(n_parts, 256)) * sizeof(bucket_d) +
               n_hist * sizeof(uint32_t) + temp_bytes;
    }
    // The partial sums' buffer (a batch addition over one block per SM leaves n_parts).
    void init(int sms)
    {
        n_parts = msm_parts(sms);
        CUDA_OK(cudaMalloc((void**)&parts, std::max<size_t>(n_parts, 256) * sizeof(bucket_d)));
    }
    static size_t rows(const msm_shape_t& s) { return (size_t)s.nwins << (s.wbits - 1); }
    static size_t temps(const msm_shape_t& s)
    {
        return s.stride * 2 * sizeof(uint2) + (size_t)s.nwins * s.stride * sizeof(uint32_t);
    }
    // Room for an MSM of shape s. Growing frees the old buffers (cudaFree waits for the GPU).
    void reserve(const msm_shape_t& s)
    {
        grow(buckets, n_buckets, rows(s), true);
        grow(hist, n_hist, rows(s), true);
        grow(temp, temp_bytes, temps(s), true);
    }
};

// Bases that stay in pinned host memory (the streamed parameter mode), copied batch by batch
// into one of two device buffers on a copy stream of their own, so that a batch's copy
// overlaps the previous batch's kernels.
template<class affine_dev>
struct base_stream_t {
    affine_dev* buf[2] = {nullptr, nullptr};
    size_t cap = 0;  // points per buffer: the MSM's batches are at most this long
    cudaStream_t copy = nullptr;
    cudaEvent_t copied[2] = {nullptr, nullptr}, freed[2] = {nullptr, nullptr};

    explicit base_stream_t(size_t points) : cap(points)
    {
        for (int k = 0; k < 2; k++) {
            CUDA_OK(cudaMalloc((void**)&buf[k], cap * sizeof(affine_dev)));
            CUDA_OK(cudaEventCreateWithFlags(&copied[k], cudaEventDisableTiming));
            CUDA_OK(cudaEventCreateWithFlags(&freed[k], cudaEventDisableTiming));
        }
        CUDA_OK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
    }
    ~base_stream_t()
    {
        if (copy) cudaStreamSynchronize(copy);
        for (int k = 0; k < 2; k++) {
            cudaFree(buf[k]);
            if (copied[k]) cudaEventDestroy(copied[k]);
            if (freed[k]) cudaEventDestroy(freed[k]);
        }
        if (copy) cudaStreamDestroy(copy);
    }
    base_stream_t(const base_stream_t&) = delete;
    base_stream_t& operator=(const base_stream_t&) = delete;
    size_t bytes() const { return 2 * cap * sizeof(affine_dev); }
};

// Two events the driver orders its streams with (no timing).
struct msm_events_t {
    cudaEvent_t a = nullptr, b = nullptr;
    msm_events_t()
    {
        CUDA_OK(cudaEventCreateWithFlags(&a, cudaEventDisableTiming));
        CUDA_OK(cudaEventCreateWithFlags(&b, cudaEventDisableTiming));
    }
    ~msm_events_t() { if (a) cudaEventDestroy(a); if (b) cudaEventDestroy(b); }
    msm_events_t(const msm_events_t&) = delete;
    msm_events_t& operator=(const msm_events_t&) = delete;
};

// The signed digits of `num` scalars (Montgomery form), sorted by bucket per window, on `sd`.
static void msm_digits(const gpu_t& gpu, cudaStream_t sd, const msm_shape_t& s,
                       const fr_t* scalars, size_t num, vec2d_t<uint32_t> digits,
                       vec2d_t<uint2> temps, vec2d_t<uint32_t> hist)
{
    // sppark's sizing: a power of two near a third of the SMs sorts fastest.
    uint32_t grid = gpu.sm_count() / 3;
    while (grid & (grid - 1))
        grid -= grid & (0 - grid);
    grid = std::max<uint32_t>(grid, 1);
    breakdown<<<2 * grid, 1024, sizeof(fr_t) * 1024, sd>>>(digits, scalars, num, s.nwins,
                                                           s.wbits, true);
    CUDA_OK(cudaGetLastError());
    const size_t shared = sizeof(uint32_t) << DIGIT_BITS;
    const uint32_t nbits = fr_t::bit_length();
    const uint32_t top = nbits - s.wbits * (s.nwins - 1);
    uint32_t win = 0;
    for (; win + 1 < s.nwins; win += 2)
        launch_coop(sd, cuzk_msm_sort, dim3(grid, 2), dim3(SORT_BLOCKDIM), shared, digits, num,
                    win, temps, hist, s.wbits - 1, s.wbits - 1,
                    win == s.nwins - 2 ? top - 1 : s.wbits - 1);
    if (win < s.nwins)
        launch_coop(sd, cuzk_msm_sort, dim3(grid, 1), dim3(SORT_BLOCKDIM), shared, digits, num,
                    win, temps, hist, s.wbits - 1, top - 1, 0u);
}

template<class K>
static unsigned max_threads(K* f)
{
    cudaFuncAttributes attr;
    CUDA_OK(cudaFuncGetAttributes(&attr, (const void*)f));
    return attr.maxThreadsPerBlock;
}

// Queues sum(scalars[i] * bases[i], i < n) on stream `st` (the digits on `sd`), leaving one
// point per window in wins[0..nwins) and the window-0 "ones" in wins[nwins]: the result is
// sum_y 2^(y*wbits) wins[y] + wins[nwins] (msm_finish). wins needs CUZK_MAX_WINS + 1 entries;
// it is cleared first. Nothing waits for the GPU here. `sid` tells concurrent MSMs' work
// counters apart (one MSM per sid at a time). With `sb`, `bases` are in pinned host memory and
// each batch's bases are copied into sb's buffers first.
template<class bucket, class affine_dev>
static msm_shape_t msm_enqueue(const gpu_t& gpu, msm_ws_t<bucket>& ws, msm_events_t& ev,
                               const affine_dev* bases, const fr_t* scalars, size_t n,
                               typename bucket::mem_t* wins, cudaStream_t st, cudaStream_t sd,
                               uint32_t sid, base_stream_t<affine_dev>* sb = nullptr)
{
    typedef typename bucket::mem_t bucket_d;
    msm_shape_t s = msm_shape(n, sb ? sb->cap : SIZE_MAX);
    CUDA_OK(cudaMemsetAsync(wins, 0, (s.nwins + 1) * sizeof(bucket_d), st));
    if (n == 0)
        return s;
    ws.reserve(s);
    const uint32_t nbits = fr_t::bit_length();
    const uint32_t row = 1u << (s.wbits - 1);
    vec2d_t<uint2> temps{(uint2*)ws.temp, (unsigned)s.stride};
    vec2d_t<uint32_t> digits{(uint32_t*)(ws.temp + s.stride * 2 * sizeof(uint2)),
                             (unsigned)s.stride};
    vec2d_t<uint32_t> hist{ws.hist, row};
    static const unsigned acc_threads = max_threads(accumulate<bucket, affine_dev>);

    // The digits wait for everything queued on st so far (the scalars, an earlier MSM on ws).
    CUDA_OK(cudaEventRecord(ev.a, st));
    CUDA_OK(cudaStreamWaitEvent(sd, ev.a, 0));
    size_t off = 0, num = std::min(s.stride, n);
    msm_digits(gpu, sd, s, scalars, num, digits, temps, hist);
    CUDA_OK(cudaEventRecord(ev.b, sd));
    for (uint32_t batch = 0;; batch++) {
        const affine_dev* pts = bases + off;
        const int k = batch & 1;
        if (sb) {
            // Into the buffer the batch before last has finished with.
            CUDA_OK(cudaStreamWaitEvent(sb->copy, sb->freed[k], 0));
            CUDA_OK(cudaMemcpyAsync(sb->buf[k], bases + off, num * sizeof(affine_dev),
                                    cudaMemcpyHostToDevice, sb->copy));
            CUDA_OK(cudaEventRecord(sb->copied[k], sb->copy));
            CUDA_OK(cudaStreamWaitEvent(st, sb->copied[k], 0));
            pts = sb->buf[k];
        }
        CUDA_OK(cudaStreamWaitEvent(st, ev.b, 0));
        // The bucket of digit +-1 in window 0: a plain sum (sppark's arrangement).
        batch_addition<bucket><<<gpu.sm_count(), BATCH_ADD_BLOCK_SIZE, 0, st>>>(
            ws.parts, pts, num, digits[0], hist[0][0]);
        CUDA_OK(cudaGetLastError());
        launch_coop(st, accumulate<bucket, affine_dev>, dim3(gpu.sm_count()),
                    dim3(acc_threads), 0, ws.buckets, s.nwins, s.wbits,
                    const_cast<affine_dev*>(pts), digits, hist, sid);
        CUDA_OK(cudaEventRecord(ev.a, st));
        if (sb)
            CUDA_OK(cudaEventRecord(sb->freed[k], st));
        integrate<bucket><<<s.nwins, MSM_NTHREADS, sizeof(bucket) * MSM_NTHREADS / bucket::degree,
                            st>>>(ws.buckets, s.nwins, s.wbits, nbits);
        CUDA_OK(cudaGetLastError());
        cuzk_msm_windows<bucket><<<s.nwins, MSM_NTHREADS, 0, st>>>(ws.buckets, s.wbits, nbits,
                                                                   wins);
        CUDA_OK(cudaGetLastError());
        cuzk_sum_into<bucket><<<1, 256, 0, st>>>(ws.parts, (uint32_t)ws.n_parts, wins + s.nwins);
        CUDA_OK(cudaGetLastError());
        off += num;
        if (off >= n)
            break;
        num = std::min(s.stride, n - off);
        // The next batch's digits once this batch's accumulation has read the current ones.
        CUDA_OK(cudaStreamWaitEvent(sd, ev.a, 0));
        msm_digits(gpu, sd, s, scalars + off, num, digits, temps, hist);
        CUDA_OK(cudaEventRecord(ev.b, sd));
    }
    return s;
}

// Adds the bases listed in idx[0..*d_n) (n of them) into *out (on the device), on st, through
// the partial sums of ws.
template<class bucket, class affine_dev>
static void sum_selected(const gpu_t& gpu, cudaStream_t st, msm_ws_t<bucket>& ws,
                         const affine_dev* bases, const uint32_t* idx, const uint32_t* d_n,
                         uint32_t n, typename bucket::mem_t* out)
{
    if (n == 0)
        return;
    batch_addition<bucket><<<gpu.sm_count(), BATCH_ADD_BLOCK_SIZE, 0, st>>>(ws.parts, bases,
                                                                           (size_t)n, idx, *d_n);
    CUDA_OK(cudaGetLastError());
    cuzk_sum_into<bucket><<<1, 256, 0, st>>>(ws.parts, (uint32_t)ws.n_parts, out);
    CUDA_OK(cudaGetLastError());
}

// One of the L, A, B(G1), B(G2) MSMs into wins: a Pippenger MSM over the others (their bases
// gathered into tb first) plus the sum of the bases whose scalar is one. `list` is the split
// of its n scalars (ones from the front, others from the back), `d_cnt` its two counts on the
// device and `cnt` here, `tail` the others' scalars.
template<class bucket, class affine_dev>
static msm_shape_t split_msm(const gpu_t& gpu, cudaStream_t st, cudaStream_t sd,
                             msm_ws_t<bucket>& ws, msm_events_t& ev, affine_dev* tb,
                             const affine_dev* bases, const uint32_t* list, size_t n,
                             const uint32_t* d_cnt, const uint32_t* cnt, const fr_t* tail,
                             typename bucket::mem_t* wins, uint32_t sid)
{
    const uint32_t n_one = cnt[0], n_oth = cnt[1];
    if (n_oth) {
        cuzk_gather<<<gpu.sm_count() * 2, 1024, 0, st>>>(
            reinterpret_cast<uint4*>(tb), reinterpret_cast<const uint4*>(bases),
            list + n - n_oth, n_oth, sizeof(affine_dev) / 16);
        CUDA_OK(cudaGetLastError());
    }
    msm_shape_t s = msm_enqueue<bucket, affine_dev>(gpu, ws, ev, tb, tail, n_oth, wins, st, sd,
                                                    sid);
    sum_selected<bucket, affine_dev>(gpu, st, ws, bases, list, d_cnt, n_one, wins + s.nwins);
    return s;
}

// The MSM's value from its windows (host copies of wins): Horner over the windows, plus the
// ones.
template<class bucket, class point>
static point msm_finish(const bucket* wins, const msm_shape_t& s)
{
    point out;
    out.inf();
    for (uint32_t y = s.nwins; y--;) {
        out.add(point(wins[y]));
        if (y == 0)
            break;
        for (uint32_t k = 0; k < s.wbits; k++)
            out.dbl();
    }
    out.add(point(wins[s.nwins]));
    return out;
}

// A circuit's parameters for one GPU. Resident: the bases in device memory. Streamed: the bases
// stay in the caller's pinned host memory (cuzk_gpu_pin); h is then the host address, copied in
// batch by batch through `hs`, and l, a, b1, b2 are the device's mapping of the host arrays,
// read over the bus by the kernels that gather and sum them.
struct cuzk_gpu_srs {
    int gpu;  // sppark's index of the device
    bool streamed;
    affine_d* h;
    affine_d* l;
    affine_d* a;
    affine_d* b1;
    affine2_d* b2;
    size_t nh, nl, na, nb;
    size_t bytes;           // device memory held
    struct prove_ws_t* ws;  // the prover's working buffers (calls on one GPU do not overlap)
    base_stream_t<affine_d>* hs;  // streamed: the H bases' device buffers
};

// Batches of the streamed H MSM hold at most this many bases (2 x 400 MB of device buffers).
#define CUZK_STREAM_STRIDE ((size_t)1 << 22)

// One partition's inputs in device memory, with the stream that copies them in: while one
// partition's kernels run, the next one's upload proceeds on its own stage.
struct cuzk_gpu_stage {
    int gpu;
    cudaStream_t stream;
    uint32_t lg_domain;
    size_t n_inp, n_aux, na, nb;  // capacity (the circuit's sizes)
    fr_t* abc;                    // a, b, c: 3 x domain
    fr_t* aux;
    fr_t* inp;
    fr_t* as;                     // A's scalars: inputs, then aux in A's density
    fr_t* bs;                     // B's scalars: inputs in B's density, then aux in its density
    uint64_t* bits;               // the three density bitmaps
    uint32_t* pref;               // and their per-word prefix counts
    size_t words_aux, words_inp;
    uint64_t* classes;            // the compact witness: 2 class bits per aux value
    uint32_t* oth_idx;            // and the others' indices and values (grown on demand)
    fr_t* oth_val;
    size_t oth_cap;
    unsigned long long* bad;      // the product's first unsatisfied row
    // The L (aux), A and B scalars split by value (cuzk_classify): one index list per MSM, in
    // turn (n_aux, na, nb entries), the ones from the front, the others from the back; their
    // counts (ones, others per MSM) on the device and here; the others' scalars gathered (L's,
    // then A's, then B's; grown on demand).
    uint32_t* split_idx;
    uint32_t* split_cnt;
    uint32_t cnt[6];
    fr_t* tail_s;
    size_t tail_cap;
    bool loaded;
    double ms_upload, ms_split;
};

// A circuit's recording on one GPU (see the sparse product above).
struct cuzk_gpu_rec {
    int gpu;
    size_t rows, n_inp, n_aux, n_dict;
    uint32_t* row_start[3];
    uint32_t* cols[3];
    uint16_t* coeffs[3];
    fr_t* dict;
    size_t bytes;
};

// One matrix of a recording as the host holds it: rows + 1 row starts, `terms` columns and
// coefficient codes.
struct cuzk_gpu_matrix {
    const uint32_t* row_start;
    const uint32_t* cols;
    const uint16_t* coeffs;
    size_t terms;
};

// One partition's compact witness: the inputs, the aux values' classes (2 bits each, 32 per
// word, least significant first: 0 zero, 1 one, 2 other), the others' indices and values, and
// the A/B query densities (as for cuzk_gpu_input).
struct cuzk_gpu_witness {
    uint32_t lg_domain;
    const fr_t* inp;
    size_t n_inp;
    const uint64_t* classes;
    size_t n_aux;
    const uint32_t* oth_idx;
    const fr_t* oth_val;
    size_t n_oth;
    const uint64_t* a_aux_density;
    const uint64_t* b_inp_density;
    const uint64_t* b_aux_density;
};

// One partition, as the host holds it. Scalars are BLS12-381 Fr in Montgomery form (blst's
// layout); density bitmaps have one bit per variable, least significant first.
struct cuzk_gpu_input {
    const fr_t* a;
    const fr_t* b;
    const fr_t* c;
    size_t abc_size;
    uint32_t lg_domain;
    const fr_t* inp;
    size_t n_inp;
    const fr_t* aux;
    size_t n_aux;
    const uint64_t* a_aux_density;
    const uint64_t* b_inp_density;
    const uint64_t* b_aux_density;
};

// The five MSM results in affine form (blst's layout: x then y, Montgomery limbs; the point
// at infinity is all zeros) and the time each stage took, in milliseconds.
struct cuzk_gpu_output {
    uint64_t h[12], l[12], a[12], b1[12];
    uint64_t b2[24];
    double ms_upload, ms_ntt, ms_h, ms_split, ms_l, ms_a, ms_b1, ms_b2;
};

#ifndef __CUDA_ARCH__
// The host-side types match blst's (and so blstrs') layouts, which the Rust side relies on.
static_assert(sizeof(affine_t) == 96 && sizeof(affine2_t) == 192, "host affine layouts");
static_assert(sizeof(affine_d) == 96 && sizeof(affine2_d) == 192, "device affine layouts");
static_assert(sizeof(fr_t) == 32, "scalar layout");
#endif

static void put_err(char* err, size_t len, const char* what)
{
    if (err && len) snprintf(err, len, "%s", what);
}

static int sppark_index(int ordinal)
{
    for (size_t i = 0; i < ngpus(); i++)
        if (select_gpu((int)i).cid() == ordinal)
            return (int)i;
    return -1;
}

class cuzk_ntt : public NTT {
public:
    using NTT::NTT_internal;
};

// Exclusive prefix counts of set bits, one per 64-bit word.
static std::vector<uint32_t> word_prefix(const uint64_t* bits, size_t n, size_t* total)
{
    size_t words = (n + 63) / 64;
    std::vector<uint32_t> p(words + 1);
    uint32_t acc = 0;
    for (size_t w = 0; w < words; w++) {
        p[w] = acc;
        uint64_t x = bits[w];
        if (w == words - 1 && n % 64)
            x &= (~(uint64_t)0) >> (64 - n % 64);
        acc += __builtin_popcountll(x);
    }
    p[words] = acc;
    *total = acc;
    return p;
}

typedef std::chrono::steady_clock clk;
static double ms_since(clk::time_point t)
{
    return std::chrono::duration<double, std::milli>(clk::now() - t).count();
}

// The prover's working buffers on one GPU, kept with the parameters: the MSM driver's buffers
// (the H MSM's, sized at load; the tails' per curve, grown on demand), the others' bases
// gathered for the tail MSMs, the five results' windows, and events.
struct prove_ws_t {
    msm_ws_t<bucket_t> h, g1;
    msm_ws_t<bucket2_t> g2;
    msm_events_t ev;
    affine_d* tb1 = nullptr;
    affine2_d* tb2 = nullptr;
    size_t tb1_cap = 0, tb2_cap = 0;
    bucket_t::mem_t* res1 = nullptr;   // H, L, A, B(G1): CUZK_MAX_WINS + 1 windows each
    bucket2_t::mem_t* res2 = nullptr;  // B(G2)
    cudaEvent_t tm[7] = {};            // stage boundaries on the prover's stream (timed)

    explicit prove_ws_t(int sms)
    {
        h.init(sms);
        g1.init(sms);
        g2.init(sms);
        CUDA_OK(cudaMalloc((void**)&res1, 4 * (CUZK_MAX_WINS + 1) * sizeof(*res1)));
        CUDA_OK(cudaMalloc((void**)&res2, (CUZK_MAX_WINS + 1) * sizeof(*res2)));
        for (auto& e : tm)
            CUDA_OK(cudaEventCreate(&e));
    }
    ~prove_ws_t()
    {
        cudaFree(tb1); cudaFree(tb2); cudaFree(res1); cudaFree(res2);
        for (auto e : tm)
            if (e) cudaEventDestroy(e);
    }
    prove_ws_t(const prove_ws_t&) = delete;
    prove_ws_t& operator=(const prove_ws_t&) = delete;
    size_t bytes() const
    {
        return h.bytes() + g1.bytes() + g2.bytes() + tb1_cap * sizeof(*tb1) +
               tb2_cap * sizeof(*tb2) + 4 * (CUZK_MAX_WINS + 1) * sizeof(*res1) +
               (CUZK_MAX_WINS + 1) * sizeof(*res2);
    }
};

// Splits the L (aux), A and B scalars of the partition in `g` into ones and others
// (cuzk_classify), reads the counts back and gathers the others' scalars. Waits for the stage's
// stream.
static void split_stage(const gpu_t& gpu, cuzk_gpu_stage* g, cudaStream_t st)
{
    auto t = clk::now();
    const fr_t* src[3] = {g->aux, g->as, g->bs};
    const size_t ns[3] = {g->n_aux, g->na, g->nb};
    const int grid = gpu.sm_count() * 2;
    CUDA_OK(cudaMemsetAsync(g->split_cnt, 0, 6 * sizeof(uint32_t), st));
    size_t off = 0;
    for (int k = 0; k < 3; k++) {
        if (ns[k])
            cuzk_classify<<<grid, 1024, 0, st>>>(src[k], (uint32_t)ns[k], g->split_idx + off,
                                                 g->split_cnt + 2 * k, fr_t::one());
        off += ns[k];
    }
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaMemcpyAsync(g->cnt, g->split_cnt, 6 * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                            st));
    CUDA_OK(cudaStreamSynchronize(st));
    size_t others = 0;
    for (int k = 0; k < 3; k++) {
        if ((size_t)g->cnt[2 * k] + g->cnt[2 * k + 1] > ns[k])
            throw cuda_error{cudaErrorUnknown, "the scalar split counted more than it read"};
        others += g->cnt[2 * k + 1];
    }
    grow(g->tail_s, g->tail_cap, others);
    off = 0;
    size_t toff = 0;
    for (int k = 0; k < 3; k++) {
        uint32_t n_oth = g->cnt[2 * k + 1];
        if (n_oth)
            cuzk_gather<<<grid, 1024, 0, st>>>(
                reinterpret_cast<uint4*>(g->tail_s + toff), reinterpret_cast<const uint4*>(src[k]),
                g->split_idx + off + ns[k] - n_oth, n_oth, sizeof(fr_t) / 16);
        toff += n_oth;
        off += ns[k];
    }
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(st));
    g->ms_split = ms_since(t);
}

static void free_srs(cuzk_gpu_srs* s)
{
    delete s->ws;
    delete s->hs;
    if (!s->streamed) {
        cudaFree(s->h); cudaFree(s->l); cudaFree(s->a); cudaFree(s->b1); cudaFree(s->b2);
    }
    delete s;
}

static void free_rec(cuzk_gpu_rec* r)
{
    for (int k = 0; k < 3; k++) {
        cudaFree(r->row_start[k]); cudaFree(r->cols[k]); cudaFree(r->coeffs[k]);
    }
    cudaFree(r->dict);
    delete r;
}

static void free_stage(cuzk_gpu_stage* g)
{
    cudaFree(g->abc); cudaFree(g->aux); cudaFree(g->inp); cudaFree(g->as); cudaFree(g->bs);
    cudaFree(g->bits); cudaFree(g->pref); cudaFree(g->classes); cudaFree(g->oth_idx);
    cudaFree(g->oth_val); cudaFree(g->bad); cudaFree(g->split_idx); cudaFree(g->split_cnt);
    cudaFree(g->tail_s);
    if (g->stream) cudaStreamDestroy(g->stream);
    delete g;
}

// A partition's A/B query densities (host bitmaps) with their per-word prefix counts.
struct densities_t {
    const uint64_t* bits[3];  // A's aux bits, B's aux bits, B's input bits
    std::vector<uint32_t> pref[3];
    size_t b_inp;             // B's inputs in its density
};

// Reads the densities of a partition of the stage's sizes; false where their counts do not
// match the parameters' A and B queries.
static bool read_densities(const cuzk_gpu_stage* g, const uint64_t* a_aux,
                           const uint64_t* b_aux, const uint64_t* b_inp, densities_t& d)
{
    size_t n_a = 0, n_baux = 0;
    d.bits[0] = a_aux; d.bits[1] = b_aux; d.bits[2] = b_inp;
    d.pref[0] = word_prefix(a_aux, g->n_aux, &n_a);
    d.pref[1] = word_prefix(b_aux, g->n_aux, &n_baux);
    d.pref[2] = word_prefix(b_inp, g->n_inp, &d.b_inp);
    return g->n_inp + n_a == g->na && d.b_inp + n_baux == g->nb;
}

// The A and B scalars of the partition in `g` (aux and inputs already on the device): A is the
// inputs, then the aux values in A's density; B the inputs in its input density, then the aux
// values in its aux density. The bitmaps and their prefix counts are copied on the stream.
static void compact_ab(const gpu_t& gpu, cuzk_gpu_stage* g, cudaStream_t st,
                       const densities_t& d)
{
    uint64_t* bits[3] = {g->bits, g->bits + g->words_aux, g->bits + 2 * g->words_aux};
    uint32_t* pref[3] = {g->pref, g->pref + g->words_aux, g->pref + 2 * g->words_aux};
    size_t words[3] = {g->words_aux, g->words_aux, g->words_inp};
    for (int k = 0; k < 3; k++) {
        if (!words[k]) continue;
        CUDA_OK(cudaMemcpyAsync(bits[k], d.bits[k], words[k] * sizeof(uint64_t),
                                cudaMemcpyHostToDevice, st));
        CUDA_OK(cudaMemcpyAsync(pref[k], d.pref[k].data(), words[k] * sizeof(uint32_t),
                                cudaMemcpyHostToDevice, st));
    }
    int grid = gpu.sm_count() * 2;
    CUDA_OK(cudaMemcpyAsync(g->as, g->inp, g->n_inp * sizeof(fr_t),
                            cudaMemcpyDeviceToDevice, st));
    if (g->n_aux) {
        cuzk_compact<<<grid, 1024, 0, st>>>(g->as + g->n_inp, g->aux, g->n_aux, bits[0],
                                            pref[0]);
        cuzk_compact<<<grid, 1024, 0, st>>>(g->bs + d.b_inp, g->aux, g->n_aux, bits[1],
                                            pref[1]);
    }
    if (g->n_inp)
        cuzk_compact<<<grid, 1024, 0, st>>>(g->bs, g->inp, g->n_inp, bits[2], pref[2]);
}

#define CUZK_CATCH                                                  \
    catch (const cuda_error& e) { put_err(err, errlen, e.what()); } \
    catch (const std::exception& e) { put_err(err, errlen, e.what()); } \
    catch (...) { put_err(err, errlen, "unknown C++ exception"); }

extern "C" {

// Pins `bytes` of host memory at `p` for every GPU (page-locked, mapped into the devices'
// address space), for parameters proved in the streamed mode. The memory must stay allocated
// until cuzk_gpu_unpin. Returns 0 on success.
int cuzk_gpu_pin(void* p, size_t bytes, char* err, size_t errlen)
{
    if (!bytes)
        return 0;
    cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
    if (e != cudaSuccess) {
        cudaGetLastError();
        put_err(err, errlen, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

void cuzk_gpu_unpin(void* p)
{
    if (p && cudaHostUnregister(p) != cudaSuccess)
        cudaGetLastError();
}

// A circuit's bases for GPU `ordinal` (a CUDA device ordinal), in blst's affine layout (G1: 96
// bytes, G2: 192 bytes per point). Resident (streamed == 0): copied into device memory, which
// *out owns. Streamed: the host arrays, pinned by cuzk_gpu_pin, stay where they are and must
// outlive *out. On success *out holds its device memory until cuzk_gpu_srs_free.
int cuzk_gpu_srs_new(int ordinal, const void* h, size_t nh, const void* l, size_t nl,
                     const void* a, size_t na, const void* b1, const void* b2, size_t nb,
                     int streamed, cuzk_gpu_srs** out, char* err, size_t errlen)
{
    *out = nullptr;
    cuzk_gpu_srs* s = nullptr;
    try {
        int idx = sppark_index(ordinal);
        if (idx < 0) {
            put_err(err, errlen, "the GPU is not one sppark can drive (compute capability 7.0 "
                                 "or later with cooperative launch)");
            return -1;
        }
        select_gpu(idx);
        s = new cuzk_gpu_srs{};
        s->gpu = idx;
        s->streamed = streamed != 0;
        s->nh = nh; s->nl = nl; s->na = na; s->nb = nb;
        auto up = [&](void** dst, const void* src, size_t n, size_t sz) {
            if (n == 0) return;
            if (s->streamed) {
                CUDA_OK(cudaHostGetDevicePointer(dst, const_cast<void*>(src), 0));
                return;
            }
            CUDA_OK(cudaMalloc(dst, n * sz));
            CUDA_OK(cudaMemcpy(*dst, src, n * sz, cudaMemcpyHostToDevice));
            s->bytes += n * sz;
        };
        if (s->streamed) {
            s->h = (affine_d*)h;
            s->hs = new base_stream_t<affine_d>{std::min(std::max<size_t>(nh, 1),
                                                         CUZK_STREAM_STRIDE)};
            s->bytes += s->hs->bytes();
        } else {
            up((void**)&s->h, h, nh, sizeof(affine_d));
        }
        up((void**)&s->l, l, nl, sizeof(affine_d));
        up((void**)&s->a, a, na, sizeof(affine_d));
        up((void**)&s->b1, b1, nb, sizeof(affine_d));
        up((void**)&s->b2, b2, nb, sizeof(affine2_d));
        s->ws = new prove_ws_t{select_gpu(idx).sm_count()};
        s->ws->h.reserve(msm_shape(nh, s->hs ? s->hs->cap : SIZE_MAX));
        s->bytes += s->ws->bytes();
        *out = s;
        return 0;
    } CUZK_CATCH
    if (s) free_srs(s);
    return -1;
}

size_t cuzk_gpu_srs_bytes(const cuzk_gpu_srs* s) { return s ? s->bytes : 0; }

void cuzk_gpu_srs_free(cuzk_gpu_srs* s)
{
    if (!s) return;
    int prev = 0;
    cudaGetDevice(&prev);
    try { select_gpu(s->gpu).sync(); } catch (...) {}
    free_srs(s);
    cudaSetDevice(prev);
}

// Device buffers (and a copy stream) for one partition of the circuit `s` holds.
int cuzk_gpu_stage_new(const cuzk_gpu_srs* s, uint32_t lg_domain, size_t n_inp, size_t n_aux,
                       cuzk_gpu_stage** out, char* err, size_t errlen)
{
    *out = nullptr;
    cuzk_gpu_stage* g = nullptr;
    try {
        if (lg_domain >= 40 || ((size_t)1 << lg_domain) != s->nh + 1 || n_aux != s->nl) {
            put_err(err, errlen, "the partition's sizes do not match the parameters on the GPU");
            return -1;
        }
        select_gpu(s->gpu);
        g = new cuzk_gpu_stage{};
        g->gpu = s->gpu;
        CUDA_OK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
        g->lg_domain = lg_domain;
        g->n_inp = n_inp; g->n_aux = n_aux; g->na = s->na; g->nb = s->nb;
        g->words_aux = (n_aux + 63) / 64;
        g->words_inp = (n_inp + 63) / 64;
        size_t domain = (size_t)1 << lg_domain;
        auto alloc = [&](void** p, size_t bytes) { CUDA_OK(cudaMalloc(p, bytes ? bytes : 16)); };
        alloc((void**)&g->abc, 3 * domain * sizeof(fr_t));
        alloc((void**)&g->aux, n_aux * sizeof(fr_t));
        alloc((void**)&g->inp, n_inp * sizeof(fr_t));
        alloc((void**)&g->as, g->na * sizeof(fr_t));
        alloc((void**)&g->bs, g->nb * sizeof(fr_t));
        size_t words = 2 * g->words_aux + g->words_inp;
        alloc((void**)&g->bits, words * sizeof(uint64_t));
        alloc((void**)&g->pref, words * sizeof(uint32_t));
        alloc((void**)&g->classes, (n_aux + 31) / 32 * sizeof(uint64_t));
        alloc((void**)&g->bad, sizeof(unsigned long long));
        alloc((void**)&g->split_idx, (n_aux + g->na + g->nb) * sizeof(uint32_t));
        alloc((void**)&g->split_cnt, 6 * sizeof(uint32_t));
        grow(g->tail_s, g->tail_cap, (n_aux + g->na + g->nb) / 32 + 1024);
        *out = g;
        return 0;
    } CUZK_CATCH
    if (g) free_stage(g);
    return -1;
}

void cuzk_gpu_stage_free(cuzk_gpu_stage* g)
{
    if (!g) return;
    int prev = 0;
    cudaGetDevice(&prev);
    try { select_gpu(g->gpu); } catch (...) {}
    cudaStreamSynchronize(g->stream);
    free_stage(g);
    cudaSetDevice(prev);
}

// Copies one partition into the stage (on the stage's own stream) and compacts its A and B
// scalars there. Returns when the copy is done; may run while another stage's partition is
// being proved on the same GPU.
int cuzk_gpu_upload(cuzk_gpu_stage* g, const cuzk_gpu_input* in, char* err, size_t errlen)
{
    g->loaded = false;
    try {
        size_t domain = (size_t)1 << g->lg_domain;
        if (in->lg_domain != g->lg_domain || in->abc_size > domain || in->n_aux != g->n_aux ||
            in->n_inp != g->n_inp) {
            put_err(err, errlen, "the partition's sizes do not match the GPU stage");
            return -1;
        }
        densities_t dens;
        if (!read_densities(g, in->a_aux_density, in->b_aux_density, in->b_inp_density, dens)) {
            put_err(err, errlen, "the partition's query densities do not match the parameters");
            return -1;
        }
        const gpu_t& gpu = select_gpu(g->gpu);
        cudaStream_t st = g->stream;
        auto t = clk::now();
        const fr_t* src[3] = {in->a, in->b, in->c};
        for (int k = 0; k < 3; k++) {
            fr_t* d = g->abc + k * domain;
            CUDA_OK(cudaMemcpyAsync(d, src[k], in->abc_size * sizeof(fr_t),
                                    cudaMemcpyHostToDevice, st));
            if (in->abc_size < domain)
                CUDA_OK(cudaMemsetAsync(d + in->abc_size, 0,
                                        (domain - in->abc_size) * sizeof(fr_t), st));
        }
        CUDA_OK(cudaMemcpyAsync(g->aux, in->aux, in->n_aux * sizeof(fr_t),
                                cudaMemcpyHostToDevice, st));
        CUDA_OK(cudaMemcpyAsync(g->inp, in->inp, in->n_inp * sizeof(fr_t),
                                cudaMemcpyHostToDevice, st));
        compact_ab(gpu, g, st, dens);
        CUDA_OK(cudaGetLastError());
        split_stage(gpu, g, st);
        g->ms_upload = ms_since(t);
        g->loaded = true;
        return 0;
    } CUZK_CATCH
    cudaStreamSynchronize(g->stream);
    return -1;
}

// Copies a circuit's recording to the GPU holding `s`, after checking its tables (row starts
// ascending from 0 to the term count, columns and codes in range, at most a domain of rows).
// On success *out owns the device memory until cuzk_gpu_rec_free.
int cuzk_gpu_rec_new(const cuzk_gpu_srs* s, size_t rows, size_t n_inp, size_t n_aux,
                     const cuzk_gpu_matrix* m, const fr_t* dict, size_t n_dict,
                     cuzk_gpu_rec** out, char* err, size_t errlen)
{
    *out = nullptr;
    cuzk_gpu_rec* r = nullptr;
    try {
        if (rows > s->nh + 1 || n_aux != s->nl || n_dict < 2 || n_dict > 65536 ||
            n_inp >= CUZK_INPUT_BIT || n_aux >= CUZK_INPUT_BIT) {
            put_err(err, errlen, "the recording's sizes do not match the parameters on the GPU");
            return -1;
        }
        for (int k = 0; k < 3; k++) {
            const cuzk_gpu_matrix& x = m[k];
            bool ok = x.row_start[0] == 0 && x.row_start[rows] == x.terms;
            for (size_t i = 0; ok && i < rows; i++)
                ok = x.row_start[i] <= x.row_start[i + 1];
            for (size_t t = 0; ok && t < x.terms; t++) {
                uint32_t c = x.cols[t];
                ok = ((c & CUZK_INPUT_BIT) ? (c & ~CUZK_INPUT_BIT) < n_inp : c < n_aux) &&
                     x.coeffs[t] < n_dict;
            }
            if (!ok) {
                put_err(err, errlen, "a matrix of the recording is malformed");
                return -1;
            }
        }
        select_gpu(s->gpu);
        r = new cuzk_gpu_rec{};
        r->gpu = s->gpu;
        r->rows = rows; r->n_inp = n_inp; r->n_aux = n_aux; r->n_dict = n_dict;
        auto up = [&](void** dst, const void* src, size_t bytes) {
            CUDA_OK(cudaMalloc(dst, bytes ? bytes : 16));
            if (bytes)
                CUDA_OK(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
            r->bytes += bytes;
        };
        for (int k = 0; k < 3; k++) {
            up((void**)&r->row_start[k], m[k].row_start, (rows + 1) * sizeof(uint32_t));
            up((void**)&r->cols[k], m[k].cols, m[k].terms * sizeof(uint32_t));
            up((void**)&r->coeffs[k], m[k].coeffs, m[k].terms * sizeof(uint16_t));
        }
        up((void**)&r->dict, dict, n_dict * sizeof(fr_t));
        *out = r;
        return 0;
    } CUZK_CATCH
    if (r) free_rec(r);
    return -1;
}

size_t cuzk_gpu_rec_bytes(const cuzk_gpu_rec* r) { return r ? r->bytes : 0; }

void cuzk_gpu_rec_free(cuzk_gpu_rec* r)
{
    if (!r) return;
    int prev = 0;
    cudaGetDevice(&prev);
    try { select_gpu(r->gpu).sync(); } catch (...) {}
    free_rec(r);
    cudaSetDevice(prev);
}

// Copies one partition's compact witness into the stage (on its own stream), rebuilds the aux
// vector, computes a, b, c by the sparse product with the recording `r`, checks a·b = c on
// every row and compacts the A and B scalars. Writes the first unsatisfied row to *bad_row
// (UINT64_MAX when every row holds; the stage is then ready for cuzk_gpu_prove). Returns when
// done; may run while another stage's partition is being proved on the same GPU.
int cuzk_gpu_upload_witness(cuzk_gpu_stage* g, const cuzk_gpu_rec* r, const cuzk_gpu_witness* w,
                            uint64_t* bad_row, char* err, size_t errlen)
{
    g->loaded = false;
    *bad_row = UINT64_MAX;
    try {
        size_t domain = (size_t)1 << g->lg_domain;
        if (w->lg_domain != g->lg_domain || r->gpu != g->gpu || w->n_aux != g->n_aux ||
            w->n_inp != g->n_inp || r->n_aux != g->n_aux || r->n_inp != g->n_inp ||
            r->rows > domain || w->n_oth > w->n_aux) {
            put_err(err, errlen, "the witness or the recording does not match the GPU stage");
            return -1;
        }
        for (size_t k = 0; k < w->n_oth; k++)
            if (w->oth_idx[k] >= w->n_aux) {
                put_err(err, errlen, "a witness value's index is out of range");
                return -1;
            }
        densities_t dens;
        if (!read_densities(g, w->a_aux_density, w->b_aux_density, w->b_inp_density, dens)) {
            put_err(err, errlen, "the partition's query densities do not match the parameters");
            return -1;
        }
        const gpu_t& gpu = select_gpu(g->gpu);
        cudaStream_t st = g->stream;
        auto t = clk::now();
        if (w->n_oth > g->oth_cap) {
            CUDA_OK(cudaStreamSynchronize(st));
            cudaFree(g->oth_idx); cudaFree(g->oth_val);
            g->oth_idx = nullptr; g->oth_val = nullptr; g->oth_cap = 0;
            size_t cap = w->n_oth + w->n_oth / 4;
            CUDA_OK(cudaMalloc((void**)&g->oth_idx, cap * sizeof(uint32_t)));
            CUDA_OK(cudaMalloc((void**)&g->oth_val, cap * sizeof(fr_t)));
            g->oth_cap = cap;
        }
        size_t words = (w->n_aux + 31) / 32;
        CUDA_OK(cudaMemcpyAsync(g->inp, w->inp, w->n_inp * sizeof(fr_t), cudaMemcpyHostToDevice,
                                st));
        CUDA_OK(cudaMemcpyAsync(g->classes, w->classes, words * sizeof(uint64_t),
                                cudaMemcpyHostToDevice, st));
        if (w->n_oth) {
            CUDA_OK(cudaMemcpyAsync(g->oth_idx, w->oth_idx, w->n_oth * sizeof(uint32_t),
                                    cudaMemcpyHostToDevice, st));
            CUDA_OK(cudaMemcpyAsync(g->oth_val, w->oth_val, w->n_oth * sizeof(fr_t),
                                    cudaMemcpyHostToDevice, st));
        }
        fr_t one = fr_t::one();
        fr_t zero = one - one;
        int grid = gpu.sm_count() * 2;
        if (w->n_aux)
            cuzk_expand<<<grid, 1024, 0, st>>>(g->aux, g->classes, w->n_aux, one, zero);
        if (w->n_oth)
            cuzk_scatter<<<grid, 1024, 0, st>>>(g->aux, g->oth_idx, g->oth_val, w->n_oth);
        for (int k = 0; k < 3; k++) {
            fr_t* d = g->abc + k * domain;
            if (r->rows)
                cuzk_product<<<gpu.sm_count() * 8, 256, 0, st>>>(
                    d, r->row_start[k], r->cols[k], r->coeffs[k], r->rows, r->dict, g->inp,
                    g->aux, g->classes, one, zero);
            if (r->rows < domain)
                CUDA_OK(cudaMemsetAsync(d + r->rows, 0, (domain - r->rows) * sizeof(fr_t), st));
        }
        unsigned long long bad = r->rows;
        CUDA_OK(cudaMemcpyAsync(g->bad, &bad, sizeof bad, cudaMemcpyHostToDevice, st));
        if (r->rows)
            cuzk_check<<<gpu.sm_count() * 8, 256, 0, st>>>(g->abc, g->abc + domain,
                                                           g->abc + 2 * domain, r->rows, g->bad);
        CUDA_OK(cudaMemcpyAsync(&bad, g->bad, sizeof bad, cudaMemcpyDeviceToHost, st));
        compact_ab(gpu, g, st, dens);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(st));
        if (bad < r->rows) {
            g->ms_upload = ms_since(t);
            *bad_row = bad;
            return 0;
        }
        split_stage(gpu, g, st);
        g->ms_upload = ms_since(t);
        g->loaded = true;
        return 0;
    } CUZK_CATCH
    cudaStreamSynchronize(g->stream);
    return -1;
}

// Proves the partition uploaded into `g` on the GPU holding `s`. Returns 0 on success. Calls
// for one GPU must not overlap (uploads into other stages may). Everything is queued on the
// GPU's streams at once; the host waits once, for the windows of the five MSMs, and combines
// them.
int cuzk_gpu_prove(const cuzk_gpu_srs* s, cuzk_gpu_stage* g, cuzk_gpu_output* out, char* err,
                   size_t errlen)
{
    memset(out, 0, sizeof(*out));
    try {
        if (!g->loaded || g->gpu != s->gpu || g->na != s->na || g->nb != s->nb ||
            g->n_aux != s->nl || ((size_t)1 << g->lg_domain) != s->nh + 1) {
            put_err(err, errlen, "the GPU stage holds no partition of these parameters");
            return -1;
        }
        g->loaded = false;
        out->ms_upload = g->ms_upload;
        out->ms_split = g->ms_split;
        const gpu_t& gpu = select_gpu(s->gpu);
        prove_ws_t& w = *s->ws;
        stream_t& sst = gpu[0];
        cudaStream_t st = sst, sd = gpu[2];
        size_t domain = (size_t)1 << g->lg_domain;
        int sms = gpu.sm_count();
        fr_t* d[3] = {g->abc, g->abc + domain, g->abc + 2 * domain};

        // The tails' gathered bases: room first (growing waits for the GPU).
        uint32_t n_oth_g1 = std::max(std::max(g->cnt[1], g->cnt[3]), g->cnt[5]);
        grow(w.tb1, w.tb1_cap, n_oth_g1);
        grow(w.tb2, w.tb2_cap, g->cnt[5]);

        // h = icoset_ntt((coset_ntt(intt(a)) * coset_ntt(intt(b)) - coset_ntt(intt(c))) / Z)
        CUDA_OK(cudaEventRecord(w.tm[0], st));
        for (int k = 0; k < 3; k++) {
            cuzk_ntt::NTT_internal(d[k], g->lg_domain, NTT::InputOutputOrder::NR,
                                   NTT::Direction::inverse, NTT::Type::standard, sst);
            cuzk_ntt::NTT_internal(d[k], g->lg_domain, NTT::InputOutputOrder::RN,
                                   NTT::Direction::forward, NTT::Type::coset, sst);
        }
        // Z on the coset is g^domain - 1 everywhere (g: the NTT's coset generator).
        fr_t z = group_gen;
        for (uint32_t i = 0; i < g->lg_domain; i++)
            z ^= 2;
        z = (z - fr_t::one()).reciprocal();
        cuzk_h_combine<<<sms * 2, 1024, 0, st>>>(d[0], d[1], d[2], z, domain);
        CUDA_OK(cudaGetLastError());
        cuzk_ntt::NTT_internal(d[0], g->lg_domain, NTT::InputOutputOrder::NN,
                               NTT::Direction::inverse, NTT::Type::coset, sst);
        CUDA_OK(cudaEventRecord(w.tm[1], st));

        const size_t nw = CUZK_MAX_WINS + 1;
        msm_shape_t sh[5];
        sh[0] = msm_enqueue<bucket_t, affine_d>(gpu, w.h, w.ev, s->h, d[0], s->nh, w.res1, st,
                                                sd, 0, s->hs);
        CUDA_OK(cudaEventRecord(w.tm[2], st));

        // L, A and B: a Pippenger MSM over the others (their bases gathered), plus the sum of
        // the bases whose scalar is one (98.4-99.6% of this project's aux values are 0 or 1).
        const affine_d* bases[3] = {s->l, s->a, s->b1};
        const size_t ns[3] = {g->n_aux, g->na, g->nb};
        const uint32_t* list[3] = {g->split_idx, g->split_idx + g->n_aux,
                                   g->split_idx + g->n_aux + g->na};
        const fr_t* tail[3] = {g->tail_s, g->tail_s + g->cnt[1], g->tail_s + g->cnt[1] + g->cnt[3]};
        for (int k = 0; k < 3; k++) {
            sh[k + 1] = split_msm<bucket_t, affine_d>(
                gpu, st, sd, w.g1, w.ev, w.tb1, bases[k], list[k], ns[k], g->split_cnt + 2 * k,
                g->cnt + 2 * k, tail[k], w.res1 + (k + 1) * nw, 1);
            CUDA_OK(cudaEventRecord(w.tm[3 + k], st));
        }
        sh[4] = split_msm<bucket2_t, affine2_d>(gpu, st, sd, w.g2, w.ev, w.tb2, s->b2, list[2],
                                                ns[2], g->split_cnt + 4, g->cnt + 4, tail[2],
                                                w.res2, 2);
        CUDA_OK(cudaEventRecord(w.tm[6], st));
        std::vector<bucket_t> r1(4 * nw);
        std::vector<bucket2_t> r2(nw);
        CUDA_OK(cudaMemcpyAsync(r1.data(), w.res1, r1.size() * sizeof(bucket_t),
                                cudaMemcpyDeviceToHost, st));
        CUDA_OK(cudaMemcpyAsync(r2.data(), w.res2, r2.size() * sizeof(bucket2_t),
                                cudaMemcpyDeviceToHost, st));
        CUDA_OK(cudaStreamSynchronize(st));

        float ms[6];
        for (int k = 0; k < 6; k++)
            CUDA_OK(cudaEventElapsedTime(&ms[k], w.tm[k], w.tm[k + 1]));
        out->ms_ntt = ms[0]; out->ms_h = ms[1]; out->ms_l = ms[2]; out->ms_a = ms[3];
        out->ms_b1 = ms[4]; out->ms_b2 = ms[5];

        point_t p[4];
        for (int k = 0; k < 4; k++)
            p[k] = msm_finish<bucket_t, point_t>(&r1[k * nw], sh[k]);
        point2_t b2 = msm_finish<bucket2_t, point2_t>(r2.data(), sh[4]);
        affine_t r;
        r = p[0]; memcpy(out->h, &r, sizeof(out->h));
        r = p[1]; memcpy(out->l, &r, sizeof(out->l));
        r = p[2]; memcpy(out->a, &r, sizeof(out->a));
        r = p[3]; memcpy(out->b1, &r, sizeof(out->b1));
        affine2_t rb2 = b2;
        memcpy(out->b2, &rb2, sizeof(out->b2));
        return 0;
    } CUZK_CATCH
    try { select_gpu(s->gpu).sync(); } catch (...) {}
    return -1;
}

}  // extern "C"
