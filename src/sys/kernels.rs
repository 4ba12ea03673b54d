//! The Rust side of `kernels/cuzk_kernels.h`: every struct and prototype shared with the CUDA
//! code, mirrored field for field, and the header's one error convention ([`call`]). The
//! header pins each struct's size and field offsets with static assertions; the same literals
//! are asserted here with `offset_of!`, so a struct changed on one side alone fails that side's
//! build. The safe wrappers are in `cuda`, `gpu_prover` and `fixed_base`.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::{offset_of, size_of};

use blstrs::Scalar as Fr;

/// `CUZK_KERNELS_EINVAL`: the arguments do not fit.
pub const EINVAL: c_int = -1;
/// `CUZK_KERNELS_EHOST`: a host-side failure (out of host memory, a C++ exception).
pub const EHOST: c_int = -2;
/// `CUZK_KERNELS_EWRONG`: a kernel's output failed its check.
pub const EWRONG: c_int = -3;
/// `cudaErrorMemoryAllocation`.
pub const CUDA_OUT_OF_MEMORY: c_int = 2;

/// A failed call into kernels/: the header's code (a `cudaError_t` when positive) and the
/// message the callee wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    pub code: c_int,
    pub message: String,
}

impl KernelError {
    /// Arguments that do not fit, found before any call (`CUZK_KERNELS_EINVAL`).
    pub fn invalid(message: impl Into<String>) -> KernelError {
        KernelError {
            code: EINVAL,
            message: message.into(),
        }
    }

    /// Whether the device (or the host, for a host-side failure) ran out of memory.
    pub fn out_of_memory(&self) -> bool {
        self.code == CUDA_OUT_OF_MEMORY
    }
}

impl std::fmt::Display for KernelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<KernelError> for String {
    fn from(e: KernelError) -> String {
        e.message
    }
}

/// Runs an entry point that follows the header's error convention, handing it an error buffer
/// and its length: `Ok` where it returned `CUZK_KERNELS_OK`, else its code and message.
pub fn call(f: impl FnOnce(*mut c_char, usize) -> c_int) -> Result<(), KernelError> {
    let mut err = [0 as c_char; 1024];
    let code = f(err.as_mut_ptr(), err.len());
    if code == 0 {
        return Ok(());
    }
    let mut message = text(&err);
    if message.is_empty() {
        message = format!("kernels/ call failed with code {code}");
    }
    Err(KernelError { code, message })
}

/// A handle an entry point reported as made (the header writes out-handles only on success).
pub fn non_null<T>(raw: *mut T) -> Result<*mut T, String> {
    if raw.is_null() {
        return Err("kernels/ returned no handle".into());
    }
    Ok(raw)
}

