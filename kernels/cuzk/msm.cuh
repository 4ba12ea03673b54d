// cuzk's MSM driver over sppark's Pippenger kernels.
//
// sppark's kernels do the digit breakdown and sort, the bucket accumulation and the per-thread
// part of the bucket integration; sppark's own driver (msm_t::invoke) then finishes every
// window on host threads (~40k point operations per MSM) and waits for the GPU after each
// batch. This driver keeps its buffers between calls, queues every batch without a host round
// trip, and finishes the windows on the GPU (cuzk_msm_windows): what comes back is one point
// per window, which the host combines (msm_finish: ~255 doublings).

#ifndef CUZK_MSM_CUH
#define CUZK_MSM_CUH

#include <atomic>

#include "device.cuh"
#include "kernels.cuh"
#include "msm_kernels.cuh"


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
// The window size of a one-batch MSM of 2^26 points or more (msm_shape).
#define CUZK_MSM_LARGE_WBITS 20
// The H MSM of a lean stage runs in batches of at most this many points: its digits and sort
// space (~1.3 GB) then fit in the stage's free working vector, which lends them.
#define CUZK_LEAN_H_STRIDE ((size_t)1 << 24)
// The tail MSMs (L, A, B over the others) run in batches of at most this many points, which
// bounds their digits' memory (~170 MB a batch).
#define CUZK_TAIL_STRIDE ((size_t)1 << 21)

// Tuning knobs for the H MSM of at least 2^16 points (`tuned` below; the tail MSMs keep their
// own shape, which the plans count): a window size (CUZK_MSM_MIN_WBITS..CUZK_MSM_MAX_WBITS)
// and a batch count (1..CUZK_MSM_MAX_BATCHES) that replace the ones chosen below; 0 keeps the
// choice.
// CUZK_MSM_WBITS and CUZK_MSM_BATCHES set them at start, cuzk_gpu_msm_tune at any time (for a
// benchmark between calls: buffers grow to the new shape, and plans made before do not count
// it). Both live in one word, so an MSM never sees one setting without the other.
static uint32_t msm_knob(const char* name, uint32_t lo, uint32_t hi)
{
    const char* v = getenv(name);
    if (!v || !*v)
        return 0;
    long x = strtol(v, nullptr, 10);
    return x >= (long)lo && x <= (long)hi ? (uint32_t)x : 0;
}

struct msm_tuning_t {
    std::atomic<uint64_t> shape;  // wbits << 32 | batches
    msm_tuning_t()
        : shape(pack(msm_knob("CUZK_MSM_WBITS", CUZK_MSM_MIN_WBITS, CUZK_MSM_MAX_WBITS),
                     msm_knob("CUZK_MSM_BATCHES", 1, CUZK_MSM_MAX_BATCHES)))
    {}
    static uint64_t pack(uint32_t wbits, uint32_t batches)
    {
        return (uint64_t)wbits << 32 | batches;
    }
};

static msm_tuning_t& msm_tuning()
{
    static msm_tuning_t t;
    return t;
}

