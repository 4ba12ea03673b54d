/* The C interface between cuzk's Rust code (src/sys/) and its CUDA code (kernels/): every
 * struct and prototype the two share, in plain C (the .cu files include it; the Rust side
 * mirrors it with #[repr(C)] types whose sizes and offsets are pinned by the same literals as
 * the static assertions at the end of this file, so a change on either side alone fails that
 * side's build).
 *
 * Errors, one convention for every entry point that can fail: the return value is
 *   CUZK_KERNELS_OK (0)   success;
 *   > 0                   the cudaError_t of the CUDA call that failed;
 *   CUZK_KERNELS_EINVAL   the arguments do not fit (sizes, tables, a handle of another GPU);
 *   CUZK_KERNELS_EHOST    a host-side failure (out of host memory, another C++ exception);
 *   CUZK_KERNELS_EWRONG   a kernel's output failed its check;
 * and on failure `err` holds a NUL-terminated message (at most errlen - 1 bytes; `err` may be
 * NULL when errlen is 0). Out-handles are written only on success. Nothing throws across this
 * boundary.
 *
 * Scalars are BLS12-381 Fr in Montgomery form (blst_fr, 32 bytes); points are blst's affine
 * layouts (G1 96 bytes, G2 192; all zeros is the point at infinity); density and class bitmaps
 * are 64-bit words, least significant bit first.
 *
 * Thread-safety: calls on different GPUs may run at once; the calls of groth16.cu on one GPU
 * must not overlap, except uploads into different stages (they share sppark's streams of that
 * GPU); a cuzk_fixed_base handle is used by one thread at a time. */

#ifndef CUZK_KERNELS_H
#define CUZK_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUZK_KERNELS_OK 0
#define CUZK_KERNELS_EINVAL (-1)
#define CUZK_KERNELS_EHOST (-2)
#define CUZK_KERNELS_EWRONG (-3)

typedef struct cuzk_fr {
    uint64_t limbs[4];
} cuzk_fr;

/* ---- probe.cu: discovery and a launch check (static CUDA runtime: these report an error on
 * machines without the NVIDIA driver) ---- */

struct cuzk_cuda_device {
    int ordinal;
    int major;
    int minor;
    int multiprocessors;
    unsigned long long total_mem;
    unsigned long long free_mem;
    char name[256];
};

/* The compute capabilities the kernels were built for ("90", "80,90"); a static string. */
const char* cuzk_cuda_archs(void);
/* The number of devices (0 without a driver) and the driver version. */
int cuzk_cuda_probe(int* count, int* driver_version, char* err, size_t errlen);
/* Host threads waiting for this device sleep rather than spin (before its context exists). */
int cuzk_cuda_set_blocking_sync(int ordinal, char* err, size_t errlen);
/* Properties and free memory of one device (`*out` zeroed first, `name` NUL-terminated). */
int cuzk_cuda_device_info(int ordinal, struct cuzk_cuda_device* out, char* err, size_t errlen);
/* A small kernel whose output is checked (CUZK_KERNELS_EWRONG where it is wrong). */
int cuzk_cuda_launch_check(int ordinal, char* err, size_t errlen);

/* ---- groth16.cu: the Groth16 prover ---- */

/* A circuit's parameters on one GPU (resident or streamed), a partition's device buffers with
 * their copy stream, and a circuit's recording on one GPU. */
typedef struct cuzk_gpu_srs cuzk_gpu_srs;
typedef struct cuzk_gpu_stage cuzk_gpu_stage;
typedef struct cuzk_gpu_rec cuzk_gpu_rec;

/* One partition, as the host holds it: a, b, c (abc_size each, at most the domain), the inputs
 * and aux values, and the A/B query densities (one bit per variable). */
struct cuzk_gpu_input {
    const cuzk_fr* a;
    const cuzk_fr* b;
    const cuzk_fr* c;
    size_t abc_size;
    uint32_t lg_domain;
    const cuzk_fr* inp;
    size_t n_inp;
    const cuzk_fr* aux;
    size_t n_aux;
    const uint64_t* a_aux_density;
    const uint64_t* b_inp_density;
    const uint64_t* b_aux_density;
};

