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
