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
// handles on the same or other GPUs may be used at once. Errors follow cuzk_kernels.h.

#include <cuda_runtime.h>

#include <cstring>
#include <memory>

#include <ff/bls12-381-fp2.hpp>
#include <ec/xyzz_t.hpp>

#include "cuzk/device.cuh"

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

// A comb table on one GPU with its scalar and output buffers (grown on demand) and stream.
struct cuzk_fixed_base {
    int device;
    int g2;
    uint32_t wbits, windows;
    dev_vec_t<uint8_t> table;
    dev_vec_t<fr_t> d_k;
    dev_vec_t<uint32_t> d_out;  // n points' bytes, as 32-bit words
    stream_t st;                // last: made after the buffers, destroyed before them

    cuzk_fixed_base(int ordinal, int g2_, uint32_t wbits_, uint32_t windows_)
        : device(ordinal), g2(g2_), wbits(wbits_), windows(windows_), st(ordinal) {}
    ~cuzk_fixed_base() { (void)cudaStreamSynchronize(st); }
    size_t point_bytes() const { return g2 ? 192 : 96; }
};

static int fb_new(int ordinal, int g2, uint32_t wbits, uint32_t windows, const void* table,
                  size_t entries, cuzk_fixed_base** out, char* err, size_t errlen)
{
    if (wbits < 2 || wbits > 20 || windows != fb_windows(wbits))
        return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                         "fixed-base table: window size out of range or window count wrong");
    if (entries != (size_t)windows << (wbits - 1))
        return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                         "fixed-base table: wrong number of entries for its windows");
    CUDA_OK(cudaSetDevice(ordinal));
    auto f = std::make_unique<cuzk_fixed_base>(ordinal, g2, wbits, windows);
    f->table.upload((const uint8_t*)table, entries * f->point_bytes());
    *out = f.release();
    return CUZK_KERNELS_OK;
}

static int fb_mul(cuzk_fixed_base* f, const void* scalars, size_t n, void* out)
{
    if (n == 0)
        return CUZK_KERNELS_OK;
    const size_t pbytes = f->point_bytes();
    CUDA_OK(cudaSetDevice(f->device));
    if (n > f->d_k.capacity()) {
        f->d_k.reserve(n, true);
        f->d_out.reserve(n * pbytes / sizeof(uint32_t), true);
    }
    CUDA_OK(cudaMemcpyAsync(f->d_k, scalars, n * sizeof(fr_t), cudaMemcpyHostToDevice, f->st));
    const unsigned threads = 256;
    const size_t lanes = n * (f->g2 ? 2 : 1);
    const unsigned blocks = (unsigned)((lanes + threads - 1) / threads);
    if (f->g2) {
        typedef xyzz_t<fp2_t>::affine_t::mem_t a2;
        fixed_base_kernel<fp2_t, 2><<<blocks, threads, 0, f->st>>>(
            (const a2*)f->table.get(), f->wbits, f->windows, f->d_k, n, f->d_out);
    } else {
        typedef xyzz_t<fp_t>::affine_t::mem_t a1;
        fixed_base_kernel<fp_t, 1><<<blocks, threads, 0, f->st>>>(
            (const a1*)f->table.get(), f->wbits, f->windows, f->d_k, n, f->d_out);
    }
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaMemcpyAsync(out, f->d_out, n * pbytes, cudaMemcpyDeviceToHost, f->st));
    CUDA_OK(cudaStreamSynchronize(f->st));
    return CUZK_KERNELS_OK;
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
    } CUZK_CATCH_RETURN
}

// out[i] = scalars[i] · G for i < n (scalars as blst_fr, Montgomery form), written as a
// `.params` file holds points: n · 96 bytes (G1) or n · 192 (G2). Blocks until done.
int cuzk_fixed_base_mul(cuzk_fixed_base* f, const void* scalars, size_t n, void* out,
                        char* err, size_t errlen)
{
    try {
        return fb_mul(f, scalars, n, out);
    } CUZK_CATCH_RETURN
}

// Frees the handle and its device memory (NULL is ignored).
void cuzk_fixed_base_free(cuzk_fixed_base* f)
{
    if (f == nullptr)
        return;
    device_scope_t keep;
    (void)cudaSetDevice(f->device);
    delete f;
    (void)cudaGetLastError();
}

}  // extern "C"