/* One matrix of a recording: rows + 1 row starts, `terms` columns (inputs marked by the top
 * bit) and coefficient codes. */
struct cuzk_gpu_matrix {
    const uint32_t* row_start;
    const uint32_t* cols;
    const uint16_t* coeffs;
    size_t terms;
};

/* One partition's compact witness: the inputs, the aux values' classes (2 bits each, 32 per
 * word: 0 zero, 1 one, 2 other), the others' indices and values, and the densities. */
struct cuzk_gpu_witness {
    uint32_t lg_domain;
    const cuzk_fr* inp;
    size_t n_inp;
    const uint64_t* classes;
    size_t n_aux;
    const uint32_t* oth_idx;
    const cuzk_fr* oth_val;
    size_t n_oth;
    const uint64_t* a_aux_density;
    const uint64_t* b_inp_density;
    const uint64_t* b_aux_density;
};

/* Indices into cuzk_gpu_output.ms: the time of each stage, in milliseconds. */
enum cuzk_gpu_stage_time {
    CUZK_MS_UPLOAD = 0, /* the upload with the A/B compaction (it overlaps other kernels) */
    CUZK_MS_NTT = 1,    /* the h chain */
    CUZK_MS_H = 2,
    CUZK_MS_SPLIT = 3,  /* classifying the L, A, B scalars (part of the upload) */
    CUZK_MS_L = 4,
    CUZK_MS_A = 5,
    CUZK_MS_B1 = 6,
    CUZK_MS_B2 = 7
};

/* The five MSM results, affine (x then y, Montgomery limbs), and the stage times. */
struct cuzk_gpu_output {
    uint64_t h[12], l[12], a[12], b1[12];
    uint64_t b2[24];
    double ms[8];
};

/* Page-locks `bytes` at `p` and maps them for every GPU (streamed parameters); the memory
 * stays allocated until cuzk_gpu_unpin. */
int cuzk_gpu_pin(void* p, size_t bytes, char* err, size_t errlen);
void cuzk_gpu_unpin(void* p);
/* A circuit's bases (nb points each in b1 and b2) on GPU `ordinal`: copied into device memory,
 * or (plan & CUZK_PLAN_STREAMED) left in host memory pinned by cuzk_gpu_pin, which must
 * outlive *out. With CUZK_PLAN_LEAN the H MSM's buffers are not made now: a lean stage's proof
 * lends them its free working vector. `plan` takes the CUZK_PLAN_* flags below. */
int cuzk_gpu_srs_new(int ordinal, const void* h, size_t nh, const void* l, size_t nl,
                     const void* a, size_t na, const void* b1, const void* b2, size_t nb,
                     uint32_t plan, cuzk_gpu_srs** out, char* err, size_t errlen);
/* The kinds of bases, for cuzk_gpu_srs_fill. */
enum {
    CUZK_BASES_H = 0,
    CUZK_BASES_L = 1,
    CUZK_BASES_A = 2,
    CUZK_BASES_B1 = 3,
    CUZK_BASES_B2 = 4
};
/* Resident bases filled in piece by piece, so that the host never holds them whole: a handle
 * made by cuzk_gpu_srs_new without CUZK_PLAN_STREAMED and with h, l, a, b1 and b2 all NULL has
 * its device arrays allocated and empty; each call copies the n points at src (as the `.params`
 * file's uncompressed points are laid out in memory: G1 96 bytes, G2 192) to the points
 * [first, first + n) of kind `kind` and returns when done. Every point of every kind must be
 * filled once before cuzk_gpu_prove takes the handle (it answers CUZK_KERNELS_EINVAL until
 * then); a range past the end of its kind, or with points filled before, is refused
 * (CUZK_KERNELS_EINVAL, nothing copied). A copy that fails leaves its range unfilled. Calls
 * on one handle must not overlap. */
int cuzk_gpu_srs_fill(cuzk_gpu_srs* s, uint32_t kind, size_t first, const void* src, size_t n,
                      char* err, size_t errlen);
