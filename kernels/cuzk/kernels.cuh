// cuzk's own kernels for a partition: the h chain's element-wise step, the density compaction
// of the A and B scalars, the split of scalars into ones and others, gathers, and the sparse
// product of a circuit's recording with a compact witness, with its row check.

#ifndef CUZK_KERNELS_CUH
#define CUZK_KERNELS_CUH

#include "types.cuh"

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

#endif  // CUZK_KERNELS_CUH
