// cuzk's own Groth16 prover: one partition's h polynomial and all five multi-scalar
// multiplications on one GPU, with the parameters resident in that GPU's memory or streamed
// from pinned host memory (the H bases copied in batch by batch, the others read over the bus).
//
// This file holds the entry points of kernels/cuzk_kernels.h and the host-side steps of a
// partition; the rest is in kernels/cuzk/ (sppark's layout: kernels and drivers in headers):
//   types.cuh        sppark's field, curve, MSM and NTT headers and the point types
//   device.cuh       owning device buffers, events, the error convention
//   kernels.cuh      h combination, density compaction, scalar split, gathers, sparse product
//   msm_kernels.cuh  the G2 instantiations and the windows' last step on the GPU
//   msm.cuh          the MSM driver (shapes, buffers, streamed bases, enqueue, finish)
//   buffers.cuh      the objects behind the handles, and every size the prover allocates
//
// The host's part of a partition is the upload of its evaluations and assignment
// (cuzk_gpu_upload), or of its compact witness only where the circuit's recording is on the
// GPU (cuzk_gpu_upload_witness); the final combination with the verifying key and r, s (a few
// scalar multiplications) happens in Rust (src/prover/groth16.rs).
//
// Thread-safety: calls on different GPUs may run at once; calls on one GPU must not overlap,
// except uploads into different stages (they share sppark's three streams of that GPU). The
// Rust wrapper holds a lock per GPU. Errors follow kernels/cuzk_kernels.h.

#include <chrono>
#include <vector>

#include "cuzk/buffers.cuh"
#include "cuzk/device.cuh"
#include "cuzk/kernels.cuh"
#include "cuzk/msm.cuh"

static_assert(CUZK_MAX_LG_DOMAIN <= MAX_LG_DOMAIN_SIZE, "the NTT's twiddles reach the largest domain");

class cuzk_ntt : public NTT {
public:
    using NTT::NTT_internal;
    using NTT::bit_rev;
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

static void split_stage(const gpu_t& gpu, cuzk_gpu_stage* g, cudaStream_t st)
{
    auto t = clk::now();
    const fr_t* src[3] = {g->aux.get(), g->as.get(), g->bs.get()};
    const size_t ns[3] = {g->sh.n_aux, g->sh.na, g->sh.nb};
    const int grid = gpu.sm_count() * 2;
    CUDA_OK(cudaMemsetAsync(g->split_cnt, 0, 6 * sizeof(uint32_t), st));
    size_t off = 0;
    for (int k = 0; k < 3; k++) {
        if (ns[k])
            cuzk_classify<<<grid, 1024, 0, st>>>(src[k], (uint32_t)ns[k], g->split_idx.get() + off,
                                                 g->split_cnt.get() + 2 * k, fr_t::one());
        off += ns[k];
    }
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaMemcpyAsync(g->cnt, g->split_cnt, 6 * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                            st));
    CUDA_OK(cudaStreamSynchronize(st));
    size_t others = 0;
    for (int k = 0; k < 3; k++) {
        if ((size_t)g->cnt[2 * k] + g->cnt[2 * k + 1] > ns[k])
            throw cuzk_wrong_output{"the scalar split counted more than it read"};
        others += g->cnt[2 * k + 1];
    }
    g->tail_s.reserve(others);
    off = 0;
    size_t toff = 0;
    for (int k = 0; k < 3; k++) {
        uint32_t n_oth = g->cnt[2 * k + 1];
        if (n_oth)
            cuzk_gather<<<grid, 1024, 0, st>>>(
                reinterpret_cast<uint4*>(g->tail_s.get() + toff), reinterpret_cast<const uint4*>(src[k]),
                g->split_idx.get() + off + ns[k] - n_oth, n_oth, sizeof(fr_t) / 16);
        toff += n_oth;
        off += ns[k];
    }
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(st));
    g->ms_split = ms_since(t);
}


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
    d.pref[0] = word_prefix(a_aux, g->sh.n_aux, &n_a);
    d.pref[1] = word_prefix(b_aux, g->sh.n_aux, &n_baux);
    d.pref[2] = word_prefix(b_inp, g->sh.n_inp, &d.b_inp);
    return g->sh.n_inp + n_a == g->sh.na && d.b_inp + n_baux == g->sh.nb;
}

// Copies the three density bitmaps of `d` and their per-word prefix counts into the stage,
// on the stream.
static void copy_densities(cuzk_gpu_stage* g, cudaStream_t st, const densities_t& d)
{
    const size_t wa = g->sh.words_aux();
    const size_t words[3] = {wa, wa, g->sh.words_inp()};
    size_t off = 0;
    for (int k = 0; k < 3; k++) {
        if (words[k]) {
            CUDA_OK(cudaMemcpyAsync(g->bits.get() + off, d.bits[k], words[k] * sizeof(uint64_t),
                                    cudaMemcpyHostToDevice, st));
            CUDA_OK(cudaMemcpyAsync(g->pref.get() + off, d.pref[k].data(),
                                    words[k] * sizeof(uint32_t), cudaMemcpyHostToDevice, st));
        }
        off += words[k];
    }
}