/* Device memory held (bases where resident, and the working buffers), in bytes. */
size_t cuzk_gpu_srs_bytes(const cuzk_gpu_srs* s);
/* Points of every kind still to fill (cuzk_gpu_srs_fill); 0 for a handle made filled. */
size_t cuzk_gpu_srs_unfilled(const cuzk_gpu_srs* s);
/* Frees the handle (NULL is ignored) once its GPU's work is done. */
void cuzk_gpu_srs_free(cuzk_gpu_srs* s);
/* How a GPU proves a circuit (flags of cuzk_gpu_working_bytes):
 *   CUZK_PLAN_STREAMED    the bases stay in pinned host memory (cuzk_gpu_srs_new, streamed);
 *   CUZK_PLAN_LEAN        lean stages (cuzk_gpu_stage_new): a stage holds the compact witness
 *                         and the split lists only, and a, b, c are computed one at a time into
 *                         two working vectors of the domain when the partition is proved;
 *   CUZK_PLAN_REC_MAPPED  the recording is read from pinned host memory (cuzk_gpu_rec_new). */
#define CUZK_PLAN_STREAMED 1u
/* The largest domain the prover takes, 2^28: the NTT's twiddle tables (sppark's
 * MAX_LG_DOMAIN_SIZE for BLS12-381) stop there. A larger lg_domain answers CUZK_KERNELS_EINVAL
 * (cuzk_gpu_working_bytes: SIZE_MAX). */
#define CUZK_MAX_LG_DOMAIN 28u
#define CUZK_PLAN_LEAN 2u
#define CUZK_PLAN_REC_MAPPED 4u
/* Device memory a GPU needs beside the resident bases to prove a circuit of this size with the
 * plan `flags`: `stages` partitions' buffers (na, nb at most n_inp + n_aux), the prover's
 * working buffers at their largest, a recording of a domain of rows (unless mapped) and a
 * margin for the CUDA context. The witnesses' values that are neither 0 nor 1 are
 * `others_per_1024` of them (0: 1 in 32, a PoRep witness's few; a dense witness's grow the
 * stages and the tails' gathered bases) and the recording takes `rec_bytes_per_row` bytes a
 * row (0: ~45). SIZE_MAX for an lg_domain past CUZK_MAX_LG_DOMAIN or a share past 1024. The
 * sizes that cuzk_gpu_srs_new, cuzk_gpu_stage_new and cuzk_gpu_rec_new allocate come from
 * the same functions. */
size_t cuzk_gpu_working_bytes(uint32_t lg_domain, size_t n_inp, size_t n_aux, size_t stages,
                              uint32_t flags, uint32_t others_per_1024,
                              uint32_t rec_bytes_per_row);
/* Caps the device memory the prover's buffers may hold on GPU `ordinal` (CUDA's numbering,
 * below 64): an allocation past it fails with cudaErrorMemoryAllocation, as on a card with no
 * more memory. SIZE_MAX: no cap (the default). Thread-safe; applies to later allocations. */
int cuzk_gpu_set_mem_cap(int ordinal, size_t bytes);
/* The shape of the H MSM, where it has 2^16 points or more, from the next call on (the tail
 * MSMs keep theirs): windows of `wbits` bits (CUZK_MSM_MIN_WBITS..CUZK_MSM_MAX_WBITS) in
 * `batches` batches (at most CUZK_MSM_MAX_BATCHES); 0 keeps the prover's own choice
 * (CUZK_MSM_WBITS and CUZK_MSM_BATCHES set the same at start). For tuning: the buffers grow to
 * the new shape and stay at their largest, and device memory plans made before do not count
 * the growth. Thread-safe; the two settings change together. CUZK_KERNELS_EINVAL when out of
 * range (nothing changes). */
int cuzk_gpu_msm_tune(uint32_t wbits, uint32_t batches);
/* The H MSM's shape as cuzk_gpu_msm_tune (or the environment) last set it; 0: the prover's
 * own choice. Thread-safe; either pointer may be NULL. */
