//! Bindings to cuzk's own GPU prover in `kernels/groth16.cu`: parameters resident on one GPU
//! ([`DeviceSrs`]), a circuit's recording beside them ([`DeviceRecording`]), a partition's
//! inputs copied into device buffers ([`Stage::upload`]) or only its compact witness with a, b,
//! c computed there ([`Stage::upload_witness`]), and its h polynomial and five MSMs
//! ([`DeviceSrs::prove`]).
//!
//! The kernels take blst's memory layouts, which `blstrs` wraps transparently: `G1Affine` is a
//! `blst_p1_affine` (x, y in Montgomery form, 96 bytes), `G2Affine` a `blst_p2_affine` (192
//! bytes), `Scalar` a `blst_fr` (32 bytes, Montgomery form). The sizes are checked at compile
//! time below and in the CUDA file.

use std::ffi::{c_int, c_void};

use std::sync::Arc;

use super::{
    kernels::{
        call, cuzk_gpu_mem_stats, cuzk_gpu_msm_tune, cuzk_gpu_msm_tuning, cuzk_gpu_pin,
        cuzk_gpu_prove, cuzk_gpu_rec_bytes, cuzk_gpu_rec_free, cuzk_gpu_rec_new,
        cuzk_gpu_set_mem_cap, cuzk_gpu_srs_bytes, cuzk_gpu_srs_fill, cuzk_gpu_srs_free,
        cuzk_gpu_srs_new, cuzk_gpu_srs_unfilled, cuzk_gpu_stage_free, cuzk_gpu_stage_new,
        cuzk_gpu_unpin, cuzk_gpu_upload, cuzk_gpu_upload_witness, cuzk_gpu_working_bytes, non_null,
        InputC, MatrixC, OutputC, RecC, SrsC, StageC, WitnessC,
    },
    G1Kind, RecordingTables,
};

pub use super::kernels::{
    KernelError, CUDA_OUT_OF_MEMORY, EHOST, EINVAL, EWRONG, MAX_LG_DOMAIN, MSM_MAX_BATCHES,
    MSM_MAX_WBITS, MSM_MIN_WBITS, PLAN_LEAN, PLAN_REC_MAPPED, PLAN_STREAMED,
};
use super::kernels::{BASES_A, BASES_B1, BASES_B2, BASES_H, BASES_L};

use blstrs::{Fp, Fp2, G1Affine, G2Affine, Scalar as Fr};

const _: () = assert!(std::mem::size_of::<G1Affine>() == 96);
const _: () = assert!(std::mem::size_of::<G2Affine>() == 192);
// Density bitmaps arrive as bitvec's `usize` words and are read as 64-bit words.
const _: () = assert!(std::mem::size_of::<usize>() == 8);

/// Device memory a GPU needs beside resident parameters to prove a circuit of 2^`lg_domain`
/// constraints with `n_inputs` inputs and `n_aux` aux variables, `stages` partitions' buffers
/// at a time, with the plan `flags` ([`PLAN_STREAMED`], [`PLAN_LEAN`], [`PLAN_REC_MAPPED`]):
/// computed by kernels/ from the sizes it allocates (`cuzk_gpu_working_bytes`). The witnesses'
/// values neither 0 nor 1 are `others_per_1024` of them (0: 1 in 32, PoRep's few) and the
/// recording takes `rec_bytes_per_row` bytes a row (0: ~45); `u64::MAX` for a share past 1024
/// or a domain past the kernels' largest.
pub fn working_bytes(
    lg_domain: u32,
    n_inputs: usize,
    n_aux: usize,
    stages: usize,
    flags: u32,
    others_per_1024: u32,
    rec_bytes_per_row: u32,
) -> u64 {
    // SAFETY: arithmetic only; no pointer is passed. (usize is u64 here: SIZE_MAX stays MAX.)
    unsafe {
        cuzk_gpu_working_bytes(
            lg_domain,
            n_inputs,
            n_aux,
            stages,
            flags,
            others_per_1024,
            rec_bytes_per_row,
        ) as u64
    }
}

