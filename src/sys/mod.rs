//! Operating-system and CUDA calls the engine and the provers need, behind safe functions.
//!
//! This is the bottom layer of the crate: it imports nothing from the rest of cuzk. With the C
//! ABI that hosts call (`crate::ffi`, the top layer; the two never import each other) it is one
//! of the two modules allowed `unsafe` (`#![deny(unsafe_code)]` at the crate root): every
//! `extern "C"` declaration and raw-pointer cast of the crate lives in one or the other.

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "cuda")]
pub mod fixed_base;
#[cfg(feature = "cuda")]
pub mod gpu_prover;
#[cfg(feature = "cuda")]
pub mod kernels;
pub mod os;

/// The G1 bases of a proving key, in the `.params` file's order: what the parameter reader
/// hands on piece by piece and what the GPU prover fills resident bases with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum G1Kind {
    H,
    L,
    A,
    BG1,
}

/// A circuit's recording tables in host memory (A, B, C: row starts, columns, coefficient
/// codes) behind an owner that keeps them where they are while it lives: a GPU with little
/// memory reads them in place (pinned) instead of copying them (`gpu_prover::PinnedRecording`
/// holds an `Arc` of the owner). Implementors must return the same, never-reallocated slices
/// on every call while the value lives (a recording is immutable once made).
pub trait RecordingTables: Send + Sync + 'static {
    fn tables(&self) -> [(&[u32], &[u32], &[u16]); 3];
}