void cuzk_gpu_msm_tuning(uint32_t* wbits, uint32_t* batches);
#define CUZK_MSM_MIN_WBITS 10u
#define CUZK_MSM_MAX_WBITS 22u
#define CUZK_MSM_MAX_BATCHES 64u
/* The device memory the prover's buffers hold on GPU `ordinal` now and at their peak. */
void cuzk_gpu_mem_stats(int ordinal, size_t* used, size_t* peak);
/* Device buffers and a copy stream for one partition of the circuit `s` holds: a full stage
 * (lean == 0), or a lean one (the first also makes the prover's two working vectors). */
int cuzk_gpu_stage_new(const cuzk_gpu_srs* s, uint32_t lg_domain, size_t n_inp, size_t n_aux,
                       int lean, cuzk_gpu_stage** out, char* err, size_t errlen);
void cuzk_gpu_stage_free(cuzk_gpu_stage* g);
/* Copies one partition into a full stage and compacts its A and B scalars there; returns when
 * done (may run while another stage's partition is proved on the same GPU). A lean stage
 * answers CUZK_KERNELS_EINVAL. */
int cuzk_gpu_upload(cuzk_gpu_stage* g, const struct cuzk_gpu_input* in, char* err,
                    size_t errlen);
/* A circuit's recording on the GPU holding `s`, after checking its tables: copied to the device,
 * or (mapped != 0) read in place, the tables then pinned by cuzk_gpu_pin and outliving *out. */
int cuzk_gpu_rec_new(const cuzk_gpu_srs* s, size_t rows, size_t n_inp, size_t n_aux,
                     const struct cuzk_gpu_matrix* m, const cuzk_fr* dict, size_t n_dict,
                     int mapped, cuzk_gpu_rec** out, char* err, size_t errlen);
size_t cuzk_gpu_rec_bytes(const cuzk_gpu_rec* r);
void cuzk_gpu_rec_free(cuzk_gpu_rec* r);
/* Copies a compact witness into the stage, computes a, b, c from the recording and checks
 * a·b = c on every row: *bad_row is the first that does not hold (UINT64_MAX when all do; the
 * stage is then ready for cuzk_gpu_prove). A lean stage keeps no a, b, c: it checks the rows
 * in one pass and computes a, b, c again from `r` at proof time, so `r` must outlive the proof
 * (other values must be listed in index order). */
int cuzk_gpu_upload_witness(cuzk_gpu_stage* g, const cuzk_gpu_rec* r,
                            const struct cuzk_gpu_witness* w, uint64_t* bad_row, char* err,
                            size_t errlen);
/* Proves the partition uploaded into `g` (which then holds none). */
int cuzk_gpu_prove(const cuzk_gpu_srs* s, cuzk_gpu_stage* g, struct cuzk_gpu_output* out,
                   char* err, size_t errlen);

/* ---- fixed_base.cu: k_i · G for the parameter generator ---- */

typedef struct cuzk_fixed_base cuzk_fixed_base;

/* A comb table of `entries` affine points (G2 when `g2`) for windows of `wbits` bits on GPU
 * `ordinal`; `windows` must be the count for `wbits`, `entries` windows · 2^(wbits-1). */
int cuzk_fixed_base_new(int ordinal, int g2, uint32_t wbits, uint32_t windows,
                        const void* table, size_t entries, cuzk_fixed_base** out, char* err,
                        size_t errlen);
/* out[i] = scalars[i] · G for i < n, written as a .params file holds points (n · 96 bytes in
 * G1, n · 192 in G2). Blocks until done. */
int cuzk_fixed_base_mul(cuzk_fixed_base* f, const void* scalars, size_t n, void* out,
                        char* err, size_t errlen);
void cuzk_fixed_base_free(cuzk_fixed_base* f);

#ifdef __cplusplus
}  /* extern "C" */
#endif

/* The layouts the Rust side pins with the same literals (src/sys/kernels.rs), on 64-bit
 * targets. */
