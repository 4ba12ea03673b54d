//! cuzk: a pipelined PoRep Commit2 prover.
//!
//! The engine ([`engine`]) splits each C2 job into partitions, synthesizes them on a bounded
//! pool ([`prover::ProvingAssignment`]) and proves each as soon as it is ready on a prover
//! backend. The C ABI lives in [`ffi`]; everything else is safe Rust.

pub mod analysis;
pub mod budget;
pub mod calls;
pub mod engine;
pub mod error;
pub mod ffi;
pub mod fixture;
pub mod params;
pub mod porep;
pub mod prover;
pub mod selftest;
#[path = "ffi/sys/mod.rs"]
pub mod sys;
pub mod timeline;

pub use engine::{Config, Engine, JobOutput, JobRequest};
pub use error::{Error, Result, Status};
pub use porep::FixtureShape;

/// Size of one partition's Groth16 proof in bytes.
pub const PROOF_BYTES: usize = 192;
