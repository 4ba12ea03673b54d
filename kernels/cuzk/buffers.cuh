// The Groth16 prover's device objects behind the handles of kernels/cuzk_kernels.h: a
// circuit's parameters on one GPU (cuzk_gpu_srs) with the prover's working buffers, a
// partition's buffers (cuzk_gpu_stage) and a circuit's recording (cuzk_gpu_rec). Every buffer
// is an owning member (dev_vec_t, sppark's event_t and stream_t): deleting the object frees
// it. Their sizes are computed here and nowhere else: the allocations and the working-set
// estimate the Rust side places parameters by (cuzk_gpu_working_bytes) use the same functions.

#ifndef CUZK_BUFFERS_CUH
#define CUZK_BUFFERS_CUH

#include <map>
#include <memory>

#include "device.cuh"
#include "msm.cuh"

// Batches of the streamed H MSM hold at most this many bases (2 x 400 MB of device buffers).
#define CUZK_STREAM_STRIDE ((size_t)1 << 22)

// The sizes of one partition's buffers, for a circuit of 2^lg_domain constraints, n_inp inputs
// and n_aux aux variables whose A and B queries have na and nb entries.
struct stage_shape_t {
    uint32_t lg_domain = 0;
    size_t n_inp = 0, n_aux = 0, na = 0, nb = 0;
    // The witnesses' share of values neither 0 nor 1, per 1024, where the caller knows it
    // (cuzk_gpu_working_bytes); 0: the first guess below, 1 in 32 (a PoRep witness's few).
    uint32_t oth_per_1024 = 0;

    size_t share(size_t n) const
    {
        return oth_per_1024 ? n / 1024 * oth_per_1024 + n % 1024 * oth_per_1024 / 1024 : n / 32;
    }

    size_t domain() const { return (size_t)1 << lg_domain; }
    size_t words_aux() const { return (n_aux + 63) / 64; }
    size_t words_inp() const { return (n_inp + 63) / 64; }
    // The three density bitmaps: A's aux bits, B's aux bits, B's input bits.
    size_t bit_words() const { return 2 * words_aux() + words_inp(); }
    // The compact witness's class bits (2 per aux value).
    size_t class_words() const { return (n_aux + 31) / 32; }
    // The L (aux), A and B scalars' split lists, one after the other.
    size_t split() const { return n_aux + na + nb; }
    // The others' gathered scalars and indices, first sized for 1 in 32 (0.4-1.6% of this
    // project's values are neither 0 nor 1), then grown on demand.
    size_t others() const { return share(split()) + 1024; }
    // A compact witness's others, first sized for 1 in 32 aux values, then grown on demand.
    size_t witness_others() const { return share(n_aux) + 1024; }
    // The tails' gathered bases: G1 for the longest of the L, A and B lists, G2 for B's. At
    // the first guess, the others of all three lists (as stages first size them).
    size_t gathered_g1() const
    {
        return oth_per_1024 ? share(std::max(n_aux, std::max(na, nb))) + 1024 : others();
    }
    size_t gathered_g2() const { return oth_per_1024 ? share(nb) + 1024 : others(); }

    // Device memory of a lean stage (CUZK_STAGE_LEAN): the compact witness (its others at
    // the guess), the others' ranks, the density bitmaps and prefixes, the split lists and
    // the others' scalars; a, b and c are computed into the prover's two working vectors at
    // proof time.
    size_t lean_bytes() const
    {
        const size_t fr = sizeof(fr_t);
        size_t b = n_inp * fr + class_words() * (sizeof(uint64_t) + sizeof(uint32_t));
        b += (witness_others() + witness_others() / 4) * fr;
        b += bit_words() * (sizeof(uint64_t) + sizeof(uint32_t));
        b += split() * sizeof(uint32_t) + 6 * sizeof(uint32_t) + sizeof(unsigned long long);
        b += (others() + others() / 4) * fr;  // the others' scalars
        return b;
    }