// The A and B scalars of the partition in `g` (aux and inputs already on the device): A is the
// inputs, then the aux values in A's density; B the inputs in its input density, then the aux
// values in its aux density. The bitmaps and their prefix counts are copied on the stream.
static void compact_ab(const gpu_t& gpu, cuzk_gpu_stage* g, cudaStream_t st,
                       const densities_t& d)
{
    copy_densities(g, st, d);
    const size_t wa = g->sh.words_aux();
    const uint64_t* bits[3] = {g->bits.get(), g->bits.get() + wa, g->bits.get() + 2 * wa};
    const uint32_t* pref[3] = {g->pref.get(), g->pref.get() + wa, g->pref.get() + 2 * wa};
    int grid = gpu.sm_count() * 2;
    CUDA_OK(cudaMemcpyAsync(g->as, g->inp, g->sh.n_inp * sizeof(fr_t),
                            cudaMemcpyDeviceToDevice, st));
    if (g->sh.n_aux) {
        cuzk_compact<<<grid, 1024, 0, st>>>(g->as.get() + g->sh.n_inp, g->aux, g->sh.n_aux, bits[0],
                                            pref[0]);
        cuzk_compact<<<grid, 1024, 0, st>>>(g->bs.get() + d.b_inp, g->aux, g->sh.n_aux, bits[1],
                                            pref[1]);
    }
    if (g->sh.n_inp)
        cuzk_compact<<<grid, 1024, 0, st>>>(g->bs, g->inp, g->sh.n_inp, bits[2], pref[2]);
}

static bool bit_set(const uint64_t* bits, size_t i) { return (bits[i / 64] >> (i % 64)) & 1; }

static bool is_fr(const cuzk_fr& v, const fr_t& x) { return memcmp(&v, &x, sizeof(fr_t)) == 0; }

// A lean stage's scalar split, on the GPU: each of the L, A and B lists of the aux values (and
// inputs) that are neither 0 nor 1, with their scalars, `n_oth` of them each; checked against
// those counts, and timed into ms_split.
static void split_lean(const gpu_t& gpu, cuzk_gpu_stage* g, const densities_t& dens,
                       const uint32_t n_oth[3])
{
    const stage_shape_t& sh = g->sh;
    cudaStream_t st = g->stream;
    const fr_t one = fr_t::one();
    auto t = clk::now();
    const size_t wa = sh.words_aux();
    const uint32_t ns[3] = {(uint32_t)sh.n_aux, (uint32_t)sh.na, (uint32_t)sh.nb};
    cuzk_split_t l[3];
    size_t off = 0, toff = 0;
    for (int k = 0; k < 3; k++) {
        l[k] = cuzk_split_t{g->split_idx.get() + off, g->split_cnt.get() + 2 * k,
                            g->tail_s.get() + toff, ns[k], n_oth[k]};
        off += ns[k];
        toff += n_oth[k];
    }
    CUDA_OK(cudaMemsetAsync(g->split_cnt, 0, 6 * sizeof(uint32_t), st));
    const int grid = gpu.sm_count() * 2;
    if (sh.n_aux)
        cuzk_split_aux<<<grid, 1024, 0, st>>>(
            (uint32_t)sh.n_aux, g->classes, g->rank, g->oth_val, g->bits, g->pref,
            (uint32_t)sh.n_inp, g->bits.get() + wa, g->pref.get() + wa, (uint32_t)dens.b_inp,
            l[0], l[1], l[2]);
    if (sh.n_inp)
        cuzk_split_inputs<<<1, 1024, 0, st>>>((uint32_t)sh.n_inp, g->inp, g->bits.get() + 2 * wa,
                                             g->pref.get() + 2 * wa, l[1], l[2], one);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaMemcpyAsync(g->cnt, g->split_cnt, 6 * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                            st));
    CUDA_OK(cudaStreamSynchronize(st));
    for (int k = 0; k < 3; k++)
        if (g->cnt[2 * k + 1] != n_oth[k] || (size_t)g->cnt[2 * k] + g->cnt[2 * k + 1] > ns[k])
            throw cuzk_wrong_output{"the lean scalar split counted other than the witness holds"};
    g->ms_split = ms_since(t);
}