/// Caps the device memory the prover's buffers may hold on GPU `ordinal` (`u64::MAX`: none):
/// an allocation past it fails as out of memory.
pub fn set_mem_cap(ordinal: usize, bytes: u64) -> bool {
    let Ok(o) = std::ffi::c_int::try_from(ordinal) else {
        return false;
    };
    // SAFETY: plain values.
    unsafe { cuzk_gpu_set_mem_cap(o, usize::try_from(bytes).unwrap_or(usize::MAX)) == 0 }
}

/// The device memory the prover's buffers hold on GPU `ordinal`: now, and at the peak.
pub fn mem_stats(ordinal: usize) -> (u64, u64) {
    let (mut used, mut peak) = (0usize, 0usize);
    if let Ok(o) = std::ffi::c_int::try_from(ordinal) {
        // SAFETY: valid out-pointers.
        unsafe { cuzk_gpu_mem_stats(o, &mut used, &mut peak) };
    }
    (used as u64, peak as u64)
}

/// The shape of the prover's H MSM where it has 2^16 points or more (the tail MSMs keep
/// theirs) from the next proof on:
/// windows of `wbits` bits in `batches` batches, 0 for the prover's own choice of either
/// (`CUZK_MSM_WBITS` and `CUZK_MSM_BATCHES` set the same at start). For benchmarks: device
/// memory plans made before do not count the buffers a new shape grows.
pub fn set_msm_shape(wbits: u32, batches: u32) -> Result<(), String> {
    check_msm_shape(wbits, batches)?;
    // SAFETY: plain values.
    match unsafe { cuzk_gpu_msm_tune(wbits, batches) } {
        0 => Ok(()),
        code => Err(format!(
            "the kernels refused an MSM shape of {wbits}-bit windows in {batches} batches \
             (code {code})"
        )),
    }
}

/// The H MSM's shape as [`set_msm_shape`] (or the environment) last set it, (0, 0) for the
/// prover's own choice.
pub fn msm_shape() -> (u32, u32) {
    let (mut wbits, mut batches) = (0, 0);
    // SAFETY: valid out-pointers.
    unsafe { cuzk_gpu_msm_tuning(&mut wbits, &mut batches) };
    (wbits, batches)
}

/// Whether [`set_msm_shape`] takes this shape, and why not.
pub fn check_msm_shape(wbits: u32, batches: u32) -> Result<(), String> {
    if (wbits == 0 || (MSM_MIN_WBITS..=MSM_MAX_WBITS).contains(&wbits))
        && batches <= MSM_MAX_BATCHES
    {
        return Ok(());
    }
    Err(format!(
        "an MSM shape of {wbits}-bit windows in {batches} batches is out of range \
         ({MSM_MIN_WBITS}..{MSM_MAX_WBITS} bits, 1..{MSM_MAX_BATCHES} batches, 0: the default)"
    ))
}

/// A G1 slice as the kernels take it: its address and its length in points.
fn span(v: &[G1Affine]) -> (*const c_void, usize) {
    (v.as_ptr().cast(), v.len())
}

/// One circuit's parameters on one GPU: the bases in its memory (resident), or its working
/// buffers beside bases in pinned host memory (streamed); freed on drop.
pub struct DeviceSrs {
    raw: *mut SrsC,
    /// Streamed: the host bases, released after the handle (fields drop after `drop`).
    _pinned: Option<std::sync::Arc<PinnedBases>>,
}

// SAFETY: the handle is only read by `prove`, which the CUDA side documents as safe to call
// from any thread (calls on one GPU must not overlap: `prove` takes `&self` and callers hold a
// per-GPU lock, see `prover::cuzk_gpu`); free happens once, in drop.
unsafe impl Send for DeviceSrs {}
unsafe impl Sync for DeviceSrs {}

/// One partition as the prover reads it. Densities have one bit per variable (least
/// significant first, 64 per word), as bellperson's `DensityTracker` stores them.
pub struct PartitionInput<'a> {
    pub a: &'a [Fr],
    pub b: &'a [Fr],
    pub c: &'a [Fr],
    pub lg_domain: u32,
    pub inputs: &'a [Fr],
    pub aux: &'a [Fr],
    pub a_aux_density: &'a [usize],
    pub b_input_density: &'a [usize],
    pub b_aux_density: &'a [usize],
}