/// The NUL-terminated text in a zeroed buffer a callee wrote into (at most `len - 1` bytes and
/// a NUL, by snprintf).
pub fn text(buf: &[c_char]) -> String {
    if !buf.contains(&0) {
        return String::new();
    }
    // SAFETY: the buffer holds a NUL (checked above), so the C string ends inside it.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// `struct cuzk_cuda_device`.
#[repr(C)]
pub struct CudaDeviceC {
    pub ordinal: c_int,
    pub major: c_int,
    pub minor: c_int,
    pub multiprocessors: c_int,
    pub total_mem: u64,
    pub free_mem: u64,
    pub name: [c_char; 256],
}

/// `CUZK_MAX_LG_DOMAIN`: the largest domain the prover takes (the NTT's twiddles stop there).
pub const MAX_LG_DOMAIN: u32 = 28;

/// `CUZK_PLAN_*`: how a GPU proves a circuit (flags of `cuzk_gpu_working_bytes`).
pub const PLAN_STREAMED: u32 = 1;
pub const PLAN_LEAN: u32 = 2;
pub const PLAN_REC_MAPPED: u32 = 4;

/// `CUZK_BASES_*`: the kinds of bases `cuzk_gpu_srs_fill` takes.
pub const BASES_H: u32 = 0;
pub const BASES_L: u32 = 1;
pub const BASES_A: u32 = 2;
pub const BASES_B1: u32 = 3;
pub const BASES_B2: u32 = 4;

/// `CUZK_MSM_*`: the range of `cuzk_gpu_msm_tune`.
pub const MSM_MIN_WBITS: u32 = 10;
pub const MSM_MAX_WBITS: u32 = 22;
pub const MSM_MAX_BATCHES: u32 = 64;

/// Opaque handles: `cuzk_gpu_srs`, `cuzk_gpu_stage`, `cuzk_gpu_rec`, `cuzk_fixed_base`.
#[repr(C)]
pub struct SrsC {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct StageC {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct RecC {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct FixedBaseC {
    _opaque: [u8; 0],
}

/// `struct cuzk_gpu_input`.
#[repr(C)]
pub struct InputC {
    pub a: *const Fr,
    pub b: *const Fr,
    pub c: *const Fr,
    pub abc_size: usize,
    pub lg_domain: u32,
    pub inp: *const Fr,
    pub n_inp: usize,
    pub aux: *const Fr,
    pub n_aux: usize,
    pub a_aux_density: *const u64,
    pub b_inp_density: *const u64,
    pub b_aux_density: *const u64,
}

/// `struct cuzk_gpu_matrix`.
#[repr(C)]
pub struct MatrixC {
    pub row_start: *const u32,
    pub cols: *const u32,
    pub coeffs: *const u16,
    pub terms: usize,
}

/// `struct cuzk_gpu_witness`.
#[repr(C)]
pub struct WitnessC {
    pub lg_domain: u32,
    pub inp: *const Fr,
    pub n_inp: usize,
    pub classes: *const u64,
    pub n_aux: usize,
    pub oth_idx: *const u32,
    pub oth_val: *const Fr,
    pub n_oth: usize,
    pub a_aux_density: *const u64,
    pub b_inp_density: *const u64,
    pub b_aux_density: *const u64,
}

/// `struct cuzk_gpu_output`; `ms` by `enum cuzk_gpu_stage_time` (upload, ntt, h, split, l, a,
/// b1, b2).
#[repr(C)]
#[derive(Default)]
pub struct OutputC {
    pub h: [u64; 12],
    pub l: [u64; 12],
    pub a: [u64; 12],
    pub b1: [u64; 12],
    pub b2: [u64; 24],
    pub ms: [f64; 8],
}

// The header's layout assertions, literal for literal.
const _: () = {
    assert!(size_of::<usize>() == 8 && size_of::<*const u8>() == 8);
    assert!(size_of::<Fr>() == 32);
    assert!(size_of::<CudaDeviceC>() == 288);
    assert!(offset_of!(CudaDeviceC, major) == 4);
    assert!(offset_of!(CudaDeviceC, minor) == 8);
    assert!(offset_of!(CudaDeviceC, multiprocessors) == 12);
    assert!(offset_of!(CudaDeviceC, total_mem) == 16);
    assert!(offset_of!(CudaDeviceC, free_mem) == 24);
    assert!(offset_of!(CudaDeviceC, name) == 32);
    assert!(size_of::<InputC>() == 96);
    assert!(offset_of!(InputC, b) == 8);
    assert!(offset_of!(InputC, c) == 16);
    assert!(offset_of!(InputC, abc_size) == 24);
    assert!(offset_of!(InputC, lg_domain) == 32);
    assert!(offset_of!(InputC, inp) == 40);
    assert!(offset_of!(InputC, n_inp) == 48);
    assert!(offset_of!(InputC, aux) == 56);
    assert!(offset_of!(InputC, n_aux) == 64);
    assert!(offset_of!(InputC, a_aux_density) == 72);
    assert!(offset_of!(InputC, b_inp_density) == 80);
    assert!(offset_of!(InputC, b_aux_density) == 88);
    assert!(size_of::<MatrixC>() == 32);
    assert!(offset_of!(MatrixC, cols) == 8);
    assert!(offset_of!(MatrixC, coeffs) == 16);
    assert!(offset_of!(MatrixC, terms) == 24);
    assert!(size_of::<WitnessC>() == 88);
    assert!(offset_of!(WitnessC, inp) == 8);
    assert!(offset_of!(WitnessC, n_inp) == 16);
    assert!(offset_of!(WitnessC, classes) == 24);
    assert!(offset_of!(WitnessC, n_aux) == 32);
    assert!(offset_of!(WitnessC, oth_idx) == 40);
    assert!(offset_of!(WitnessC, oth_val) == 48);
    assert!(offset_of!(WitnessC, n_oth) == 56);
    assert!(offset_of!(WitnessC, a_aux_density) == 64);
    assert!(offset_of!(WitnessC, b_inp_density) == 72);
    assert!(offset_of!(WitnessC, b_aux_density) == 80);
    assert!(size_of::<OutputC>() == 640);
    assert!(offset_of!(OutputC, l) == 96);
    assert!(offset_of!(OutputC, a) == 192);
    assert!(offset_of!(OutputC, b1) == 288);
    assert!(offset_of!(OutputC, b2) == 384);
    assert!(offset_of!(OutputC, ms) == 576);
};

// sppark's device table (`select_gpu`, `ngpus`, ...), which kernels/groth16.cu calls, is in the
// native library the sppark crate builds (its util/all_gpus.cpp); naming the crate links it.
extern crate sppark as _;

extern "C" {
    // probe.cu
    pub fn cuzk_cuda_archs() -> *const c_char;
    pub fn cuzk_cuda_probe(
        count: *mut c_int,
        driver_version: *mut c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn cuzk_cuda_set_blocking_sync(ordinal: c_int, err: *mut c_char, errlen: usize) -> c_int;
    pub fn cuzk_cuda_device_info(
        ordinal: c_int,
        out: *mut CudaDeviceC,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn cuzk_cuda_launch_check(ordinal: c_int, err: *mut c_char, errlen: usize) -> c_int;

    // groth16.cu
    pub fn cuzk_gpu_pin(p: *mut c_void, bytes: usize, err: *mut c_char, errlen: usize) -> c_int;
    pub fn cuzk_gpu_unpin(p: *mut c_void);
    #[allow(clippy::too_many_arguments)]
    pub fn cuzk_gpu_srs_new(
        ordinal: c_int,
        h: *const c_void,
        nh: usize,
        l: *const c_void,
        nl: usize,
        a: *const c_void,
        na: usize,
        b1: *const c_void,
        b2: *const c_void,
        nb: usize,
        plan: u32,
        out: *mut *mut SrsC,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn cuzk_gpu_srs_fill(
        s: *mut SrsC,
        kind: u32,
        first: usize,
        src: *const c_void,
        n: usize,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn cuzk_gpu_msm_tune(wbits: u32, batches: u32) -> c_int;
    pub fn cuzk_gpu_msm_tuning(wbits: *mut u32, batches: *mut u32);
    pub fn cuzk_gpu_srs_bytes(s: *const SrsC) -> usize;
    pub fn cuzk_gpu_srs_unfilled(s: *const SrsC) -> usize;
    pub fn cuzk_gpu_srs_free(s: *mut SrsC);
    pub fn cuzk_gpu_working_bytes(
        lg_domain: u32,
        n_inp: usize,
        n_aux: usize,
        stages: usize,
        flags: u32,
        others_per_1024: u32,
        rec_bytes_per_row: u32,
    ) -> usize;
    pub fn cuzk_gpu_set_mem_cap(ordinal: c_int, bytes: usize) -> c_int;
    pub fn cuzk_gpu_mem_stats(ordinal: c_int, used: *mut usize, peak: *mut usize);
    #[allow(clippy::too_many_arguments)]
    pub fn cuzk_gpu_stage_new(
        s: *const SrsC,
        lg_domain: u32,
        n_inp: usize,
        n_aux: usize,
        lean: c_int,
        out: *mut *mut StageC,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn cuzk_gpu_stage_free(g: *mut StageC);
    pub fn cuzk_gpu_upload(
        g: *mut StageC,
        input: *const InputC,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    #[allow(clippy::too_many_arguments)]
    pub fn cuzk_gpu_rec_new(
        s: *const SrsC,
        rows: usize,
        n_inp: usize,
        n_aux: usize,
        m: *const MatrixC,
        dict: *const Fr,
        n_dict: usize,
        mapped: c_int,
        out: *mut *mut RecC,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn cuzk_gpu_rec_bytes(r: *const RecC) -> usize;
    pub fn cuzk_gpu_rec_free(r: *mut RecC);
    pub fn cuzk_gpu_upload_witness(
        g: *mut StageC,
        r: *const RecC,
        w: *const WitnessC,
        bad_row: *mut u64,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn cuzk_gpu_prove(
        s: *const SrsC,
        g: *mut StageC,
        out: *mut OutputC,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;

    // fixed_base.cu
    #[allow(clippy::too_many_arguments)]
    pub fn cuzk_fixed_base_new(
        ordinal: c_int,
        g2: c_int,
        wbits: u32,
        windows: u32,
        table: *const c_void,
        entries: usize,
        out: *mut *mut FixedBaseC,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn cuzk_fixed_base_mul(
        f: *mut FixedBaseC,
        scalars: *const c_void,
        n: usize,
        out: *mut c_void,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn cuzk_fixed_base_free(f: *mut FixedBaseC);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_convention_carries_code_and_message() {
        let e = call(|err, len| {
            // SAFETY: writes inside the buffer of the length given.
            unsafe {
                for (i, b) in b"no room".iter().enumerate().take(len - 1) {
                    *err.add(i) = *b as c_char;
                }
            }
            CUDA_OUT_OF_MEMORY
        })
        .unwrap_err();
        assert_eq!(e.message, "no room");
        assert!(e.out_of_memory());
        let e = call(|_, _| EWRONG).unwrap_err();
        assert_eq!(e.code, EWRONG);
        assert!(e.message.contains("-3"), "{}", e.message);
        assert!(call(|_, _| 0).is_ok());
    }

    #[test]
    fn the_working_set_grows_with_the_circuit_and_the_stages() {
        // SAFETY: arithmetic only, no device needed.
        let w = |lg, aux, stages| unsafe { cuzk_gpu_working_bytes(lg, 10, aux, stages, 0, 0, 0) }
            as u64;
        let one = w(21, 1 << 21, 1);
        let two = w(21, 1 << 21, 2);
        // A partition's buffers at 2^21: a, b, c alone are 3 x 32 x 2^21 bytes.
        assert!(two - one >= 3 * 32 << 21, "{one} {two}");
        assert!(w(27, 1 << 27, 2) > 16 * two);
        // A 32 GiB partition (2^27) with two stages: ~2 x 27 GB of buffers, under 80 GB in all.
        let full = w(27, 130_278_541, 2);
        assert!(full > 50_000_000_000 && full < 80_000_000_000, "{full}");
        // A domain past the NTT's twiddles (2^28) is refused (usize::MAX); 2^28 itself is
        // sized. The hazard: a larger domain accepted would run the NTT past its twiddles.
        // SAFETY: as above.
        assert_eq!(
            unsafe { cuzk_gpu_working_bytes(MAX_LG_DOMAIN + 1, 1, 1, 2, 0, 0, 0) },
            usize::MAX
        );
        // SAFETY: as above.
        assert!(unsafe { cuzk_gpu_working_bytes(MAX_LG_DOMAIN, 1, 1, 2, 0, 0, 0) } < usize::MAX);
    }

    /// A 32 GiB WindowPoSt partition (2^27, 126,902,376 aux values, 99.1% of them neither 0
    /// nor 1, a recording of 67 bytes a row) is sized with its dense witness. The hazard: sized
    /// by PoRep's 1-in-32 guess, the resident lean plan fits an 80 GB card on paper (the H100
    /// chose it: 77,445 MiB), then every partition runs out of device memory at its upload and
    /// waits for room that never comes.
    #[test]
    fn a_dense_witness_is_sized_with_its_others_and_its_recording() {
        let w = |stages, flags, oth, rec| {
            // SAFETY: arithmetic only, no device needed.
            let b =
                unsafe { cuzk_gpu_working_bytes(27, 25_840, 126_902_376, stages, flags, oth, rec) };
            b as u64
        };
        let bases = 60_780_374_232u64; // the WindowPoSt parameter file, resident
        let guessed = bases + w(2, PLAN_LEAN, 0, 0);
        let dense = bases + w(2, PLAN_LEAN, 1016, 68);
        eprintln!("2^27 WindowPoSt, resident lean x2: {guessed} bytes by the guess, {dense} dense");
        for (stages, flags) in [
            (2, 0),
            (1, PLAN_LEAN),
            (2, PLAN_STREAMED),
            (2, PLAN_STREAMED | PLAN_LEAN),
            (1, PLAN_STREAMED | PLAN_LEAN),
            (1, PLAN_STREAMED | PLAN_LEAN | PLAN_REC_MAPPED),
        ] {
            eprintln!(
                "  dense, {stages} stage(s), flags {flags}: {}",
                w(stages, flags, 1016, 68)
            );
        }
        assert!(guessed < 80 << 30, "{guessed}");
        assert!(dense > 80 << 30, "{dense}");
        // Each of the two counts: the others (the stages' values and scalars, the tails'
        // bases: tens of GB) and the recording (23 more bytes a row over the domain).
        assert!(w(2, PLAN_LEAN, 1016, 0) > w(2, PLAN_LEAN, 0, 0) + (20 << 30));
        assert_eq!(w(2, PLAN_LEAN, 0, 68) - w(2, PLAN_LEAN, 0, 0), 23 << 27);
        assert_eq!(
            w(2, PLAN_LEAN | PLAN_REC_MAPPED, 0, 68),
            w(2, PLAN_LEAN | PLAN_REC_MAPPED, 0, 0)
        );
        // 32 per 1024 is the guess's own share: the same size within rounding (the tails'
        // bases fit the lean working vectors either way).
        let (at_guess, guess) = (w(2, PLAN_LEAN, 32, 0), w(2, PLAN_LEAN, 0, 0));
        assert!(
            at_guess.abs_diff(guess) < guess / 1000,
            "{at_guess} {guess}"
        );
        // A share past the whole is refused.
        assert_eq!(w(1, 0, 1025, 0), usize::MAX as u64);
    }

    /// A 32 GiB partition (2^27) proves in 12 GiB with the lean plan (one lean
    /// stage, the bases and the recording in host memory), and each step of the plan needs
    /// less than the one before.
    #[test]
    fn the_lean_plan_fits_a_32gib_partition_in_12_gib() {
        // SAFETY: arithmetic only, no device needed.
        let w = |stages, flags| unsafe {
            cuzk_gpu_working_bytes(27, 328, 130_169_893, stages, flags, 0, 0)
        } as u64;
        let resident = w(2, 0);
        let resident_lean = w(2, PLAN_LEAN);
        let full = w(2, PLAN_STREAMED);
        let lean2 = w(2, PLAN_STREAMED | PLAN_LEAN);
        let lean1 = w(1, PLAN_STREAMED | PLAN_LEAN);
        let small = w(1, PLAN_STREAMED | PLAN_LEAN | PLAN_REC_MAPPED);
        eprintln!("2^27 working sets (bytes): resident full x2 {resident}, resident lean x2 {resident_lean}, streamed full x2 {full}, lean x2 {lean2}, lean x1 {lean1}, lean x1 with the recording in host memory {small}");
        // The resident plan with full stages runs the H MSM in one batch (msm_shape): its
        // digits and sort space for all 2^27 points (~9.1 GB, against ~1.3 GB in batches of
        // 2^24) are counted; a lean plan keeps batches whose digits fit its lent vector.
        assert!(resident > full + (7 << 30), "{resident} {full}");
        assert!(
            resident_lean < resident - (7 << 30),
            "{resident_lean} {resident}"
        );
        assert!(
            full > lean2 && lean2 > lean1 && lean1 > small,
            "{full} {lean2} {lean1} {small}"
        );
        assert!(small <= 12 << 30, "{small}");
        // Two lean vectors of the domain are the floor.
        assert!(small > 2 * 32 << 27, "{small}");
        // With the recording on a 24 GiB card, two lean stages still fit.
        assert!(lean2 <= 24 << 30, "{lean2}");
    }
}
