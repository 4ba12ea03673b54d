// cuzk's own kernels for a partition: the h chain's element-wise steps, the density compaction
// of the A and B scalars, the split of scalars into ones and others, gathers, and the sparse
// product of a circuit's recording with a compact witness, with its row check.

#ifndef CUZK_KERNELS_CUH
#define CUZK_KERNELS_CUH

#include "types.cuh"

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

// Whether v is one (compared limb by limb with one in Montgomery form, passed in: sppark's
// is_one trips an internal error of nvcc 13.0 here) and whether it is not zero.
__device__ __forceinline__ void cuzk_one_or_zero(const fr_t& v, const fr_t& one_mont, bool* one,
                                                 bool* nonzero)
{
    const uint32_t* x = reinterpret_cast<const uint32_t*>(&v);
    const uint32_t* o = reinterpret_cast<const uint32_t*>(&one_mont);
    uint32_t d1 = 0, z = 0;
    for (int k = 0; k < (int)(sizeof(fr_t) / 4); k++) {
        d1 |= x[k] ^ o[k];
        z |= x[k];
    }
    *one = d1 == 0;
    *nonzero = z != 0;
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
            bool nonzero;
            cuzk_one_or_zero(s[i], one_mont, &one, &nonzero);
            other = !one && nonzero;
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

// One matrix of a recording as the kernels read it (in device memory, or the device's mapping
// of pinned host memory).
struct cuzk_csr_t {
    const uint32_t* row_start;
    const uint32_t* cols;
    const uint16_t* coeffs;
};

// A partition's witness as the product reads it: the inputs, the class bits, and the others'
// values either in a dense aux vector (`aux`, indexed by variable) or packed in index order
// (`oth`, found by rank: `rank[w]` counts the others in the class words before w).
struct cuzk_wit_t {
    const fr_t* inp;
    const uint64_t* classes;
    const fr_t* aux;
    const uint32_t* rank;
    const fr_t* oth;
};

// The position among the others of aux variable j (of class 2).
__device__ __forceinline__ uint32_t cuzk_other_rank(const uint64_t* classes,
                                                    const uint32_t* rank, uint32_t j)
{
    uint64_t w = classes[j / 32];
    uint64_t hi = w & 0xAAAAAAAAAAAAAAAAull & ~(w << 1);
    uint32_t p = 2 * (j % 32);
    uint64_t below = p ? hi & ((~(uint64_t)0) >> (64 - p)) : 0;
    return rank[j / 32] + (uint32_t)__popcll(below);
}

// Row r of the matrix · w; terms on variables that are zero are skipped without reading their
// value.
__device__ __forceinline__ fr_t cuzk_row_dot(const cuzk_csr_t& m, size_t r, const fr_t* dict,
                                             const cuzk_wit_t& w, const fr_t& one,
                                             const fr_t& zero)
{
    fr_t acc = zero;
    for (uint32_t t = m.row_start[r], end = m.row_start[r + 1]; t < end; t++) {
        uint32_t col = m.cols[t];
        uint32_t k = m.coeffs[t];
        fr_t v;
        if (col & CUZK_INPUT_BIT) {
            v = w.inp[col & ~CUZK_INPUT_BIT];
        } else {
            uint32_t c = cuzk_class(w.classes, col);
            if (c == 0)
                continue;
            if (c == 1)
                v = one;
            else
                v = w.aux ? w.aux[col] : w.oth[cuzk_other_rank(w.classes, w.rank, col)];
        }
        if (k == 0)
            acc += v;
        else if (k == 1)
            acc -= v;
        else
            acc += v * dict[k];
    }
    return acc;
}

// out[r] = (row r of the matrix) · w, one thread per row.
__launch_bounds__(256) __global__
void cuzk_product(fr_t* out, cuzk_csr_t m, size_t rows, const fr_t* dict, cuzk_wit_t w,
                  fr_t one, fr_t zero)
{
    for (size_t r = threadIdx.x + (size_t)blockIdx.x * blockDim.x; r < rows;
         r += (size_t)blockDim.x * gridDim.x)
        out[r] = cuzk_row_dot(m, r, dict, w, one, zero);
}

// The first row where (A·w)(B·w) != C·w, into *bad (which holds the row count on entry),
// without storing a, b or c (the lean stage's check).
__launch_bounds__(256) __global__
void cuzk_check_rows(cuzk_csr_t ma, cuzk_csr_t mb, cuzk_csr_t mc, size_t rows,
                     const fr_t* dict, cuzk_wit_t w, fr_t one, fr_t zero,
                     unsigned long long* bad)
{
    for (size_t r = threadIdx.x + (size_t)blockIdx.x * blockDim.x; r < rows;
         r += (size_t)blockDim.x * gridDim.x) {
        fr_t ab = cuzk_row_dot(ma, r, dict, w, one, zero) * cuzk_row_dot(mb, r, dict, w, one, zero);
        fr_t c = cuzk_row_dot(mc, r, dict, w, one, zero);
        const uint32_t* x = reinterpret_cast<const uint32_t*>(&ab);
        const uint32_t* y = reinterpret_cast<const uint32_t*>(&c);
        uint32_t d = 0;
        for (int k = 0; k < (int)(sizeof(fr_t) / 4); k++)
            d |= x[k] ^ y[k];
        if (d)
            atomicMin(bad, (unsigned long long)r);
    }
}

// a[i] *= b[i] (the h chain, after a and b are on the coset).
__launch_bounds__(1024) __global__
void cuzk_mul(fr_t* a, const fr_t* b, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        a[i] = a[i] * b[i];
}

// a[i] = (a[i] - c[i]) * z (the h chain's last step).
__launch_bounds__(1024) __global__
void cuzk_sub_scale(fr_t* a, const fr_t* c, fr_t z, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        fr_t t = a[i] - c[i];
        a[i] = t * z;
    }
}