    // Device memory of a stage of this shape as first made (the others' scalars at their
    // guess; a compact witness's values, which only the witness upload needs, grow later).
    size_t bytes() const
    {
        const size_t fr = sizeof(fr_t);
        size_t b = 3 * domain() * fr + (n_aux + n_inp + na + nb) * fr;
        b += bit_words() * (sizeof(uint64_t) + sizeof(uint32_t));
        b += class_words() * sizeof(uint64_t);
        b += split() * sizeof(uint32_t) + 6 * sizeof(uint32_t) + sizeof(unsigned long long);
        b += (others() + others() / 4) * fr;  // the others' scalars
        return b;
    }
};

// One partition's inputs in device memory, with the stream that copies them in: while one
// partition's kernels run, the next one's upload proceeds on its own stage. A full stage holds
// a, b, c and the dense scalars; a lean one (`lean`) only the compact witness and the split
// lists, a, b and c being computed one at a time into the prover's working vectors when the
// partition is proved (from the recording `rec`, or copied from the host's `host_abc`).
struct cuzk_gpu_rec;
struct cuzk_gpu_stage {
    int gpu;
    stage_shape_t sh;
    bool lean = false;
    dev_vec_t<uint32_t> rank;         // lean: the others' rank per class word
    const cuzk_gpu_rec* rec = nullptr;  // lean: the recording its witness was checked against
    dev_vec_t<fr_t> abc;              // a, b, c: 3 x domain
    dev_vec_t<fr_t> aux, inp;
    dev_vec_t<fr_t> as;               // A's scalars: inputs, then aux in A's density
    dev_vec_t<fr_t> bs;               // B's scalars: inputs in B's density, then aux in its density
    dev_vec_t<uint64_t> bits;         // the three density bitmaps
    dev_vec_t<uint32_t> pref;         // and their per-word prefix counts
    dev_vec_t<uint64_t> classes;      // the compact witness: 2 class bits per aux value
    dev_vec_t<uint32_t> oth_idx;      // and the others' indices and values (made on demand)
    dev_vec_t<fr_t> oth_val;
    dev_vec_t<unsigned long long> bad;  // the product's first unsatisfied row
    // The L (aux), A and B scalars split by value (cuzk_classify): one index list per MSM, in
    // turn (n_aux, na, nb entries), the ones from the front, the others from the back; their
    // counts (ones, others per MSM) on the device and here; the others' scalars gathered (L's,
    // then A's, then B's; grown on demand).
    dev_vec_t<uint32_t> split_idx;
    dev_vec_t<uint32_t> split_cnt;
    uint32_t cnt[6] = {};
    dev_vec_t<fr_t> tail_s;
    bool loaded = false;
    double ms_upload = 0, ms_split = 0;
    // Last: made after the buffers, destroyed before them (after the destructor's wait).
    stream_t stream;

    // On the current device (sppark's index `gpu`).
    cuzk_gpu_stage(int gpu_, const stage_shape_t& s, bool lean_)
        : gpu(gpu_), sh(s), lean(lean_), stream(gpu_)
    {
        if (lean) {
            inp.reserve(s.n_inp, true);
            classes.reserve(s.class_words(), true);
            rank.reserve(s.class_words(), true);
            oth_val.reserve(s.witness_others());
            bits.reserve(s.bit_words(), true);
            pref.reserve(s.bit_words(), true);
            bad.reserve(1, true);
            split_idx.reserve(s.split(), true);
            split_cnt.reserve(6, true);
            tail_s.reserve(s.others());
            return;
        }
        abc.reserve(3 * s.domain(), true);
        aux.reserve(s.n_aux, true);
        inp.reserve(s.n_inp, true);
        as.reserve(s.na, true);
        bs.reserve(s.nb, true);
        bits.reserve(s.bit_words(), true);
        pref.reserve(s.bit_words(), true);
        classes.reserve(s.class_words(), true);
        bad.reserve(1, true);
        split_idx.reserve(s.split(), true);
        split_cnt.reserve(6, true);
        tail_s.reserve(s.others());
    }
    ~cuzk_gpu_stage() { (void)cudaStreamSynchronize(stream); }
    cuzk_gpu_stage(const cuzk_gpu_stage&) = delete;
    cuzk_gpu_stage& operator=(const cuzk_gpu_stage&) = delete;
};

// The most points a batch of the H MSM takes: streamed, what its base buffers hold; lean, what
// its digits may take in the lent working vector; else unbounded (one batch at 2^26 and more,
// msm_shape).
static inline size_t h_max_stride(bool streamed, bool lean)
{
    return streamed ? CUZK_STREAM_STRIDE : lean ? CUZK_LEAN_H_STRIDE : SIZE_MAX;
}