// A lean stage's upload of a compact witness (cuzk_gpu_upload_witness): the witness's tables
// checked on the host (every other listed once, in index order, and no class 3), the others'
// ranks, one pass over the recording that checks every row without storing a, b or c, and the
// L, A, B split lists built from the classes (no dense vector is ever made).
static int upload_lean(const gpu_t& gpu, cuzk_gpu_stage* g, const cuzk_gpu_rec* r,
                       const cuzk_gpu_witness* w, const densities_t& dens, uint64_t* bad_row,
                       char* err, size_t errlen)
{
    const stage_shape_t& sh = g->sh;
    cudaStream_t st = g->stream;
    const size_t words = sh.class_words();
    std::vector<uint32_t> rank(words);
    uint32_t acc = 0;
    for (size_t k = 0; k < words; k++) {
        uint64_t x = w->classes[k];
        if (k + 1 == words && sh.n_aux % 32)
            x &= (~(uint64_t)0) >> (64 - 2 * (sh.n_aux % 32));
        if (x & (x >> 1) & 0x5555555555555555ull)
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the witness has a value of class 3");
        rank[k] = acc;
        acc += __builtin_popcountll(x & 0xAAAAAAAAAAAAAAAAull);
    }
    if (acc != w->n_oth)
        return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                         "the witness's other values do not match its classes");
    const uint64_t* a_aux = dens.bits[0];
    const uint64_t* b_aux = dens.bits[1];
    const uint64_t* b_inp = dens.bits[2];
    const fr_t one = fr_t::one();
    const fr_t zero = one - one;
    // The others each list will hold: the inputs' (by value) and the aux values'.
    uint32_t n_oth[3] = {(uint32_t)w->n_oth, 0, 0};
    for (size_t k = 0; k < w->n_oth; k++) {
        uint32_t j = w->oth_idx[k];
        if ((k && j <= w->oth_idx[k - 1]) || ((w->classes[j / 32] >> (2 * (j % 32))) & 3) != 2)
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the witness's other values are not listed in index order");
        n_oth[1] += bit_set(a_aux, j);
        n_oth[2] += bit_set(b_aux, j);
    }
    for (size_t i = 0; i < sh.n_inp; i++) {
        bool other = !is_fr(w->inp[i], one) && !is_fr(w->inp[i], zero);
        n_oth[1] += other;
        n_oth[2] += other && bit_set(b_inp, i);
    }
    if (w->n_oth > g->oth_val.capacity() || n_oth[0] + n_oth[1] + n_oth[2] > g->tail_s.capacity()) {
        CUDA_OK(cudaStreamSynchronize(st));
        g->oth_val.reserve(w->n_oth);
        g->tail_s.reserve(n_oth[0] + n_oth[1] + n_oth[2]);
    }
    CUDA_OK(cudaMemcpyAsync(g->inp, w->inp, sh.n_inp * sizeof(fr_t), cudaMemcpyHostToDevice, st));
    CUDA_OK(cudaMemcpyAsync(g->classes, w->classes, words * sizeof(uint64_t),
                            cudaMemcpyHostToDevice, st));
    CUDA_OK(cudaMemcpyAsync(g->rank, rank.data(), words * sizeof(uint32_t),
                            cudaMemcpyHostToDevice, st));
    if (w->n_oth)
        CUDA_OK(cudaMemcpyAsync(g->oth_val, w->oth_val, w->n_oth * sizeof(fr_t),
                                cudaMemcpyHostToDevice, st));
    copy_densities(g, st, dens);
    const cuzk_wit_t wit{g->inp, g->classes, nullptr, g->rank, g->oth_val};
    unsigned long long bad = r->rows;
    CUDA_OK(cudaMemcpyAsync(g->bad, &bad, sizeof bad, cudaMemcpyHostToDevice, st));
    if (r->rows)
        cuzk_check_rows<<<gpu.sm_count() * 8, 256, 0, st>>>(r->m[0], r->m[1], r->m[2], r->rows,
                                                            r->dict, wit, one, zero, g->bad);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaMemcpyAsync(&bad, g->bad, sizeof bad, cudaMemcpyDeviceToHost, st));
    CUDA_OK(cudaStreamSynchronize(st));
    if (bad < r->rows) {
        *bad_row = bad;
        return CUZK_KERNELS_OK;
    }
    split_lean(gpu, g, dens, n_oth);
    g->rec = r;
    g->loaded = true;
    return CUZK_KERNELS_OK;
}

#define CUZK_CATCH                                                  \
    catch (const cuda_error& e) { put_err(err, errlen, e.what()); } \

// h = (A*B - C)/Z, in order, into d[0] from the stage's a, b and c, timed by the events tm[0]
// and tm[1] on the GPU's first stream. A lean stage evaluates a, b and c from its recording
// into its two working vectors (a in d[0]; b, then c, in d[1]); a full stage holds them.
static void h_chain(const gpu_t& gpu, const cuzk_gpu_stage* g, prove_ws_t& w, fr_t* const d[3])
{
    stream_t& sst = gpu[0];
    cudaStream_t st = sst;
    const uint32_t lg = g->sh.lg_domain;
    const size_t domain = g->sh.domain();
    const int sms = gpu.sm_count();
    const cuzk_gpu_rec* rec = g->rec;
    // h = icoset_ntt((A_c * B_c - C_c) / Z_c), the textbook chain of 7 NTTs (X_c: the
    // coset NTT of intt(x); Z_c = g^n - 1 on the whole coset, g its generator), in 6:
    // the coset iNTT is linear and undoes the coset NTT, so
    //   h = (icoset_ntt(A_c * B_c) - intt(c)) / (g^n - 1),
    // the same values for any a, b and c, c never going to the coset.
    CUDA_OK(cudaEventRecord(w.tm[0], st));
    fr_t z = group_gen;
    for (uint32_t i = 0; i < lg; i++)
        z ^= 2;
    z = (z - fr_t::one()).reciprocal();  // 1 / (g^n - 1)
    auto ntt = [&](fr_t* v, NTT::InputOutputOrder order, NTT::Direction dir, NTT::Type type) {
        cuzk_ntt::NTT_internal(v, lg, order, dir, type, sst);
    };
    const fr_t one = fr_t::one();
    const fr_t zero = one - one;
    const cuzk_wit_t wit{g->inp, g->classes, nullptr, g->rank, g->oth_val};
    auto evaluate = [&](int k) {
        if (!g->lean)
            return;
        if (rec->rows)
            cuzk_product<<<sms * 8, 256, 0, st>>>(d[k], rec->m[k], rec->rows, rec->dict, wit,
                                                  one, zero);
        if (rec->rows < domain)
            CUDA_OK(cudaMemsetAsync(d[k] + rec->rows, 0, (domain - rec->rows) * sizeof(fr_t),
                                    st));
        CUDA_OK(cudaGetLastError());
    };
    for (int k = 0; k < 2; k++) {
        evaluate(k);
        ntt(d[k], NTT::InputOutputOrder::NR, NTT::Direction::inverse, NTT::Type::standard);
        ntt(d[k], NTT::InputOutputOrder::RN, NTT::Direction::forward, NTT::Type::coset);
    }
    cuzk_mul<<<sms * 2, 1024, 0, st>>>(d[0], d[1], domain);
    CUDA_OK(cudaGetLastError());
    // Both back in bit-reversed order (no reordering pass each), h put in order once.
    ntt(d[0], NTT::InputOutputOrder::NR, NTT::Direction::inverse, NTT::Type::coset);
    evaluate(2);
    ntt(d[2], NTT::InputOutputOrder::NR, NTT::Direction::inverse, NTT::Type::standard);
    cuzk_sub_scale<<<sms * 2, 1024, 0, st>>>(d[0], d[2], z, domain);
    CUDA_OK(cudaGetLastError());
    cuzk_ntt::bit_rev(d[0], d[0], lg, sst);
    CUDA_OK(cudaEventRecord(w.tm[1], st));
}

