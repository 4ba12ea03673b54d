//! Operating-system and CUDA calls the engine and the provers need, behind safe functions.
//!
//! This is the bottom layer of the crate (mounted as `crate::sys`): it imports nothing from
//! the rest of cuzk. Its files sit under `src/ffi/` because every `extern "C"` declaration and
//! every raw-pointer cast of the crate lives there; the C ABI that hosts call (`crate::ffi`)
//! is the top layer, and the two never import each other.

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "cuda")]
pub mod fixed_base;
#[cfg(feature = "cuda")]
pub mod gpu_prover;
pub mod os;