/// One matrix of a circuit's recording in CSR form: `rows + 1` row starts, a column per term
/// (inputs marked by the top bit) and a coefficient code per term.
pub struct SparseMatrix<'a> {
    pub row_start: &'a [u32],
    pub cols: &'a [u32],
    pub coeffs: &'a [u16],
}

/// One partition's compact witness: the inputs, two class bits per aux value (0 zero, 1 one,
/// 2 other; 32 per word, least significant first), the indices and values of the others, and
/// the A/B query densities (as in [`PartitionInput`]).
pub struct CompactInput<'a> {
    pub lg_domain: u32,
    pub inputs: &'a [Fr],
    pub classes: &'a [u64],
    pub n_aux: usize,
    pub other_index: &'a [u32],
    pub other_value: &'a [Fr],
    pub a_aux_density: &'a [usize],
    pub b_input_density: &'a [usize],
    pub b_aux_density: &'a [usize],
}

/// A circuit's recording (its A, B, C matrices and coefficient dictionary) on one GPU: copied
/// into its memory, or read in place from pinned host memory (`_pinned`, released after the
/// handle); freed on drop.
pub struct DeviceRecording {
    raw: *mut RecC,
    _pinned: Option<Arc<PinnedRecording>>,
}

/// A recording's host tables page-locked and mapped for every GPU, so that kernels read them in
/// place; unpinned on drop, after every [`DeviceRecording`] made from it (each holds an `Arc`).
/// It keeps the tables' owner alive.
pub struct PinnedRecording {
    owner: Arc<dyn RecordingTables>,
    pinned: Vec<(*mut c_void, usize)>,
}

// SAFETY: the tables are only read once pinned; pin and unpin happen in new and drop.
unsafe impl Send for PinnedRecording {}
unsafe impl Sync for PinnedRecording {}

impl PinnedRecording {
    /// Pins the owner's tables where they are (no copy).
    pub fn new(owner: Arc<dyn RecordingTables>) -> Result<PinnedRecording, KernelError> {
        let mut spans = Vec::new();
        for (row_start, cols, coeffs) in owner.tables() {
            spans.push((
                row_start.as_ptr().cast::<c_void>(),
                std::mem::size_of_val(row_start),
            ));
            spans.push((cols.as_ptr().cast(), std::mem::size_of_val(cols)));
            spans.push((coeffs.as_ptr().cast(), std::mem::size_of_val(coeffs)));
        }
        let mut p = PinnedRecording {
            owner,
            pinned: Vec::new(),
        };
        for (ptr, len) in spans {
            if len == 0 {
                continue;
            }
            // SAFETY: `ptr` points at `len` bytes the owner holds and does not move while it
            // lives (RecordingTables' contract); this value keeps the owner until drop unpins.
            // Registration only locks the pages: nothing is written through the pointer.
            call(|err, n| unsafe { cuzk_gpu_pin(ptr.cast_mut(), len, err, n) })?;
            p.pinned.push((ptr.cast_mut(), len));
        }
        Ok(p)
    }

    /// Host memory pinned, in bytes.
    pub fn bytes(&self) -> u64 {
        self.pinned.iter().map(|(_, n)| *n as u64).sum()
    }
}

impl Drop for PinnedRecording {
    fn drop(&mut self) {
        for (p, _) in self.pinned.drain(..) {
            // SAFETY: pinned by new, unpinned once; no DeviceRecording refers to it any more.
            unsafe { cuzk_gpu_unpin(p) }
        }
    }
}

// SAFETY: as for DeviceSrs: only read by uploads, which callers serialize per stage.
unsafe impl Send for DeviceRecording {}
unsafe impl Sync for DeviceRecording {}

impl DeviceRecording {
    /// Device memory the recording takes, in bytes.
    pub fn bytes(&self) -> u64 {
        // SAFETY: a live handle.
        unsafe { cuzk_gpu_rec_bytes(self.raw) as u64 }
    }
}

