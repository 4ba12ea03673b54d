//! cuzk: a pipelined PoRep Commit2 prover.
//!
//! The engine ([`engine`]) splits each C2 job into partitions, synthesizes them on a bounded
//! pool ([`prover::ProvingAssignment`]) and proves each as soon as it is ready on a prover
//! backend. The C ABI lives in [`ffi`]; everything else is safe Rust.
//!
//! Layers, each importing only from the ones before it:
//! [`error`], [`logging`], [`timeline`], [`budget`], [`sys`] → [`params`] → [`prover`] → [`pce`] → [`porep`] →
//! [`engine`] → [`ffi`]. The command line's and the tests' tools (fixtures, benchmarks, timeline
//! analysis and drawing) are in `src/tools/`, outside this library.

pub mod budget;
pub mod engine;
pub mod error;
pub mod ffi;
pub mod logging;
pub mod params;
pub mod pce;
pub mod porep;
pub mod prover;
#[path = "ffi/sys/mod.rs"]
pub mod sys;
#[cfg(test)]
mod testing;
pub mod timeline;

pub use engine::{Config, Engine, JobOutput, JobRequest};
pub use error::{Error, Result, Status};
pub use porep::FixtureShape;

/// Size of one partition's Groth16 proof in bytes.
pub const PROOF_BYTES: usize = 192;
