// Fixed-base scalar multiplication on the GPU: k_i · G for millions of scalars k_i and one
// generator G (G1 or G2 of BLS12-381), written as bellperson writes points in a `.params` file
// (uncompressed: x then y, big-endian, 96 bytes in G1; x.c1, x.c0, y.c1, y.c0 in G2, 192 bytes;
// the identity as 0x40 followed by zeros). The parameter generator (`cuzk params gen`) computes
// its sections with it where a GPU is present; the CPU path in src/tools/paramgen.rs computes
// the same bytes.
//
// The comb table comes from the host: table[j * 2^(w-1) + d - 1] = d · 2^(w j) · G for d in
// 1..=2^(w-1), affine, in blst's memory layout (Montgomery form). A scalar, taken out of its
// Montgomery form, is cut into signed w-bit digits (a digit of 2^(w-1) or more becomes its
// negative and carries one into the next window), so a point is one table entry added (or
// subtracted) per window: sppark's mixed addition of an XYZZ and an affine point (which doubles
// where the two are equal and skips the identity). The result is made affine with one
// inversion per point. G2 points take two threads each (sppark's Fp2 on the GPU: a lane per
// coefficient).
//
// Thread-safety: a handle is used by one thread at a time (it owns its buffers and stream);
// handles on the same or other GPUs may be used at once. Errors (CUDA's, C++ exceptions) come
// back as a non-zero return with a message in `err`; nothing throws across the boundary.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include <ff/bls12-381-fp2.hpp>
#include <ec/xyzz_t.hpp>

namespace {

// Windows of `w` bits a 255-bit scalar needs in signed-digit form, the top digit's carry
// included (the host's rule, src/tools/paramgen.rs `window_count`).
__host__ __device__ constexpr uint32_t fb_windows(uint32_t w)
{
    return (255 + w - 1) / w + ((255 - ((255 + w - 1) / w - 1) * w) >= w - 1 ? 1 : 0);
}

// `D` lanes a point (1 for Fp, 2 for Fp2); `F` the coordinate field as the kernels see it.
template<class F, unsigned D>
__launch_bounds__(256) __global__
void fixed_base_kernel(const typename xyzz_t<F>::affine_t::mem_t* __restrict__ table,
                       uint32_t wbits, uint32_t windows, const fr_t* __restrict__ scalars,
                       size_t n, uint32_t* __restrict__ out)
{
    typedef xyzz_t<F> point_t;
    typedef typename point_t::affine_t affine_t;
    const size_t tid = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    const size_t i = tid / D;
    // Every lane of a warp runs to the end: the inversion and Fp2's products exchange values
    // between lanes. Lanes past the end compute the last point again and store nothing.
    const bool live = i < n;
    fr_t k = scalars[live ? i : n - 1];
    k.from();
    uint32_t s[9];
    for (int q = 0; q < 8; q++)
        s[q] = k[q];
    s[8] = 0;

    const uint32_t half = 1u << (wbits - 1), full = 1u << wbits, mask = full - 1;
    F zero;
    zero.zero();
    point_t acc;
    acc.inf();
    uint32_t carry = 0;
#pragma unroll 1
    for (uint32_t j = 0; j < windows; j++) {
        const uint32_t pos = j * wbits, lo = pos / 32, off = pos % 32;
        const uint64_t v = (uint64_t)s[lo < 8 ? lo : 8] | (uint64_t)s[lo + 1 < 8 ? lo + 1 : 8] << 32;
        const uint32_t d = (uint32_t)(v >> off) & mask;
        const uint32_t e = d + carry;
        const bool neg = e >= half;
        const uint32_t m = neg ? full - e : e;
        carry = neg;
        affine_t p(zero, zero);  // the identity: adding it leaves acc as it is
        if (m != 0)
            p = table[(size_t)j * half + m - 1];
        acc.add(p, neg);  // doubles where p equals acc, gives the identity where it is -acc
    }
    const bool inf = acc.is_inf();
    // Affine: x = X/ZZ, y = Y/ZZZ, with one inversion of ZZ·ZZZ (1/0 is 0: the identity
    // becomes (0, 0)).
    static_assert(sizeof(point_t) == 4 * sizeof(F), "a point is its four coordinates");
    F c4[4];  // X, Y, ZZZ, ZZ
    memcpy(c4, &acc, sizeof(c4));
    const F inv = (c4[3] * c4[2]).reciprocal();
    F xy[2] = {c4[0] * c4[2] * inv, c4[1] * c4[3] * inv};
    xy[0].from();
    xy[1].from();
    if (!live)
        return;
    // Big-endian coordinates, most significant 32-bit word first; in G2 lane c holds the
    // coefficient c, written c1 first.
    const uint32_t c = D == 2 ? (threadIdx.x & 1) : 0;
    uint32_t* o = out + i * (24 * D);
    const uint32_t xo = D == 2 ? (1 - c) * 12 : 0, yo = D == 2 ? 24 + (1 - c) * 12 : 12;
    for (int q = 0; q < 12; q++) {
        o[xo + q] = __byte_perm(xy[0][11 - q], 0, 0x0123);
        o[yo + q] = __byte_perm(xy[1][11 - q], 0, 0x0123);
    }
    if (inf && (D == 1 || c == 1))
        o[0] |= 0x40;  // the first byte of the point: the infinity flag
}

}  // namespace