impl Drop for DeviceRecording {
    fn drop(&mut self) {
        // SAFETY: the handle came from cuzk_gpu_rec_new and is freed once.
        unsafe { cuzk_gpu_rec_free(self.raw) }
    }
}

/// The five MSM results of one partition, and the GPU time of each stage (ms).
#[derive(Clone, Debug)]
pub struct MsmResults {
    pub h: G1Affine,
    pub l: G1Affine,
    pub a: G1Affine,
    pub b_g1: G1Affine,
    pub b_g2: G2Affine,
    /// upload (with the A/B compaction), ntt, h, split (classifying the L, A, B scalars), l,
    /// a, b_g1, b_g2.
    pub ms: [f64; 8],
}

/// Whether the A-aux, B-input and B-aux density bitmaps (64 variables per word) cover
/// `n_inputs` inputs and `n_aux` aux variables.
fn densities_cover([a_aux, b_inp, b_aux]: [&[usize]; 3], n_inputs: usize, n_aux: usize) -> bool {
    let words = |n: usize| n.div_ceil(64);
    a_aux.len() >= words(n_aux) && b_aux.len() >= words(n_aux) && b_inp.len() >= words(n_inputs)
}

fn fp(l: &[u64]) -> Fp {
    Fp::from_raw_unchecked(l.try_into().expect("6 limbs"))
}

fn g1(raw: &[u64; 12]) -> G1Affine {
    // All-zero is blst's encoding of the point at infinity.
    if raw.iter().all(|&x| x == 0) {
        return <G1Affine as group::prime::PrimeCurveAffine>::identity();
    }
    G1Affine::from_raw_unchecked(fp(&raw[..6]), fp(&raw[6..]), false)
}

fn g2(raw: &[u64; 24]) -> G2Affine {
    if raw.iter().all(|&x| x == 0) {
        return <G2Affine as group::prime::PrimeCurveAffine>::identity();
    }
    let x = Fp2::new(fp(&raw[..6]), fp(&raw[6..12]));
    let y = Fp2::new(fp(&raw[12..18]), fp(&raw[18..]));
    G2Affine::from_raw_unchecked(x, y, false)
}

/// A circuit's bases held in host memory that every GPU can read (page-locked and mapped into
/// the devices' address space), for the streamed parameter mode: the GPUs keep only working
/// buffers and read the bases over the bus. Unpinned on drop, after every [`DeviceSrs`] made
/// from it (each holds an `Arc`).
pub struct PinnedBases {
    h: Vec<G1Affine>,
    l: Vec<G1Affine>,
    a: Vec<G1Affine>,
    b_g1: Vec<G1Affine>,
    b_g2: Vec<G2Affine>,
    pinned: Vec<(*mut c_void, usize)>,
}

// SAFETY: the bases are only read once pinned; pin and unpin happen in new and drop.
unsafe impl Send for PinnedBases {}
unsafe impl Sync for PinnedBases {}

impl PinnedBases {
    /// Pins the five arrays where they are (no copy). [`DeviceSrs::streamed`] checks their
    /// lengths.
    pub fn new(
        mut h: Vec<G1Affine>,
        mut l: Vec<G1Affine>,
        mut a: Vec<G1Affine>,
        mut b_g1: Vec<G1Affine>,
        mut b_g2: Vec<G2Affine>,
    ) -> Result<PinnedBases, String> {
        fn span<T>(v: &mut [T]) -> (*mut c_void, usize) {
            (v.as_mut_ptr().cast(), std::mem::size_of_val(v))
        }
        // Moving a Vec keeps its heap buffer where it is: the spans stay valid below.
        let spans = [
            span(&mut h),
            span(&mut l),
            span(&mut a),
            span(&mut b_g1),
            span(&mut b_g2),
        ];
        let mut pinned = PinnedBases {
            h,
            l,
            a,
            b_g1,
            b_g2,
            pinned: Vec::new(),
        };
        for (p, len) in spans {
            if len == 0 {
                continue;
            }
            // SAFETY: `p` points at `len` bytes of a vector this value owns and never resizes;
            // it stays allocated until drop unpins it.
            call(|err, n| unsafe { cuzk_gpu_pin(p, len, err, n) })
                .map_err(|e| format!("pinning {} MiB: {e}", len >> 20))?;
            pinned.pinned.push((p, len));
        }
        Ok(pinned)
    }