// The H MSM (h in d[0] against the H bases), enqueued on the GPU's first stream with its
// digits on the third. A lean stage lends it its second working vector, free once h is made.
static msm_shape_t h_msm(const gpu_t& gpu, const cuzk_gpu_srs* s, const cuzk_gpu_stage* g,
                         prove_ws_t& w, fr_t* const d[3])
{
    cudaStream_t st = gpu[0], sd = gpu[2];
    const size_t domain = g->sh.domain();
    if (g->lean) {
        // The second working vector is free once h is made: the H MSM's streamed base
        // buffers and digits go there where they fit.
        uint8_t* v = reinterpret_cast<uint8_t*>(d[1]);
        const size_t room = domain * sizeof(fr_t);
        const msm_shape_t hs_shape = msm_shape(s->nh, h_max_stride(s->streamed, true), true);
        const size_t bufs = s->hs ? base_stream_t<affine_d>::bytes_for(s->hs->cap) : 0;
        if (h_lent_fits(domain, bufs, msm_ws_t<bucket_t>::temps(hs_shape))) {
            const size_t off = (bufs + 255) & ~(size_t)255;
            // The copies into the lent buffers run on the copy stream: they must wait for
            // the h chain, which used this vector until tm[1].
            if (s->hs) {
                s->hs->lent = reinterpret_cast<affine_d*>(v);
                CUDA_OK(cudaStreamWaitEvent(s->hs->copy, w.tm[1], 0));
            }
            w.h.lent = v + off;
            w.h.lent_bytes = room - off;
        }
    }
    msm_shape_t shape =
        msm_enqueue<bucket_t, affine_d>(gpu, w.h, w.ev, s->h, d[0], s->nh, w.res1, st, sd, 0,
                                        s->hs.get(), h_max_stride(s->streamed, g->lean), true);
    if (s->hs)
        s->hs->lent = nullptr;
    w.h.lent = nullptr;
    w.h.lent_bytes = 0;
    return shape;
}

// The MSMs' sums read back and ended on the host: the five points and the stage times into out.
static void finish_points(prove_ws_t& w, cudaStream_t st, const msm_shape_t shp[5],
                          cuzk_gpu_output* out)
{
    const size_t nw = CUZK_MAX_WINS + 1;
    std::vector<bucket_t> r1(4 * nw);
    std::vector<bucket2_t> r2(nw);
    CUDA_OK(cudaMemcpyAsync(r1.data(), w.res1, r1.size() * sizeof(bucket_t),
                            cudaMemcpyDeviceToHost, st));
    CUDA_OK(cudaMemcpyAsync(r2.data(), w.res2, r2.size() * sizeof(bucket2_t),
                            cudaMemcpyDeviceToHost, st));
    CUDA_OK(cudaStreamSynchronize(st));

    static const int stage_of[6] = {CUZK_MS_NTT, CUZK_MS_H, CUZK_MS_L,
                                    CUZK_MS_A,   CUZK_MS_B1, CUZK_MS_B2};
    for (int k = 0; k < 6; k++) {
        float ms = 0;
        CUDA_OK(cudaEventElapsedTime(&ms, w.tm[k], w.tm[k + 1]));
        out->ms[stage_of[k]] = ms;
    }

    point_t p[4];
    for (int k = 0; k < 4; k++)
        p[k] = msm_finish<bucket_t, point_t>(&r1[k * nw], shp[k]);
    point2_t b2 = msm_finish<bucket2_t, point2_t>(r2.data(), shp[4]);
    uint64_t* g1_out[4] = {out->h, out->l, out->a, out->b1};
    for (int k = 0; k < 4; k++) {
        affine_t r = p[k];
        memcpy(g1_out[k], &r, sizeof(out->h));
    }
    affine2_t rb2 = b2;
    memcpy(out->b2, &rb2, sizeof(out->b2));
}