// One of the split lists the lean stage builds from the compact witness: n entries, the ones'
// positions from the front, the others' from the back, their scalars into tail (the s-th other
// appended goes to idx[n - 1 - s] and tail[n_oth - 1 - s], the order split_msm reads), and the
// two counts (zero on entry).
struct cuzk_split_t {
    uint32_t* idx;
    uint32_t* counts;
    fr_t* tail;
    uint32_t n, n_oth;
};

// Appends position p (a one, or an other of scalar v) to list l, warp-aggregated: every lane
// of the warp calls it, `take` says whether this lane appends.
__device__ __forceinline__ void cuzk_split_put(const cuzk_split_t& l, bool take, bool one,
                                               uint32_t p, const fr_t& v)
{
    const uint32_t lane = threadIdx.x % 32;
    const uint32_t below = (1u << lane) - 1;
    uint32_t m1 = __ballot_sync(0xffffffff, take && one);
    uint32_t m2 = __ballot_sync(0xffffffff, take && !one);
    uint32_t b1 = 0, b2 = 0;
    if (lane == 0) {
        if (m1) b1 = atomicAdd(&l.counts[0], __popc(m1));
        if (m2) b2 = atomicAdd(&l.counts[1], __popc(m2));
    }
    b1 = __shfl_sync(0xffffffff, b1, 0);
    b2 = __shfl_sync(0xffffffff, b2, 0);
    if (take && one) {
        uint32_t s = b1 + __popc(m1 & below);
        if (s < l.n) l.idx[s] = p;
    } else if (take) {
        uint32_t s = b2 + __popc(m2 & below);
        if (s < l.n_oth && s < l.n) {
            l.idx[l.n - 1 - s] = p;
            l.tail[l.n_oth - 1 - s] = v;
        }
    }
}

// Whether bit i of a bitmap is set, and its rank among the set bits (prefix: per word).
__device__ __forceinline__ bool cuzk_bit(const uint64_t* bits, const uint32_t* prefix, uint32_t i,
                                         uint32_t* rank)
{
    uint64_t w = bits[i / 64];
    uint32_t b = i % 64;
    uint64_t below = b ? (w & ((~(uint64_t)0) >> (64 - b))) : 0;
    *rank = prefix[i / 64] + (uint32_t)__popcll(below);
    return (w >> b) & 1;
}

// The L, A and B split lists from the aux part of a compact witness: L's scalars are the aux
// values (position j), A's the inputs then the aux values in A's density (position a_off +
// rank), B's the inputs in its input density then the aux values in its aux density (b_off +
// rank). Zeros are dropped.
__launch_bounds__(1024) __global__
void cuzk_split_aux(uint32_t n_aux, const uint64_t* classes, const uint32_t* rank,
                    const fr_t* oth, const uint64_t* a_bits, const uint32_t* a_pref,
                    uint32_t a_off, const uint64_t* b_bits, const uint32_t* b_pref,
                    uint32_t b_off, cuzk_split_t l, cuzk_split_t a, cuzk_split_t b)
{
    for (uint32_t j0 = blockIdx.x * blockDim.x; j0 < n_aux; j0 += blockDim.x * gridDim.x) {
        uint32_t j = j0 + threadIdx.x;
        uint32_t c = j < n_aux ? cuzk_class(classes, j) : 0;
        fr_t v;
        if (c == 2)
            v = oth[cuzk_other_rank(classes, rank, j)];
        uint32_t ra = 0, rb = 0;
        bool in_a = c && cuzk_bit(a_bits, a_pref, j, &ra);
        bool in_b = c && cuzk_bit(b_bits, b_pref, j, &rb);
        cuzk_split_put(l, c != 0, c == 1, j, v);
        cuzk_split_put(a, in_a, c == 1, a_off + ra, v);
        cuzk_split_put(b, in_b, c == 1, b_off + rb, v);
    }
}

// The inputs' entries of the A and B split lists (all inputs are in A; B has those of its
// input density), classed by value.
__launch_bounds__(1024) __global__
void cuzk_split_inputs(uint32_t n_inp, const fr_t* inp, const uint64_t* b_bits,
                       const uint32_t* b_pref, cuzk_split_t a, cuzk_split_t b, fr_t one_mont)
{
    for (uint32_t i0 = blockIdx.x * blockDim.x; i0 < n_inp; i0 += blockDim.x * gridDim.x) {
        uint32_t i = i0 + threadIdx.x;
        bool one = false, nonzero = false, in_b = false;
        uint32_t rb = 0;
        fr_t v;
        if (i < n_inp) {
            v = inp[i];
            cuzk_one_or_zero(v, one_mont, &one, &nonzero);
            in_b = cuzk_bit(b_bits, b_pref, i, &rb);
        }
        cuzk_split_put(a, nonzero, one, i, v);
        cuzk_split_put(b, nonzero && in_b, one, rb, v);
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