// `tuned`: the H MSM, whose shape the knobs above set where it has at least 2^16 points.
static msm_shape_t msm_shape(size_t n, size_t max_stride = SIZE_MAX, bool tuned = false)
{
    const bool large = n >= ((size_t)1 << 16);
    const uint64_t knobs = tuned && large ? msm_tuning().shape.load() : 0;
    const uint32_t knob_wbits = (uint32_t)(knobs >> 32), knob_batches = (uint32_t)knobs;
    msm_shape_t s;
    s.n = n;
    // Measured on the H200 at 2^21 points (docs/notebook/benchmarks.md, stage 5): one batch beats sppark's
    // four (26.4 against 31.3 ms at 13-bit windows; its batches bound its host-side work, which
    // this driver does not have), and 15-bit windows beat 13, 14 and 16 (23.6 ms). So: windows
    // of log2(1.5 n) - 6 bits within 10..16, and batches only to keep a batch's digits within
    // 2^24 points (~1.3 GB of digits and sort space).
    // At 2^26 points and more, where the caller has room for one batch (max_stride unbounded:
    // the H MSM of a resident plan with full stages), one batch of CUZK_MSM_LARGE_WBITS-bit
    // windows: at 2^27 it beat 16-bit windows in 8 batches by 6.5% (docs/notebook/benchmarks.md section 21),
    // for ~7.8 GB more digits and sort space, which the plans count.
    const uint32_t lg = lg2_floor(n + n / 2);  // 21 for the 2^21 - 1 points of H at 2^21
    const bool one_batch = max_stride == SIZE_MAX && n >= ((size_t)1 << 26);
    s.wbits = one_batch ? CUZK_MSM_LARGE_WBITS : lg < 16 ? 10 : std::min<uint32_t>(lg - 6, 16);
    if (knob_wbits)
        s.wbits = knob_wbits;
    const uint32_t nbits = fr_t::bit_length();
    s.nwins = (nbits - 1) / s.wbits + 1;
    s.batches = one_batch ? 1 : (uint32_t)std::max<size_t>(1, (n + ((size_t)1 << 24) - 1) >> 24);
    if (knob_batches)
        s.batches = knob_batches;
    if (max_stride < SIZE_MAX)
        s.batches = std::max<uint32_t>(s.batches, (uint32_t)((n + max_stride - 1) / max_stride));
    size_t stride = (n + s.batches - 1) / s.batches;
    s.stride = std::max<size_t>(WARP_SZ, (stride + WARP_SZ - 1) & ~(size_t)(WARP_SZ - 1));
    return s;
}

template<class T> struct nodeduce { typedef T type; };

template<class... P>
static void launch_coop(cudaStream_t st, void (*f)(P...), dim3 grid, dim3 block, size_t shared,
                        typename nodeduce<P>::type... args)
{
    void* va[sizeof...(P)] = {&args...};
    CUDA_OK(cudaLaunchCooperativeKernel((const void*)f, grid, block, va, shared, st));
}

// Device buffers of the driver for one curve: the windows' buckets, the partial sums of a
// batch addition, the digits' histogram, and the digits with the sort's temporaries. They grow
// on demand and are kept; one MSM at a time uses them.
template<class bucket>
struct msm_ws_t {
    typedef typename bucket::mem_t bucket_d;
    dev_vec_t<bucket_d> buckets;
    dev_vec_t<bucket_d> parts;  // the partial sums of a batch addition (n_parts used)
    dev_vec_t<uint32_t> hist;
    dev_vec_t<uint8_t> temp;
    dev_vec_t<bucket_d> fine;  // the sub-chunks' pairs of a spread integration (lgk_for)
    size_t n_parts = 0;
    int sms = 0;
    // Digits and sort space lent for one MSM (a lean stage's free working vector), used where
    // they hold the MSM's (see reserve); null: `temp`.
    uint8_t* lent = nullptr;
    size_t lent_bytes = 0;

    // Partial sums left by one batch_addition launch (a grid of one block per SM).
    static size_t parts_for(int sms) { return (size_t)sms * BATCH_ADD_BLOCK_SIZE / WARP_SZ; }
    static size_t rows(const msm_shape_t& s) { return (size_t)s.nwins << (s.wbits - 1); }
    // log2 of the sub-chunks per chunk of the bucket integration (msm_kernels.cuh) on a GPU
    // of `sms` multiprocessors: 0, sppark's walk, for G2 and windows of few buckets; else as
    // many as keep a sub-chunk at 16 buckets or more while the blocks stay within four per
    // multiprocessor (at 20-bit windows: 32 sub-chunks of 64, 416 blocks; at 15 bits, the tail
    // MSMs': 4 of 16).
    static uint32_t lgk_for(const msm_shape_t& s, int sms)
    {
        if (bucket::degree != 1)
            return 0;
        const uint32_t lg_nt = lg2_floor(MSM_NTHREADS);
        const uint32_t lg_i = s.wbits - 1 - lg_nt;
        uint32_t lgk = 0;
        while (lg_i - lgk > 4 && ((size_t)s.nwins << (lgk + 1)) <= 4 * (size_t)sms)
            lgk++;
        return lgk;
    }
    static size_t fine_rows(const msm_shape_t& s, int sms)
    {
        const uint32_t lgk = lgk_for(s, sms);
        return lgk ? ((size_t)s.nwins << lgk) * 2 * MSM_NTHREADS : 0;
    }
    static size_t temps(const msm_shape_t& s)
    {
        return s.stride * 2 * sizeof(uint2) + (size_t)s.nwins * s.stride * sizeof(uint32_t);
    }
    // Device memory an MSM of shape s takes on a GPU of `sms` multiprocessors.
    static size_t bytes_for(const msm_shape_t& s, int sms)
    {
        return (rows(s) + std::max<size_t>(parts_for(sms), 256) + fine_rows(s, sms)) *
                   sizeof(bucket_d) +
               rows(s) * sizeof(uint32_t) + temps(s);
    }