    /// Host memory held, in bytes.
    pub fn bytes(&self) -> u64 {
        self.pinned.iter().map(|(_, n)| *n as u64).sum()
    }
}

impl Drop for PinnedBases {
    fn drop(&mut self) {
        for (p, _) in self.pinned.drain(..) {
            // SAFETY: pinned by new, unpinned once; no DeviceSrs refers to it any more.
            unsafe { cuzk_gpu_unpin(p) }
        }
    }
}

impl DeviceSrs {
    /// Copies the bases to GPU `ordinal` (the resident mode), for full stages or (`lean`) lean
    /// ones. `b_g1` and `b_g2` must have the same length.
    #[allow(clippy::too_many_arguments)]
    pub fn upload(
        ordinal: usize,
        h: &[G1Affine],
        l: &[G1Affine],
        a: &[G1Affine],
        b_g1: &[G1Affine],
        b_g2: &[G2Affine],
        lean: bool,
    ) -> Result<DeviceSrs, String> {
        let plan = if lean { PLAN_LEAN } else { 0 };
        if b_g1.len() != b_g2.len() {
            return Err(format!(
                "b_g1 has {} points, b_g2 {}",
                b_g1.len(),
                b_g2.len()
            ));
        }
        // SAFETY: every pointer is valid for its length in points (blst's layouts, checked at
        // compile time above); the callee copies them before returning.
        unsafe {
            Self::new_raw(
                ordinal,
                [h, l, a, b_g1].map(span),
                b_g2.as_ptr().cast(),
                plan,
            )
        }
        .map(|raw| DeviceSrs { raw, _pinned: None })
    }

    /// Device memory on GPU `ordinal` for resident bases of these counts (h, l, a, and b_g1 and
    /// b_g2 each), to be filled in piece by piece ([`DeviceSrs::fill_g1`],
    /// [`DeviceSrs::fill_b_g2`]) so that the host never holds them whole; the handle proves
    /// only once every point is filled.
    pub fn resident_unfilled(
        ordinal: usize,
        [nh, nl, na, nb]: [usize; 4],
        lean: bool,
    ) -> Result<DeviceSrs, String> {
        let plan = if lean { PLAN_LEAN } else { 0 };
        let none = std::ptr::null();
        // SAFETY: all null: the callee allocates and copies nothing.
        unsafe {
            Self::new_raw(
                ordinal,
                [(none, nh), (none, nl), (none, na), (none, nb)],
                none,
                plan,
            )
        }
        .map(|raw| DeviceSrs { raw, _pinned: None })
    }

    /// Copies `points` to the resident bases `kind`, from point `first` on (a handle of
    /// [`DeviceSrs::resident_unfilled`]; each point is filled once: a range past the end, or
    /// with points filled before, is refused, `EINVAL`, nothing copied).
    pub fn fill_g1(
        &mut self,
        kind: G1Kind,
        first: usize,
        points: &[G1Affine],
    ) -> Result<(), KernelError> {
        let kind = match kind {
            G1Kind::H => BASES_H,
            G1Kind::L => BASES_L,
            G1Kind::A => BASES_A,
            G1Kind::BG1 => BASES_B1,
        };
        // SAFETY: `points` is valid for its length (blst's layout); the callee checks the
        // range and copies before returning; `&mut self` keeps calls on the handle apart.
        unsafe { self.fill_raw(kind, first, points.as_ptr().cast(), points.len()) }
    }

    /// As [`DeviceSrs::fill_g1`], for the G2 bases of B.
    pub fn fill_b_g2(&mut self, first: usize, points: &[G2Affine]) -> Result<(), KernelError> {
        // SAFETY: as in fill_g1.
        unsafe { self.fill_raw(BASES_B2, first, points.as_ptr().cast(), points.len()) }
    }

