// The types of cuzk's Groth16 prover on the GPU: sppark's BLS12-381 field and curve types
// (Fp, Fp2, Fr; Jacobian points for results, XYZZ buckets, affine bases) and its MSM and NTT
// headers, included once, in an order that lets sppark's one non-template kernel be renamed.

#ifndef CUZK_TYPES_CUH
#define CUZK_TYPES_CUH

#include <cuda_runtime.h>

#include "../cuzk_kernels.h"

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

// The host's scalars (kernels/cuzk_kernels.h) are sppark's Fr: the same 32 bytes.
static_assert(sizeof(cuzk_fr) == sizeof(fr_t), "scalar layout");
static inline const fr_t* fr_in(const cuzk_fr* p) { return reinterpret_cast<const fr_t*>(p); }

#ifndef __CUDA_ARCH__
// The host-side types match blst's (and so blstrs') layouts, which the Rust side relies on.
static_assert(sizeof(affine_t) == 96 && sizeof(affine2_t) == 192, "host affine layouts");
static_assert(sizeof(affine_d) == 96 && sizeof(affine2_d) == 192, "device affine layouts");
static_assert(sizeof(fr_t) == 32, "scalar layout");
#endif

#endif  // CUZK_TYPES_CUH