// Whether the H MSM's streamed base buffers (h_bufs bytes) and its digits (h_temp) fit in one
// lean working vector of a domain.
static inline bool h_lent_fits(size_t domain, size_t h_bufs, size_t h_temp)
{
    return ((h_bufs + 255) & ~(size_t)255) + h_temp <= domain * sizeof(fr_t);
}

// Whether the tails' gathered bases (n1 G1 and n2 G2 points) fit in the lean working vectors
// of a domain, which the h chain no longer needs once the H MSM has read h.
static inline bool tails_fit(size_t domain, size_t n1, size_t n2)
{
    return ((n1 * sizeof(affine_d) + 255) & ~(size_t)255) + n2 * sizeof(affine2_d) <=
           2 * domain * sizeof(fr_t);
}

// The prover's working buffers on one GPU, kept with the parameters: the MSM driver's buffers
// (the H MSM's, sized at load; the tails' per curve, grown on demand), the others' bases
// gathered for the tail MSMs, the five results' windows, and events.
struct prove_ws_t {
    typedef bucket_t::mem_t bucket_d;
    typedef bucket2_t::mem_t bucket2_d;
    msm_ws_t<bucket_t> h, g1;
    msm_ws_t<bucket2_t> g2;
    msm_events_t ev;
    dev_vec_t<affine_d> tb1;
    dev_vec_t<affine2_d> tb2;
    dev_vec_t<bucket_d> res1;   // H, L, A, B(G1): CUZK_MAX_WINS + 1 windows each
    dev_vec_t<bucket2_d> res2;  // B(G2)
    dev_vec_t<fr_t> slots;      // lean stages: two vectors of the domain for the h chain
    timed_event_t tm[7];        // stage boundaries on the prover's stream (timed)

    explicit prove_ws_t(int sms) : h(sms), g1(sms), g2(sms)
    {
        res1.reserve(4 * (CUZK_MAX_WINS + 1), true);
        res2.reserve(CUZK_MAX_WINS + 1, true);
    }
    size_t bytes() const
    {
        return h.bytes() + g1.bytes() + g2.bytes() + tb1.bytes() + tb2.bytes() + res1.bytes() +
               res2.bytes() + slots.bytes();
    }
    // At their largest for a circuit of stage shape `sh` (H MSM over the domain, its bases
    // resident or, `streamed`, copied in batches of CUZK_STREAM_STRIDE; tail MSMs over the
    // stage's first guess of others) on a GPU of `sms` multiprocessors; with `lean`, the two
    // working vectors.
    static size_t bytes_for(const stage_shape_t& sh, int sms, bool streamed, bool lean)
    {
        const size_t g1 = sh.gathered_g1(), g2 = sh.gathered_g2();
        const msm_shape_t tail = msm_shape(std::max(g1, g2), CUZK_TAIL_STRIDE);
        const size_t nh = sh.domain() - 1;
        const size_t gathered = (g1 + g1 / 4) * sizeof(affine_d) + (g2 + g2 / 4) * sizeof(affine2_d);
        const msm_shape_t hshape = msm_shape(nh, h_max_stride(streamed, lean), true);
        const size_t h_bufs = streamed ? base_stream_t<affine_d>::bytes_for(
                                             std::min<size_t>(std::max<size_t>(nh, 1),
                                                              CUZK_STREAM_STRIDE))
                                       : 0;
        const size_t h_temp = msm_ws_t<bucket_t>::temps(hshape);
        // A lean plan lends the H MSM its second working vector (free once h is made).
        const bool lent = lean && h_lent_fits(sh.domain(), h_bufs, h_temp);
        return (lean ? 2 * sh.domain() * sizeof(fr_t) : 0) + (lent ? 0 : h_bufs) +
               msm_ws_t<bucket_t>::bytes_for(hshape, sms) - (lent ? h_temp : 0) +
               msm_ws_t<bucket_t>::bytes_for(tail, sms) +
               msm_ws_t<bucket2_t>::bytes_for(tail, sms) +
               (lean && tails_fit(sh.domain(), g1 + g1 / 4, g2 + g2 / 4) ? 0 : gathered) +
               (CUZK_MAX_WINS + 1) * (4 * sizeof(bucket_d) + sizeof(bucket2_d));
    }
};

