//! Bindings to `kernels/fixed_base.cu`: `k_i · G` for millions of scalars and one generator on
//! a GPU, written as a `.params` file holds points (the parameter generator's sections).
//!
//! The comb table is the host's (`tools::paramgen::Comb`): `table[j · 2^(w-1) + d - 1] =
//! d · 2^(w j) · G`, affine, in blst's layout (`G1Affine`, `G2Affine`), which the kernel reads
//! as sppark's affine points.

use std::ffi::c_int;

use super::kernels::{
    call, cuzk_fixed_base_free, cuzk_fixed_base_mul, cuzk_fixed_base_new, non_null, FixedBaseC,
};

use blstrs::{G1Affine, G2Affine, Scalar as Fr};

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
    raw: *mut FixedBaseC,
    _p: std::marker::PhantomData<P>,
}

// SAFETY: the handle owns its device buffers and stream; the C side allows use from any
// thread, one at a time, which `&mut self` on `mul` guarantees.
unsafe impl<P: TablePoint> Send for FixedBase<P> {}

impl<P: TablePoint> FixedBase<P> {
    /// Copies `table` (windows of `wbits` bits, `windows` of them) to GPU `ordinal`.
    pub fn new(ordinal: usize, wbits: u32, windows: usize, table: &[P]) -> Result<Self, String> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: `table` is valid for `table.len()` points of the layout the kernel reads
        // (sizes asserted above); `raw` is a valid out-pointer; the buffer's length is passed.
        call(|err, len| unsafe {
            cuzk_fixed_base_new(
                ordinal as c_int,
                P::G2 as c_int,
                wbits,
                windows as u32,
                table.as_ptr().cast(),
                table.len(),
                &mut raw,
                err,
                len,
            )
        })?;
        let raw = non_null(raw)?;
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
        // SAFETY: `ks` holds `ks.len()` scalars in blst's layout, `out` exactly the bytes the
        // kernel writes for them (checked above); the handle is live and used by this thread
        // only (`&mut self`).
        Ok(call(|err, len| unsafe {
            cuzk_fixed_base_mul(
                self.raw,
                ks.as_ptr().cast(),
                ks.len(),
                out.as_mut_ptr().cast(),
                err,
                len,
            )
        })?)
    }
}

impl<P: TablePoint> Drop for FixedBase<P> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from cuzk_fixed_base_new and is freed once, here.
        unsafe { cuzk_fixed_base_free(self.raw) }
    }
}