    explicit msm_ws_t(int sms_) : n_parts(parts_for(sms_)), sms(sms_)
    {
        parts.reserve(std::max<size_t>(n_parts, 256), true);
    }
    size_t bytes() const
    {
        return buckets.bytes() + parts.bytes() + hist.bytes() + temp.bytes() + fine.bytes();
    }
    // Room for an MSM of shape s. Growing frees the old buffers (cudaFree waits for the GPU).
    void reserve(const msm_shape_t& s)
    {
        buckets.reserve(rows(s), true);
        hist.reserve(rows(s), true);
        if (size_t f = fine_rows(s, sms))
            fine.reserve(f, true);
        if (!lent || lent_bytes < temps(s))
            temp.reserve(temps(s), true);
    }
    uint8_t* temp_for(const msm_shape_t& s) const
    {
        return lent && lent_bytes >= temps(s) ? lent : temp.get();
    }
};

// Bases that stay in pinned host memory (the streamed parameter mode), copied batch by batch
// into one of two device buffers on a copy stream of their own, so that a batch's copy
// overlaps the previous batch's kernels. Members are destroyed in reverse order: the stream
// (after its last copy, see the destructor) before the events and buffers.
template<class affine_dev>
struct base_stream_t {
    size_t cap;  // points per buffer: the MSM's batches are at most this long
    dev_vec_t<affine_dev> buf[2];
    event_t copied[2], freed[2];
    stream_t copy;
    // Two buffers of `cap` points lent for one MSM (a lean stage's free working vector); null:
    // `buf`, made on first use where not made at once.
    affine_dev* lent = nullptr;

    // The buffers are made now unless `later` (a lean plan lends them, or makes them when the
    // working vector is too small).
    base_stream_t(size_t points, int gpu, bool later = false) : cap(points), copy(gpu)
    {
        if (!later)
            for (auto& b : buf)
                b.reserve(cap, true);
    }
    affine_dev* buffer(int k)
    {
        if (lent)
            return lent + k * cap;
        buf[k].reserve(cap, true);
        return buf[k];
    }
    static size_t bytes_for(size_t points) { return 2 * points * sizeof(affine_dev); }
    ~base_stream_t() { (void)cudaStreamSynchronize(copy); }
    base_stream_t(const base_stream_t&) = delete;
    base_stream_t& operator=(const base_stream_t&) = delete;
    size_t bytes() const { return buf[0].bytes() + buf[1].bytes(); }
};

