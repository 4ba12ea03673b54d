//! Bindings to `kernels/fixed_base.cu`: `k_i · G` for millions of scalars and one generator on
//! a GPU, written as a `.params` file holds points (the parameter generator's sections).
//!
//! The comb table is the host's (`tools::paramgen::Comb`): `table[j · 2^(w-1) + d - 1] =
//! d · 2^(w j) · G`, affine, in blst's layout (`G1Affine`, `G2Affine`), which the kernel reads
//! as sppark's affine points.

use std::ffi::{c_char, c_int, c_void};

use super::cuda::message;

use blstrs::{G1Affine, G2Affine, Scalar as Fr};

#[repr(C)]
struct RawFixedBase {
    _opaque: [u8; 0],
}

extern "C" {
    fn cuzk_fixed_base_new(
        ordinal: c_int,
        g2: c_int,
        wbits: u32,
        windows: u32,
        table: *const c_void,
        entries: usize,
        out: *mut *mut RawFixedBase,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    fn cuzk_fixed_base_mul(
        f: *mut RawFixedBase,
        scalars: *const c_void,
        n: usize,
        out: *mut c_void,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    fn cuzk_fixed_base_free(f: *mut RawFixedBase);
}

/// A group whose affine points the kernel takes (blst's layout).
pub trait TablePoint: Copy + sealed::Sealed {
    /// G2 (two lanes a point) or G1.
    const G2: bool;
    /// Bytes of one point as a `.params` file holds it (uncompressed).
    const BYTES: usize;
}
impl TablePoint for G1Affine {
    const G2: bool = false;
    const BYTES: usize = 96;
}
impl TablePoint for G2Affine {
    const G2: bool = true;
    const BYTES: usize = 192;
}
mod sealed {
    pub trait Sealed {}
    impl Sealed for blstrs::G1Affine {}
    impl Sealed for blstrs::G2Affine {}
}
const _: () = assert!(std::mem::size_of::<G1Affine>() == 96);
const _: () = assert!(std::mem::size_of::<G2Affine>() == 192);
const _: () = assert!(std::mem::size_of::<Fr>() == 32);

/// One generator's comb table on one GPU. Used by one thread at a time (`&mut self`).
pub struct FixedBase<P: TablePoint> {
    raw: *mut RawFixedBase,
    _p: std::marker::PhantomData<P>,
}

// SAFETY: the handle owns its device buffers and stream; the C side allows use from any
// thread, one at a time, which `&mut self` on `mul` guarantees.
unsafe impl<P: TablePoint> Send for FixedBase<P> {}

impl<P: TablePoint> FixedBase<P> {
    /// Copies `table` (windows of `wbits` bits, `windows` of them) to GPU `ordinal`.
    pub fn new(ordinal: usize, wbits: u32, windows: usize, table: &[P]) -> Result<Self, String> {
        let mut raw = std::ptr::null_mut();
        let mut err = [0 as c_char; 512];
        // SAFETY: `table` is valid for `table.len()` points of the layout the kernel reads
        // (sizes asserted above); `raw` is a valid out-pointer; the buffer's length is passed.
        let rc = unsafe {
            cuzk_fixed_base_new(
                ordinal as c_int,
                P::G2 as c_int,
                wbits,
                windows as u32,
                table.as_ptr().cast(),
                table.len(),
                &mut raw,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if rc != 0 || raw.is_null() {
            return Err(message(&err));
        }
        Ok(FixedBase {
            raw,
            _p: std::marker::PhantomData,
        })
    }

    /// `out[i · BYTES..] = ks[i] · G`, uncompressed as bellperson writes it.
    pub fn mul(&mut self, ks: &[Fr], out: &mut [u8]) -> Result<(), String> {
        if out.len() != ks.len() * P::BYTES {
            return Err(format!(
                "fixed-base output of {} bytes for {} points",
                out.len(),
                ks.len()
            ));
        }
        let mut err = [0 as c_char; 512];
        // SAFETY: `ks` holds `ks.len()` scalars in blst's layout, `out` exactly the bytes the
        // kernel writes for them (checked above); the handle is live and used by this thread
        // only (`&mut self`).
        let rc = unsafe {
            cuzk_fixed_base_mul(
                self.raw,
                ks.as_ptr().cast(),
                ks.len(),
                out.as_mut_ptr().cast(),
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if rc != 0 {
            return Err(message(&err));
        }
        Ok(())
    }
}

impl<P: TablePoint> Drop for FixedBase<P> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from cuzk_fixed_base_new and is freed once, here.
        unsafe { cuzk_fixed_base_free(self.raw) }
    }
}
