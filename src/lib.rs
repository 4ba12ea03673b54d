//! cuzk: a pipelined PoRep Commit2 prover.
//!
//! The engine ([`engine`]) splits each C2 job into partitions, synthesizes them on a bounded
//! pool ([`prover::ProvingAssignment`]) and proves each as soon as it is ready on a prover
//! backend. The C ABI lives in [`ffi`] and the OS and CUDA calls in [`sys`]; everything else
//! is safe Rust (`unsafe` is denied outside those two).
//!
//! Layers, each importing only from the ones before it:
//! [`error`], [`logging`], [`timeline`], [`budget`], [`sys`] → [`params`] → [`prover`] → [`pce`] → [`porep`] →
//! [`post`] → [`engine`] → [`ffi`]. The command line's and the tests' tools (fixtures, benchmarks, timeline
//! analysis and drawing) are the workspace's `cuzk-tools` crate (`tools/`) and the command line
//! `cuzk-cli` (`cli/`), outside this library.

#![deny(unsafe_code)]

// The C ABI (`ffi`) and the calls out to the OS and CUDA (`sys`) are the only modules allowed
// `unsafe`; the modules that are not part of the C ABI are hidden from cbindgen
// (`cbindgen:ignore`), so only `ffi`'s items, `Status`, `EventKind` and `PROOF_BYTES` reach
// include/cuzk.h.
/// cbindgen:ignore
pub mod budget;
/// cbindgen:ignore
pub mod engine;
pub mod error;
#[allow(unsafe_code)]
pub mod ffi;
/// cbindgen:ignore
pub mod logging;
/// cbindgen:ignore
pub mod params;
/// cbindgen:ignore
pub mod pce;
/// cbindgen:ignore
pub mod porep;
/// cbindgen:ignore
pub mod post;
/// cbindgen:ignore
pub mod prover;
/// cbindgen:ignore
pub mod snap;
/// cbindgen:ignore
#[allow(unsafe_code)]
pub mod sys;
/// cbindgen:ignore
#[cfg(test)]
mod testing;
pub mod timeline;

pub use engine::{Config, Engine, JobOutput, JobRequest};
pub use error::{Error, Result, Status};
pub use porep::FixtureShape;

/// Size of one partition's Groth16 proof in bytes.
pub const PROOF_BYTES: usize = 192;