extern "C" {

int cuzk_gpu_pin(void* p, size_t bytes, char* err, size_t errlen)
{
    if (!bytes)
        return CUZK_KERNELS_OK;
    cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
    if (e != cudaSuccess)
        return cuzk_fail_cuda(err, errlen, e, "cudaHostRegister");
    return CUZK_KERNELS_OK;
}

void cuzk_gpu_unpin(void* p)
{
    if (p && cudaHostUnregister(p) != cudaSuccess)
        (void)cudaGetLastError();
}

int cuzk_gpu_srs_new(int ordinal, const void* h, size_t nh, const void* l, size_t nl,
                     const void* a, size_t na, const void* b1, const void* b2, size_t nb,
                     uint32_t plan, cuzk_gpu_srs** out, char* err, size_t errlen)
{
    const bool streamed = plan & CUZK_PLAN_STREAMED, lean = plan & CUZK_PLAN_LEAN;
    try {
        int idx = sppark_index(ordinal);
        if (idx < 0)
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the GPU is not one sppark can drive (compute capability 7.0 or "
                             "later with cooperative launch)");
        const gpu_t& gpu = select_gpu(idx);
        auto s = std::make_unique<cuzk_gpu_srs>();
        s->gpu = idx;
        s->streamed = streamed;
        s->nh = nh; s->nl = nl; s->na = na; s->nb = nb;
        // Streamed: the kernels read the devices' mapping of the pinned host arrays.
        auto mapped = [&](const void* src) -> void* {
            void* d = nullptr;
            CUDA_OK(cudaHostGetDevicePointer(&d, const_cast<void*>(src), 0));
            return d;
        };
        if (s->streamed) {
            s->h = (const affine_d*)h;
            // A lean plan lends them its working vector at proof time (or makes them then).
            s->hs = std::make_unique<base_stream_t<affine_d>>(
                std::min(std::max<size_t>(nh, 1), CUZK_STREAM_STRIDE), idx, lean);
            s->l = nl ? (const affine_d*)mapped(l) : nullptr;
            s->a = na ? (const affine_d*)mapped(a) : nullptr;
            s->b1 = nb ? (const affine_d*)mapped(b1) : nullptr;
            s->b2 = nb ? (const affine2_d*)mapped(b2) : nullptr;
        } else if (!h && !l && !a && !b1 && !b2) {
            // The bases come later, kind by kind (cuzk_gpu_srs_fill).
            s->h_dev.reserve(nh, true);
            s->l_dev.reserve(nl, true);
            s->a_dev.reserve(na, true);
            s->b1_dev.reserve(nb, true);
            s->b2_dev.reserve(nb, true);
            s->unfilled = nh + nl + na + 2 * nb;
        } else {
            if ((nh && !h) || (nl && !l) || (na && !a) || (nb && (!b1 || !b2)))
                return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                                 "some bases are given and others are not");
            s->h_dev.upload((const affine_d*)h, nh);
            s->l_dev.upload((const affine_d*)l, nl);
            s->a_dev.upload((const affine_d*)a, na);
            s->b1_dev.upload((const affine_d*)b1, nb);
            s->b2_dev.upload((const affine2_d*)b2, nb);
        }
        if (!s->streamed) {
            s->h = s->h_dev; s->l = s->l_dev; s->a = s->a_dev; s->b1 = s->b1_dev;
            s->b2 = s->b2_dev;
        }
        s->ws = std::make_unique<prove_ws_t>(gpu.sm_count());
        if (!lean)
            s->ws->h.reserve(msm_shape(nh, h_max_stride(streamed, lean), true));
        *out = s.release();
        return CUZK_KERNELS_OK;
    } CUZK_CATCH_RETURN
}

int cuzk_gpu_srs_fill(cuzk_gpu_srs* s, uint32_t kind, size_t first, const void* src, size_t n,
                      char* err, size_t errlen)
{
    try {
        if (!s || s->streamed || (n && !src))
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "no resident parameters to fill, or no points");
        void* dst = nullptr;
        size_t count = 0, size = sizeof(affine_d);
        switch (kind) {
        case CUZK_BASES_H: dst = s->h_dev.get(); count = s->nh; break;
        case CUZK_BASES_L: dst = s->l_dev.get(); count = s->nl; break;
        case CUZK_BASES_A: dst = s->a_dev.get(); count = s->na; break;
        case CUZK_BASES_B1: dst = s->b1_dev.get(); count = s->nb; break;
        case CUZK_BASES_B2: dst = s->b2_dev.get(); count = s->nb; size = sizeof(affine2_d); break;
        default:
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL, "no such kind of bases");
        }
        if (first > count || n > count - first)
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the points lie past the end of their kind's bases");
        // Checked before the copy, recorded after it: a refused range changes nothing, a
        // failed copy leaves its range to fill again.
        if (!s->unfilled_range(kind, first, n))
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "some of the points were filled before");
        if (n) {
            device_scope_t keep;
            select_gpu(s->gpu);
            CUDA_OK(cudaMemcpy(static_cast<char*>(dst) + first * size, src, n * size,
                               cudaMemcpyHostToDevice));
        }
        s->mark_filled(kind, first, n);
        return CUZK_KERNELS_OK;
    } CUZK_CATCH_RETURN
}

int cuzk_gpu_msm_tune(uint32_t wbits, uint32_t batches)
{
    if ((wbits && (wbits < CUZK_MSM_MIN_WBITS || wbits > CUZK_MSM_MAX_WBITS)) ||
        batches > CUZK_MSM_MAX_BATCHES)
        return CUZK_KERNELS_EINVAL;
    msm_tuning().shape.store(msm_tuning_t::pack(wbits, batches));
    return CUZK_KERNELS_OK;
}