#if defined(__cplusplus)
#define CUZK_LAYOUT(c, m) static_assert(c, m)
#else
#define CUZK_LAYOUT(c, m) _Static_assert(c, m)
#endif
#define CUZK_AT(t, f, o) CUZK_LAYOUT(offsetof(struct t, f) == (o), #t "." #f)
CUZK_LAYOUT(sizeof(void*) == 8 && sizeof(size_t) == 8, "a 64-bit target");
CUZK_LAYOUT(sizeof(cuzk_fr) == 32, "cuzk_fr");
CUZK_LAYOUT(CUZK_MAX_LG_DOMAIN == 28 && CUZK_PLAN_STREAMED == 1 && CUZK_PLAN_LEAN == 2 &&
                CUZK_PLAN_REC_MAPPED == 4 && CUZK_BASES_H == 0 && CUZK_BASES_B2 == 4 &&
                CUZK_MSM_MIN_WBITS == 10 && CUZK_MSM_MAX_WBITS == 22 &&
                CUZK_MSM_MAX_BATCHES == 64,
            "the constants");
CUZK_LAYOUT(sizeof(struct cuzk_cuda_device) == 288, "cuzk_cuda_device");
CUZK_AT(cuzk_cuda_device, major, 4);
CUZK_AT(cuzk_cuda_device, minor, 8);
CUZK_AT(cuzk_cuda_device, multiprocessors, 12);
CUZK_AT(cuzk_cuda_device, total_mem, 16);
CUZK_AT(cuzk_cuda_device, free_mem, 24);
CUZK_AT(cuzk_cuda_device, name, 32);
CUZK_LAYOUT(sizeof(struct cuzk_gpu_input) == 96, "cuzk_gpu_input");
CUZK_AT(cuzk_gpu_input, b, 8);
CUZK_AT(cuzk_gpu_input, c, 16);
CUZK_AT(cuzk_gpu_input, abc_size, 24);
CUZK_AT(cuzk_gpu_input, lg_domain, 32);
CUZK_AT(cuzk_gpu_input, inp, 40);
CUZK_AT(cuzk_gpu_input, n_inp, 48);
CUZK_AT(cuzk_gpu_input, aux, 56);
CUZK_AT(cuzk_gpu_input, n_aux, 64);
CUZK_AT(cuzk_gpu_input, a_aux_density, 72);
CUZK_AT(cuzk_gpu_input, b_inp_density, 80);
CUZK_AT(cuzk_gpu_input, b_aux_density, 88);
CUZK_LAYOUT(sizeof(struct cuzk_gpu_matrix) == 32, "cuzk_gpu_matrix");
CUZK_AT(cuzk_gpu_matrix, cols, 8);
CUZK_AT(cuzk_gpu_matrix, coeffs, 16);
CUZK_AT(cuzk_gpu_matrix, terms, 24);
CUZK_LAYOUT(sizeof(struct cuzk_gpu_witness) == 88, "cuzk_gpu_witness");
CUZK_AT(cuzk_gpu_witness, inp, 8);
CUZK_AT(cuzk_gpu_witness, n_inp, 16);
CUZK_AT(cuzk_gpu_witness, classes, 24);
CUZK_AT(cuzk_gpu_witness, n_aux, 32);
CUZK_AT(cuzk_gpu_witness, oth_idx, 40);
CUZK_AT(cuzk_gpu_witness, oth_val, 48);
CUZK_AT(cuzk_gpu_witness, n_oth, 56);
CUZK_AT(cuzk_gpu_witness, a_aux_density, 64);
CUZK_AT(cuzk_gpu_witness, b_inp_density, 72);
CUZK_AT(cuzk_gpu_witness, b_aux_density, 80);
CUZK_LAYOUT(sizeof(struct cuzk_gpu_output) == 640, "cuzk_gpu_output");
CUZK_AT(cuzk_gpu_output, l, 96);
CUZK_AT(cuzk_gpu_output, a, 192);
CUZK_AT(cuzk_gpu_output, b1, 288);
CUZK_AT(cuzk_gpu_output, b2, 384);
CUZK_AT(cuzk_gpu_output, ms, 576);
#undef CUZK_AT
#undef CUZK_LAYOUT

#endif /* CUZK_KERNELS_H */