// Two events the driver orders its streams with (no timing).
struct msm_events_t {
    event_t a, b;
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

// The bucket integration of every window of shape s in ws.buckets, on st: spread over the GPU
// where lgk_for says so (msm_kernels.cuh), else sppark's one block per window.
template<class bucket>
static void msm_integrate(msm_ws_t<bucket>& ws, const msm_shape_t& s, cudaStream_t st)
{
    const uint32_t nbits = fr_t::bit_length();
    const size_t shared = sizeof(bucket) * MSM_NTHREADS / bucket::degree;
    const uint32_t lgk = msm_ws_t<bucket>::lgk_for(s, ws.sms);
    if constexpr (bucket::degree == 1) {
        if (lgk) {
            cuzk_integrate_fine<bucket><<<dim3(1u << lgk, s.nwins), MSM_NTHREADS, shared, st>>>(
                ws.buckets.get(), s.wbits, nbits, lgk, ws.fine.get());
            CUDA_OK(cudaGetLastError());
            cuzk_integrate_join<bucket><<<s.nwins, MSM_NTHREADS, 0, st>>>(
                ws.buckets.get(), s.wbits, nbits, lgk, ws.fine.get());
            CUDA_OK(cudaGetLastError());
            return;
        }
    }
    integrate<bucket><<<s.nwins, MSM_NTHREADS, shared, st>>>(ws.buckets.get(), s.nwins, s.wbits,
                                                             nbits);
    CUDA_OK(cudaGetLastError());
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
                               uint32_t sid, base_stream_t<affine_dev>* sb = nullptr,
                               size_t max_stride = SIZE_MAX, bool tuned = false)
{
    typedef typename bucket::mem_t bucket_d;
    msm_shape_t s = msm_shape(n, sb ? sb->cap : max_stride, tuned);
    CUDA_OK(cudaMemsetAsync(wins, 0, (s.nwins + 1) * sizeof(bucket_d), st));
    if (n == 0)
        return s;
    ws.reserve(s);
    const uint32_t nbits = fr_t::bit_length();
    const uint32_t row = 1u << (s.wbits - 1);
    uint8_t* temp = ws.temp_for(s);
    vec2d_t<uint2> temps{(uint2*)temp, (unsigned)s.stride};
    vec2d_t<uint32_t> digits{(uint32_t*)(temp + s.stride * 2 * sizeof(uint2)),
                             (unsigned)s.stride};
    vec2d_t<uint32_t> hist{ws.hist.get(), row};
    // Per call, on this GPU: the most threads a block of it may have depends on the model.
    const unsigned acc_threads = max_threads(accumulate<bucket, affine_dev>);

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
            CUDA_OK(cudaMemcpyAsync(sb->buffer(k), bases + off, num * sizeof(affine_dev),
                                    cudaMemcpyHostToDevice, sb->copy));
            CUDA_OK(cudaEventRecord(sb->copied[k], sb->copy));
            CUDA_OK(cudaStreamWaitEvent(st, sb->copied[k], 0));
            pts = sb->buffer(k);
        }
        CUDA_OK(cudaStreamWaitEvent(st, ev.b, 0));
        // The bucket of digit +-1 in window 0: a plain sum (sppark's arrangement).
        batch_addition<bucket><<<gpu.sm_count(), BATCH_ADD_BLOCK_SIZE, 0, st>>>(
            ws.parts.get(), pts, num, digits[0], hist[0][0]);
        CUDA_OK(cudaGetLastError());
        launch_coop(st, accumulate<bucket, affine_dev>, dim3(gpu.sm_count()),
                    dim3(acc_threads), 0, ws.buckets.get(), s.nwins, s.wbits,
                    const_cast<affine_dev*>(pts), digits, hist, sid);
        CUDA_OK(cudaEventRecord(ev.a, st));
        if (sb)
            CUDA_OK(cudaEventRecord(sb->freed[k], st));
        msm_integrate(ws, s, st);
        cuzk_msm_windows<bucket><<<s.nwins, MSM_NTHREADS, 0, st>>>(ws.buckets.get(), s.wbits, nbits,
                                                                   wins);
        CUDA_OK(cudaGetLastError());
        cuzk_sum_into<bucket><<<1, 256, 0, st>>>(ws.parts.get(), (uint32_t)ws.n_parts, wins + s.nwins);
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
    batch_addition<bucket><<<gpu.sm_count(), BATCH_ADD_BLOCK_SIZE, 0, st>>>(ws.parts.get(), bases,
                                                                           (size_t)n, idx, *d_n);
    CUDA_OK(cudaGetLastError());
    cuzk_sum_into<bucket><<<1, 256, 0, st>>>(ws.parts.get(), (uint32_t)ws.n_parts, out);
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
                                                    sid, nullptr, CUZK_TAIL_STRIDE);
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


#endif  // CUZK_MSM_CUH