void cuzk_gpu_msm_tuning(uint32_t* wbits, uint32_t* batches)
{
    const uint64_t v = msm_tuning().shape.load();
    if (wbits)
        *wbits = (uint32_t)(v >> 32);
    if (batches)
        *batches = (uint32_t)v;
}

size_t cuzk_gpu_srs_bytes(const cuzk_gpu_srs* s) { return s ? s->bytes() : 0; }

size_t cuzk_gpu_srs_unfilled(const cuzk_gpu_srs* s) { return s ? s->unfilled : 0; }

void cuzk_gpu_srs_free(cuzk_gpu_srs* s)
{
    if (!s) return;
    device_scope_t keep;
    try { select_gpu(s->gpu).sync(); } catch (...) {}
    delete s;
}

size_t cuzk_gpu_working_bytes(uint32_t lg_domain, size_t n_inp, size_t n_aux, size_t stages,
                              uint32_t flags, uint32_t others_per_1024, uint32_t rec_bytes_per_row)
{
    if (lg_domain > CUZK_MAX_LG_DOMAIN || others_per_1024 > 1024)
        return SIZE_MAX;
    stage_shape_t sh;
    sh.lg_domain = lg_domain;
    sh.n_inp = n_inp;
    sh.n_aux = n_aux;
    sh.na = sh.nb = n_inp + n_aux;
    sh.oth_per_1024 = others_per_1024;
    const size_t per_row = rec_bytes_per_row ? rec_bytes_per_row : CUZK_REC_BYTES_PER_ROW;
    const bool lean = flags & CUZK_PLAN_LEAN;
    // Partial sums scale with the multiprocessors: 256 bounds every GPU sppark drives.
    return stages * (lean ? sh.lean_bytes() : sh.bytes()) +
           prove_ws_t::bytes_for(sh, 256, flags & CUZK_PLAN_STREAMED, lean) +
           ((flags & CUZK_PLAN_REC_MAPPED) ? 0 : per_row * sh.domain()) +
           CUZK_SPARE_BYTES;
}

int cuzk_gpu_set_mem_cap(int ordinal, size_t bytes)
{
    if (ordinal < 0 || ordinal >= CUZK_MAX_DEVICES)
        return CUZK_KERNELS_EINVAL;
    cuzk_mem_account(ordinal).cap.store(bytes);
    return CUZK_KERNELS_OK;
}

void cuzk_gpu_mem_stats(int ordinal, size_t* used, size_t* peak)
{
    *used = *peak = 0;
    if (ordinal < 0 || ordinal >= CUZK_MAX_DEVICES)
        return;
    *used = cuzk_mem_account(ordinal).used.load();
    *peak = cuzk_mem_account(ordinal).peak.load();
}

int cuzk_gpu_stage_new(const cuzk_gpu_srs* s, uint32_t lg_domain, size_t n_inp, size_t n_aux,
                       int lean, cuzk_gpu_stage** out, char* err, size_t errlen)
{
    try {
        if (lg_domain > CUZK_MAX_LG_DOMAIN || ((size_t)1 << lg_domain) != s->nh + 1 || n_aux != s->nl)
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the partition's sizes do not match the parameters on the GPU");
        select_gpu(s->gpu);
        stage_shape_t sh;
        sh.lg_domain = lg_domain;
        sh.n_inp = n_inp;
        sh.n_aux = n_aux;
        sh.na = s->na;
        sh.nb = s->nb;
        // A lean stage's a, b, c go into the prover's working vectors (made with the first).
        if (lean)
            s->ws->slots.reserve(2 * sh.domain(), true);
        *out = new cuzk_gpu_stage(s->gpu, sh, lean != 0);
        return CUZK_KERNELS_OK;
    } CUZK_CATCH_RETURN
}

void cuzk_gpu_stage_free(cuzk_gpu_stage* g)
{
    if (!g) return;
    device_scope_t keep;
    try { select_gpu(g->gpu); } catch (...) {}
    delete g;
}

int cuzk_gpu_upload(cuzk_gpu_stage* g, const cuzk_gpu_input* in, char* err, size_t errlen)
{
    g->loaded = false;
    if (g->lean)
        return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                         "a lean stage takes compact witnesses only (cuzk_gpu_upload_witness)");
    try {
        const stage_shape_t& sh = g->sh;
        const size_t domain = sh.domain();
        if (in->lg_domain != sh.lg_domain || in->abc_size > domain || in->n_aux != sh.n_aux ||
            in->n_inp != sh.n_inp)
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the partition's sizes do not match the GPU stage");
        densities_t dens;
        if (!read_densities(g, in->a_aux_density, in->b_aux_density, in->b_inp_density, dens))
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the partition's query densities do not match the parameters");
        const gpu_t& gpu = select_gpu(g->gpu);
        cudaStream_t st = g->stream;
        auto t = clk::now();
        const fr_t* src[3] = {fr_in(in->a), fr_in(in->b), fr_in(in->c)};
        for (int k = 0; k < 3; k++) {
            fr_t* d = g->abc.get() + k * domain;
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
        return CUZK_KERNELS_OK;
    } catch (...) {
        (void)cudaStreamSynchronize(g->stream);
        return cuzk_caught(err, errlen);
    }
}