// A circuit's parameters for one GPU. Resident: the bases in device memory (the *_dev
// members). Streamed: the bases stay in the caller's pinned host memory (cuzk_gpu_pin); h is
// then the host address, copied in batch by batch through `hs`, and l, a, b1, b2 are the
// device's mapping of the host arrays, read over the bus by the kernels that gather and sum
// them.
struct cuzk_gpu_srs {
    int gpu = 0;  // sppark's index of the device
    bool streamed = false;
    size_t nh = 0, nl = 0, na = 0, nb = 0;
    size_t unfilled = 0;  // points of resident bases still to come (cuzk_gpu_srs_fill)
    std::map<size_t, size_t> filled[5];  // per CUZK_BASES_* kind: [first, end) ranges, merged
    dev_vec_t<affine_d> h_dev, l_dev, a_dev, b1_dev;
    dev_vec_t<affine2_d> b2_dev;
    const affine_d* h = nullptr;  // what the kernels read
    const affine_d* l = nullptr;
    const affine_d* a = nullptr;
    const affine_d* b1 = nullptr;
    const affine2_d* b2 = nullptr;
    std::unique_ptr<prove_ws_t> ws;              // calls on one GPU do not overlap
    std::unique_ptr<base_stream_t<affine_d>> hs;  // streamed: the H bases' device buffers

    // Whether none of [first, first + n) of `kind` was filled before.
    bool unfilled_range(uint32_t kind, size_t first, size_t n) const
    {
        const auto& m = filled[kind];
        auto next = m.lower_bound(first);  // the first range starting at or after `first`
        if (!n || (next != m.end() && next->first < first + n))
            return n == 0;
        return next == m.begin() || std::prev(next)->second <= first;
    }

    // Records [first, first + n) of `kind` as filled (unfilled_range first), merged with the
    // ranges it touches.
    void mark_filled(uint32_t kind, size_t first, size_t n)
    {
        if (!n)
            return;
        auto& m = filled[kind];
        size_t lo = first, hi = first + n;
        auto next = m.lower_bound(first);
        if (next != m.begin() && std::prev(next)->second == first) {
            lo = std::prev(next)->first;
            m.erase(std::prev(next));
        }
        if (next != m.end() && next->first == hi) {
            hi = next->second;
            m.erase(next);
        }
        m.emplace(lo, hi);
        unfilled -= n;
    }

    // Device memory held (while no call on this GPU runs).
    size_t bytes() const
    {
        return h_dev.bytes() + l_dev.bytes() + a_dev.bytes() + b1_dev.bytes() + b2_dev.bytes() +
               (ws ? ws->bytes() : 0) + (hs ? hs->bytes() : 0);
    }
};

// A circuit's recording on one GPU (see the sparse product in kernels.cuh): its tables copied
// into device memory, or (`mapped`) read in place from pinned host memory over the bus; the
// dictionary is always on the device. `m` is what the kernels read.
struct cuzk_gpu_rec {
    int gpu = 0;
    bool mapped = false;
    size_t rows = 0, n_inp = 0, n_aux = 0, n_dict = 0;
    dev_vec_t<uint32_t> row_start[3];
    dev_vec_t<uint32_t> cols[3];
    dev_vec_t<uint16_t> coeffs[3];
    dev_vec_t<fr_t> dict;
    cuzk_csr_t m[3] = {};

    size_t bytes() const
    {
        size_t b = dict.bytes();
        for (int k = 0; k < 3; k++)
            b += row_start[k].bytes() + cols[k].bytes() + coeffs[k].bytes();
        return b;
    }
};

// Recordings take ~45 bytes per constraint (three matrices' columns and codes, row starts)
// unless the caller says (cuzk_gpu_working_bytes): PoSt's Poseidon rows take ~67.
#define CUZK_REC_BYTES_PER_ROW 45
// Device memory left free beside the estimate, for the CUDA context and allocation slack.
#define CUZK_SPARE_BYTES ((size_t)512 << 20)

#endif  // CUZK_BUFFERS_CUH