    /// # Safety
    /// `src` is valid for `n` points of kind `kind`.
    unsafe fn fill_raw(
        &mut self,
        kind: u32,
        first: usize,
        src: *const c_void,
        n: usize,
    ) -> Result<(), KernelError> {
        call(|err, len| cuzk_gpu_srs_fill(self.raw, kind, first, src, n, err, len))
    }

    /// Points of every kind still to fill ([`DeviceSrs::fill_g1`], [`DeviceSrs::fill_b_g2`]);
    /// 0 for a handle made filled.
    pub fn unfilled(&self) -> usize {
        // SAFETY: a live handle.
        unsafe { cuzk_gpu_srs_unfilled(self.raw) }
    }

    /// Prepares GPU `ordinal` to prove with bases that stay in pinned host memory (the
    /// streamed mode): only the prover's working buffers go to the device.
    pub fn streamed(
        ordinal: usize,
        pinned: std::sync::Arc<PinnedBases>,
        lean: bool,
    ) -> Result<DeviceSrs, String> {
        let b = &*pinned;
        let plan = PLAN_STREAMED | if lean { PLAN_LEAN } else { 0 };
        // SAFETY: the arrays are pinned and mapped (PinnedBases::new) and stay so while the
        // handle lives: it holds the Arc, and drop frees the handle before releasing it.
        let raw = unsafe {
            Self::new_raw(
                ordinal,
                [&b.h, &b.l, &b.a, &b.b_g1].map(|v| span(v)),
                b.b_g2.as_ptr().cast(),
                plan,
            )
        }?;
        Ok(DeviceSrs {
            raw,
            _pinned: Some(pinned),
        })
    }

    /// The handle for both modes: the G1 bases as (pointer, points), and the G2 bases of B,
    /// as many as b_g1's.
    ///
    /// # Safety
    /// Each pointer is valid for its count of points, or all are null (resident, filled
    /// later); in the streamed mode they are pinned by [`PinnedBases`] and outlive the handle.
    unsafe fn new_raw(
        ordinal: usize,
        [(h, nh), (l, nl), (a, na), (b1, nb)]: [(*const c_void, usize); 4],
        b2: *const c_void,
        plan: u32,
    ) -> Result<*mut SrsC, String> {
        let mut raw: *mut SrsC = std::ptr::null_mut();
        call(|err, len| {
            cuzk_gpu_srs_new(
                ordinal as c_int,
                h,
                nh,
                l,
                nl,
                a,
                na,
                b1,
                b2,
                nb,
                plan,
                &mut raw,
                err,
                len,
            )
        })?;
        non_null(raw)
    }

    /// Whether the bases stay in pinned host memory.
    pub fn is_streamed(&self) -> bool {
        self._pinned.is_some()
    }

    /// Device memory held (the bases where resident, and the working buffers), in bytes.
    pub fn bytes(&self) -> u64 {
        // SAFETY: a live handle.
        unsafe { cuzk_gpu_srs_bytes(self.raw) as u64 }
    }

    /// Device buffers for one partition of this circuit, with their own copy stream: a full
    /// stage (a, b, c, the assignment, the A and B scalars), or a lean one (the compact
    /// witness and the split lists; a, b, c are computed at proof time).
    pub fn stage(
        &self,
        lg_domain: u32,
        n_inputs: usize,
        n_aux: usize,
        lean: bool,
    ) -> Result<Stage, KernelError> {
        let mut raw: *mut StageC = std::ptr::null_mut();
        // SAFETY: a live handle, valid out-pointers; the callee checks the sizes.
        call(|err, len| unsafe {
            cuzk_gpu_stage_new(
                self.raw,
                lg_domain,
                n_inputs,
                n_aux,
                lean as c_int,
                &mut raw,
                err,
                len,
            )
        })?;
        Ok(Stage {
            raw: non_null(raw).map_err(KernelError::invalid)?,
            lg_domain,
            n_inputs,
            n_aux,
            lean,
            rec: None,
        })
    }