int cuzk_gpu_rec_new(const cuzk_gpu_srs* s, size_t rows, size_t n_inp, size_t n_aux,
                     const cuzk_gpu_matrix* m, const cuzk_fr* dict, size_t n_dict, int mapped,
                     cuzk_gpu_rec** out, char* err, size_t errlen)
{
    try {
        if (rows > s->nh + 1 || n_aux != s->nl || n_dict < 2 || n_dict > 65536 ||
            n_inp >= CUZK_INPUT_BIT || n_aux >= CUZK_INPUT_BIT)
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the recording's sizes do not match the parameters on the GPU");
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
            if (!ok)
                return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                                 "a matrix of the recording is malformed");
        }
        select_gpu(s->gpu);
        auto r = std::make_unique<cuzk_gpu_rec>();
        r->gpu = s->gpu;
        r->rows = rows; r->n_inp = n_inp; r->n_aux = n_aux; r->n_dict = n_dict;
        r->mapped = mapped != 0;
        for (int k = 0; k < 3; k++) {
            if (r->mapped) {
                // The device's mapping of the tables cuzk_gpu_pin registered.
                auto dev = [](const void* p, size_t n) -> void* {
                    void* d = nullptr;
                    if (n)
                        CUDA_OK(cudaHostGetDevicePointer(&d, const_cast<void*>(p), 0));
                    return d;
                };
                r->m[k] = cuzk_csr_t{(const uint32_t*)dev(m[k].row_start, rows + 1),
                                     (const uint32_t*)dev(m[k].cols, m[k].terms),
                                     (const uint16_t*)dev(m[k].coeffs, m[k].terms)};
            } else {
                r->row_start[k].upload(m[k].row_start, rows + 1);
                r->cols[k].upload(m[k].cols, m[k].terms);
                r->coeffs[k].upload(m[k].coeffs, m[k].terms);
                r->m[k] = cuzk_csr_t{r->row_start[k], r->cols[k], r->coeffs[k]};
            }
        }
        r->dict.upload(fr_in(dict), n_dict);
        *out = r.release();
        return CUZK_KERNELS_OK;
    } CUZK_CATCH_RETURN
}

size_t cuzk_gpu_rec_bytes(const cuzk_gpu_rec* r) { return r ? r->bytes() : 0; }

void cuzk_gpu_rec_free(cuzk_gpu_rec* r)
{
    if (!r) return;
    device_scope_t keep;
    try { select_gpu(r->gpu).sync(); } catch (...) {}
    delete r;
}

int cuzk_gpu_upload_witness(cuzk_gpu_stage* g, const cuzk_gpu_rec* r, const cuzk_gpu_witness* w,
                            uint64_t* bad_row, char* err, size_t errlen)
{
    g->loaded = false;
    *bad_row = UINT64_MAX;
    try {
        const stage_shape_t& sh = g->sh;
        const size_t domain = sh.domain();
        if (w->lg_domain != sh.lg_domain || r->gpu != g->gpu || w->n_aux != sh.n_aux ||
            w->n_inp != sh.n_inp || r->n_aux != sh.n_aux || r->n_inp != sh.n_inp ||
            r->rows > domain || w->n_oth > w->n_aux)
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the witness or the recording does not match the GPU stage");
        for (size_t k = 0; k < w->n_oth; k++)
            if (w->oth_idx[k] >= w->n_aux)
                return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                                 "a witness value's index is out of range");
        densities_t dens;
        if (!read_densities(g, w->a_aux_density, w->b_aux_density, w->b_inp_density, dens))
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the partition's query densities do not match the parameters");
        const gpu_t& gpu = select_gpu(g->gpu);
        cudaStream_t st = g->stream;
        auto t = clk::now();
        if (g->lean) {
            int rc = upload_lean(gpu, g, r, w, dens, bad_row, err, errlen);
            g->ms_upload = ms_since(t);
            return rc;
        }
        if (w->n_oth > g->oth_idx.capacity() || w->n_oth > g->oth_val.capacity()) {
            CUDA_OK(cudaStreamSynchronize(st));
            g->oth_idx.reserve(w->n_oth);
            g->oth_val.reserve(w->n_oth);
        }
        CUDA_OK(cudaMemcpyAsync(g->inp, w->inp, w->n_inp * sizeof(fr_t), cudaMemcpyHostToDevice,
                                st));
        CUDA_OK(cudaMemcpyAsync(g->classes, w->classes, sh.class_words() * sizeof(uint64_t),
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
        const cuzk_wit_t wit{g->inp, g->classes, g->aux, nullptr, nullptr};
        for (int k = 0; k < 3; k++) {
            fr_t* d = g->abc.get() + k * domain;
            if (r->rows)
                cuzk_product<<<gpu.sm_count() * 8, 256, 0, st>>>(d, r->m[k], r->rows, r->dict,
                                                                 wit, one, zero);
            if (r->rows < domain)
                CUDA_OK(cudaMemsetAsync(d + r->rows, 0, (domain - r->rows) * sizeof(fr_t), st));
        }
        unsigned long long bad = r->rows;
        CUDA_OK(cudaMemcpyAsync(g->bad, &bad, sizeof bad, cudaMemcpyHostToDevice, st));
        if (r->rows)
            cuzk_check<<<gpu.sm_count() * 8, 256, 0, st>>>(
                g->abc.get(), g->abc.get() + domain, g->abc.get() + 2 * domain, r->rows, g->bad);
        CUDA_OK(cudaMemcpyAsync(&bad, g->bad, sizeof bad, cudaMemcpyDeviceToHost, st));
        compact_ab(gpu, g, st, dens);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(st));
        if (bad < r->rows) {
            g->ms_upload = ms_since(t);
            *bad_row = bad;
            return CUZK_KERNELS_OK;
        }
        split_stage(gpu, g, st);
        g->ms_upload = ms_since(t);
        g->loaded = true;
        return CUZK_KERNELS_OK;
    } catch (...) {
        (void)cudaStreamSynchronize(g->stream);
        return cuzk_caught(err, errlen);
    }
}

