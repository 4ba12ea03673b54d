//! Shared helpers for the integration tests: cached fixtures and parameters.
#![allow(dead_code)]

use std::path::PathBuf;

use cuzk::{
    engine,
    fixture::{self, FixtureSpec, SetupReport},
    porep::FixtureShape,
};

/// The parameter cache the tests use (outside the repository; `make test` fills it once).
pub fn params_dir() -> PathBuf {
    engine::default_params_dir()
}

/// Sets filecoin-proofs' parameter directory for this test process (before any proofs call).
pub fn init() {
    let _ = env_logger::builder().is_test(true).try_init();
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params_dir());
}

/// The 2KiB V1_1 fixture of the given shape: parameters (generated once, cached) and C1 JSON.
pub fn fixture(shape: FixtureShape) -> (FixtureSpec, SetupReport, Vec<u8>) {
    init();
    let spec = FixtureSpec::new(fixture::v1_1_proof(2048).unwrap(), shape);
    let rep = fixture::setup(&spec, &params_dir()).expect("fixture setup");
    let c1 = std::fs::read(&rep.c1_path).unwrap();
    (spec, rep, c1)
}