    /// Copies a circuit's recording (`rows` constraints over `n_inputs` inputs and `n_aux` aux
    /// variables) to this GPU, or with `pinned` (the same tables, pinned) lets it read them in
    /// place; the CUDA side checks the tables first.
    pub fn recording(
        &self,
        rows: usize,
        n_inputs: usize,
        n_aux: usize,
        m: [SparseMatrix; 3],
        dict: &[Fr],
        pinned: Option<Arc<PinnedRecording>>,
    ) -> Result<DeviceRecording, KernelError> {
        if let Some(p) = &pinned {
            let same = p.owner.tables().iter().zip(&m).all(|((r, c, k), x)| {
                std::ptr::eq(*r, x.row_start)
                    && std::ptr::eq(*c, x.cols)
                    && std::ptr::eq(*k, x.coeffs)
            });
            if !same {
                return Err(KernelError::invalid(
                    "the pinned tables are not the recording's",
                ));
            }
        }
        for (k, x) in m.iter().enumerate() {
            if x.row_start.len() != rows + 1 || x.cols.len() != x.coeffs.len() {
                return Err(KernelError::invalid(format!(
                    "matrix {k}: table lengths do not match"
                )));
            }
        }
        let raw_m = m.map(|x| MatrixC {
            row_start: x.row_start.as_ptr(),
            cols: x.cols.as_ptr(),
            coeffs: x.coeffs.as_ptr(),
            terms: x.cols.len(),
        });
        let mut raw: *mut RecC = std::ptr::null_mut();
        // SAFETY: each table is valid for the length passed (checked above); the callee
        // checks their contents and copies them before returning, or, mapped, reads them in
        // place: they are then pinned and outlive the handle (it holds `pinned`, which holds
        // their owner; checked above to be these very tables).
        call(|err, len| unsafe {
            cuzk_gpu_rec_new(
                self.raw,
                rows,
                n_inputs,
                n_aux,
                raw_m.as_ptr(),
                dict.as_ptr(),
                dict.len(),
                pinned.is_some() as c_int,
                &mut raw,
                err,
                len,
            )
        })?;
        Ok(DeviceRecording {
            raw: non_null(raw).map_err(KernelError::invalid)?,
            _pinned: pinned,
        })
    }

    /// Proves the partition uploaded into `stage` (which then holds none). The caller must
    /// not run two of these on the same GPU at once; uploads into other stages may run beside.
    pub fn prove(&self, stage: &mut Stage) -> Result<MsmResults, KernelError> {
        let mut out = OutputC::default();
        // SAFETY: live handles (the stage exclusively borrowed), valid out buffers.
        call(|err, len| unsafe { cuzk_gpu_prove(self.raw, stage.raw, &mut out, err, len) })?;
        Ok(MsmResults {
            h: g1(&out.h),
            l: g1(&out.l),
            a: g1(&out.a),
            b_g1: g1(&out.b1),
            b_g2: g2(&out.b2),
            ms: out.ms,
        })
    }
}

/// One partition's worth of device buffers on one GPU; freed on drop. A lean stage keeps the
/// recording its witness was uploaded against until the next upload (its proof reads it).
pub struct Stage {
    raw: *mut StageC,
    lg_domain: u32,
    n_inputs: usize,
    n_aux: usize,
    lean: bool,
    rec: Option<Arc<DeviceRecording>>,
}

// SAFETY: a stage is used by one thread at a time (`&mut self` methods); the CUDA side does
// not tie it to the thread that made it.
unsafe impl Send for Stage {}

impl Stage {
    /// Whether this stage fits partitions of these sizes, lean or not.
    pub fn fits(&self, lg_domain: u32, n_inputs: usize, n_aux: usize, lean: bool) -> bool {
        (self.lg_domain, self.n_inputs, self.n_aux, self.lean) == (lg_domain, n_inputs, n_aux, lean)
    }

    /// Whether a, b and c are computed at proof time (compact witnesses only).
    pub fn is_lean(&self) -> bool {
        self.lean
    }