struct cuzk_fixed_base {
    int device;
    int g2;
    uint32_t wbits, windows;
    void* table;
    fr_t* d_k;
    uint32_t* d_out;
    size_t cap;  // points d_k and d_out hold
    cudaStream_t st;
};

static void fb_err(char* err, size_t len, const char* what)
{
    if (err && len)
        snprintf(err, len, "%s", what);
}

#define FB_CUDA(call)                                                     \
    do {                                                                  \
        cudaError_t e_ = (call);                                          \
        if (e_ != cudaSuccess) {                                          \
            char m_[256];                                                 \
            snprintf(m_, sizeof m_, "%s: %s", #call, cudaGetErrorString(e_)); \
            cudaGetLastError();                                           \
            fb_err(err, errlen, m_);                                      \
            return -1;                                                    \
        }                                                                 \
    } while (0)

static void fb_release(cuzk_fixed_base* f)
{
    int prev = 0;
    cudaGetDevice(&prev);
    cudaSetDevice(f->device);
    if (f->st)
        cudaStreamSynchronize(f->st);
    cudaFree(f->table);
    cudaFree(f->d_k);
    cudaFree(f->d_out);
    if (f->st)
        cudaStreamDestroy(f->st);
    cudaGetLastError();
    cudaSetDevice(prev);
    delete f;
}

static int fb_new(int ordinal, int g2, uint32_t wbits, uint32_t windows, const void* table,
                  size_t entries, cuzk_fixed_base** out, char* err, size_t errlen)
{
    if (wbits < 2 || wbits > 20 || windows != fb_windows(wbits)) {
        fb_err(err, errlen, "fixed-base table: window size out of range or window count wrong");
        return -1;
    }
    if (entries != (size_t)windows << (wbits - 1)) {
        fb_err(err, errlen, "fixed-base table: wrong number of entries for its windows");
        return -1;
    }
    FB_CUDA(cudaSetDevice(ordinal));
    cuzk_fixed_base* f = new cuzk_fixed_base{ordinal, g2, wbits, windows, nullptr, nullptr,
                                             nullptr, 0, nullptr};
    const size_t bytes = entries * (g2 ? 192 : 96);
    cudaError_t e = cudaStreamCreateWithFlags(&f->st, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaMalloc(&f->table, bytes);
    if (e == cudaSuccess)
        e = cudaMemcpy(f->table, table, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        char m[256];
        snprintf(m, sizeof m, "fixed-base table (%zu bytes): %s", bytes, cudaGetErrorString(e));
        cudaGetLastError();
        fb_err(err, errlen, m);
        fb_release(f);
        return -1;
    }
    *out = f;
    return 0;
}

static int fb_mul(cuzk_fixed_base* f, const void* scalars, size_t n, void* out, char* err,
                  size_t errlen)
{
    if (n == 0)
        return 0;
    const size_t pbytes = f->g2 ? 192 : 96;
    FB_CUDA(cudaSetDevice(f->device));
    if (n > f->cap) {
        cudaFree(f->d_k);
        cudaFree(f->d_out);
        f->d_k = nullptr;
        f->d_out = nullptr;
        f->cap = 0;
        FB_CUDA(cudaMalloc(&f->d_k, n * sizeof(fr_t)));
        FB_CUDA(cudaMalloc(&f->d_out, n * pbytes));
        f->cap = n;
    }
    FB_CUDA(cudaMemcpyAsync(f->d_k, scalars, n * sizeof(fr_t), cudaMemcpyHostToDevice, f->st));
    const unsigned threads = 256;
    const size_t lanes = n * (f->g2 ? 2 : 1);
    const unsigned blocks = (unsigned)((lanes + threads - 1) / threads);
    if (f->g2) {
        typedef xyzz_t<fp2_t>::affine_t::mem_t a2;
        fixed_base_kernel<fp2_t, 2><<<blocks, threads, 0, f->st>>>(
            (const a2*)f->table, f->wbits, f->windows, f->d_k, n, f->d_out);
    } else {
        typedef xyzz_t<fp_t>::affine_t::mem_t a1;
        fixed_base_kernel<fp_t, 1><<<blocks, threads, 0, f->st>>>(
            (const a1*)f->table, f->wbits, f->windows, f->d_k, n, f->d_out);
    }
    FB_CUDA(cudaGetLastError());
    FB_CUDA(cudaMemcpyAsync(out, f->d_out, n * pbytes, cudaMemcpyDeviceToHost, f->st));
    FB_CUDA(cudaStreamSynchronize(f->st));
    return 0;
}

#define FB_CATCH                                                   \
    catch (const std::bad_alloc&) {                                \
        fb_err(err, errlen, "out of host memory");                 \
        return -1;                                                 \
    } catch (const std::exception& e) {                            \
        fb_err(err, errlen, e.what());                             \
        return -1;                                                 \
    } catch (...) {                                                \
        fb_err(err, errlen, "unknown C++ exception");              \
        return -1;                                                 \
    }

extern "C" {

// A comb table of `entries` affine points (blst_p1_affine, or blst_p2_affine when `g2`) for
// windows of `wbits` bits copied to GPU `ordinal`; `*out` receives the handle (free it with
// cuzk_fixed_base_free). `windows` must be the count for `wbits` and `entries` windows ·
// 2^(wbits-1). Returns 0, or non-zero with a message in `err` and `*out` untouched.
int cuzk_fixed_base_new(int ordinal, int g2, uint32_t wbits, uint32_t windows,
                        const void* table, size_t entries, cuzk_fixed_base** out, char* err,
                        size_t errlen)
{
    try {
        return fb_new(ordinal, g2, wbits, windows, table, entries, out, err, errlen);
    } FB_CATCH
}

// out[i] = scalars[i] · G for i < n (scalars as blst_fr, Montgomery form), written as a
// `.params` file holds points: n · 96 bytes (G1) or n · 192 (G2). Blocks until done.
int cuzk_fixed_base_mul(cuzk_fixed_base* f, const void* scalars, size_t n, void* out,
                        char* err, size_t errlen)
{
    try {
        return fb_mul(f, scalars, n, out, err, errlen);
    } FB_CATCH
}

// Frees the handle and its device memory (NULL is ignored).
void cuzk_fixed_base_free(cuzk_fixed_base* f)
{
    if (f == nullptr)
        return;
    try {
        fb_release(f);
    } catch (...) {
    }
}

}  // extern "C"