int cuzk_gpu_prove(const cuzk_gpu_srs* s, cuzk_gpu_stage* g, cuzk_gpu_output* out, char* err,
                   size_t errlen)
{
    memset(out, 0, sizeof(*out));
    try {
        const stage_shape_t& sh = g->sh;
        if (!g->loaded || g->gpu != s->gpu || sh.na != s->na || sh.nb != s->nb ||
            sh.n_aux != s->nl || sh.domain() != s->nh + 1)
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the GPU stage holds no partition of these parameters");
        if (s->unfilled)
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the parameters' bases are not all filled in (cuzk_gpu_srs_fill)");
        g->loaded = false;
        out->ms[CUZK_MS_UPLOAD] = g->ms_upload;
        out->ms[CUZK_MS_SPLIT] = g->ms_split;
        const gpu_t& gpu = select_gpu(s->gpu);
        prove_ws_t& w = *s->ws;
        cudaStream_t st = gpu[0], sd = gpu[2];
        const size_t domain = sh.domain();
        const cuzk_gpu_rec* rec = g->rec;
        if (g->lean && (!rec || rec->gpu != s->gpu || w.slots.capacity() < 2 * domain))
            return cuzk_fail(err, errlen, CUZK_KERNELS_EINVAL,
                             "the lean stage has no recording or working vectors on this GPU");
        fr_t* d[3] = {g->abc.get(), g->abc.get() + domain, g->abc.get() + 2 * domain};
        if (g->lean)
            d[0] = w.slots.get(), d[1] = d[2] = w.slots.get() + domain;

        // The tails' gathered bases: room first (growing waits for the GPU). A lean stage's go
        // into the working vectors where they fit: the tails run after the H MSM has read h
        // (its last digits, on sd, come before its last accumulation on st, and the gathers
        // follow on st).
        uint32_t n_oth_g1 = std::max(std::max(g->cnt[1], g->cnt[3]), g->cnt[5]);
        affine_d* tb1;
        affine2_d* tb2;
        if (g->lean && tails_fit(domain, n_oth_g1, g->cnt[5])) {
            tb1 = reinterpret_cast<affine_d*>(w.slots.get());
            tb2 = reinterpret_cast<affine2_d*>(reinterpret_cast<char*>(w.slots.get()) +
                                               ((n_oth_g1 * sizeof(affine_d) + 255) & ~(size_t)255));
        } else {
            w.tb1.reserve(n_oth_g1);
            w.tb2.reserve(g->cnt[5]);
            tb1 = w.tb1;
            tb2 = w.tb2;
        }

        h_chain(gpu, g, w, d);

        const size_t nw = CUZK_MAX_WINS + 1;
        msm_shape_t shp[5];
        shp[0] = h_msm(gpu, s, g, w, d);
        CUDA_OK(cudaEventRecord(w.tm[2], st));

        // L, A and B: a Pippenger MSM over the others (their bases gathered), plus the sum of
        // the bases whose scalar is one (98.4-99.6% of this project's aux values are 0 or 1).
        const affine_d* bases[3] = {s->l, s->a, s->b1};
        const size_t ns[3] = {sh.n_aux, sh.na, sh.nb};
        const uint32_t* idx = g->split_idx;
        const uint32_t* list[3] = {idx, idx + sh.n_aux, idx + sh.n_aux + sh.na};
        const fr_t* ts = g->tail_s;
        const fr_t* tail[3] = {ts, ts + g->cnt[1], ts + g->cnt[1] + g->cnt[3]};
        for (int k = 0; k < 3; k++) {
            shp[k + 1] = split_msm<bucket_t, affine_d>(
                gpu, st, sd, w.g1, w.ev, tb1, bases[k], list[k], ns[k],
                g->split_cnt.get() + 2 * k, g->cnt + 2 * k, tail[k], w.res1.get() + (k + 1) * nw,
                1);
            CUDA_OK(cudaEventRecord(w.tm[3 + k], st));
        }
        shp[4] = split_msm<bucket2_t, affine2_d>(gpu, st, sd, w.g2, w.ev, tb2, s->b2, list[2],
                                                 ns[2], g->split_cnt.get() + 4, g->cnt + 4,
                                                 tail[2], w.res2, 2);
        CUDA_OK(cudaEventRecord(w.tm[6], st));
        finish_points(w, st, shp, out);
        return CUZK_KERNELS_OK;
    } catch (...) {
        try { select_gpu(s->gpu).sync(); } catch (...) {}
        return cuzk_caught(err, errlen);
    }
}

}  // extern "C"