    /// Copies one partition in (and compacts its A and B scalars on the GPU); returns when
    /// done.
    pub fn upload(&mut self, p: &PartitionInput) -> Result<(), KernelError> {
        let n_abc = p.a.len();
        if p.b.len() != n_abc || p.c.len() != n_abc {
            return Err(KernelError::invalid("a, b and c differ in length"));
        }
        if p.lg_domain > MAX_LG_DOMAIN || n_abc > 1usize << p.lg_domain {
            return Err(KernelError::invalid(format!(
                "{n_abc} evaluations do not fit a domain of 2^{}",
                p.lg_domain
            )));
        }
        if !densities_cover(
            [p.a_aux_density, p.b_input_density, p.b_aux_density],
            p.inputs.len(),
            p.aux.len(),
        ) {
            return Err(KernelError::invalid(
                "a density bitmap is shorter than its variables",
            ));
        }
        let input = InputC {
            a: p.a.as_ptr(),
            b: p.b.as_ptr(),
            c: p.c.as_ptr(),
            abc_size: n_abc,
            lg_domain: p.lg_domain,
            inp: p.inputs.as_ptr(),
            n_inp: p.inputs.len(),
            aux: p.aux.as_ptr(),
            n_aux: p.aux.len(),
            a_aux_density: p.a_aux_density.as_ptr().cast(),
            b_inp_density: p.b_input_density.as_ptr().cast(),
            b_aux_density: p.b_aux_density.as_ptr().cast(),
        };
        // SAFETY: the slices outlive the call, which copies them before returning; their
        // lengths are the ones passed (the bitmaps were checked to cover their variables).
        call(|err, len| unsafe { cuzk_gpu_upload(self.raw, &input, err, len) })
    }
}

impl Stage {
    /// Copies one partition's compact witness in, computes a, b, c on the GPU from `rec` and
    /// checks every row; returns the first unsatisfied row, if any (the stage then holds no
    /// partition), when done.
    pub fn upload_witness(
        &mut self,
        rec: &Arc<DeviceRecording>,
        w: &CompactInput,
    ) -> Result<Option<u64>, KernelError> {
        if w.classes.len() < w.n_aux.div_ceil(32)
            || w.other_index.len() != w.other_value.len()
            || !densities_cover(
                [w.a_aux_density, w.b_input_density, w.b_aux_density],
                w.inputs.len(),
                w.n_aux,
            )
        {
            return Err(KernelError::invalid(
                "a table of the compact witness is shorter than its variables",
            ));
        }
        let input = WitnessC {
            lg_domain: w.lg_domain,
            inp: w.inputs.as_ptr(),
            n_inp: w.inputs.len(),
            classes: w.classes.as_ptr(),
            n_aux: w.n_aux,
            oth_idx: w.other_index.as_ptr(),
            oth_val: w.other_value.as_ptr(),
            n_oth: w.other_index.len(),
            a_aux_density: w.a_aux_density.as_ptr().cast(),
            b_inp_density: w.b_input_density.as_ptr().cast(),
            b_aux_density: w.b_aux_density.as_ptr().cast(),
        };
        let mut bad = u64::MAX;
        // A lean stage's proof reads the recording: it is kept with the stage (and only the
        // stage of the upload that last succeeded names it).
        self.rec = None;
        // SAFETY: the slices outlive the call, which copies them before returning; their
        // lengths were checked to cover the counts passed. The recording outlives any proof
        // of a lean stage (held below).
        call(|err, len| unsafe {
            cuzk_gpu_upload_witness(self.raw, rec.raw, &input, &mut bad, err, len)
        })?;
        if self.lean {
            self.rec = Some(rec.clone());
        }
        Ok((bad != u64::MAX).then_some(bad))
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        // SAFETY: the handle came from cuzk_gpu_stage_new and is freed once.
        unsafe { cuzk_gpu_stage_free(self.raw) }
    }
}

impl Drop for DeviceSrs {
    fn drop(&mut self) {
        // SAFETY: the handle came from cuzk_gpu_srs_new and is freed once.
        unsafe { cuzk_gpu_srs_free(self.raw) }
    }
}
