//! Status codes and the error type shared by the engine and the C ABI.

use std::fmt;

/// Status code of every fallible cuzk operation. The numbers are part of the C ABI
/// (`cuzk_status`): never renumber, only append.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// A required pointer was NULL or an argument was out of range.
    InvalidArgument = 1,
    /// The C1 output could not be parsed or failed validation.
    InvalidInput = 2,
    /// The proof type or shape is valid but not supported by this build.
    Unsupported = 3,
    /// Groth16 parameters are missing or unreadable.
    Params = 4,
    /// Synthesis or proving failed.
    Proving = 5,
    /// The proof was produced but did not verify (self-check).
    VerifyFailed = 6,
    /// The job was cancelled.
    Cancelled = 7,
    /// A wait ran past its deadline; the job is still running.
    Timeout = 8,
    /// No job with that id is known (never submitted, or already awaited).
    NotFound = 9,
    /// The engine is not running (never started, or shut down).
    NotRunning = 10,
    /// The work does not fit in the configured memory budget.
    ResourceExhausted = 11,
    /// A Rust panic was caught at the C boundary.
    Panic = 12,
    /// An internal invariant failed.
    Internal = 13,
    /// The engine is already running with a different configuration.
    AlreadyRunning = 14,
    /// Called from inside a timeline callback, where it would wait for the thread that runs
    /// the callback (engine start and shutdown, a waiting await, the blocking drop-in).
    InCallback = 15,
}

impl Status {
    /// Every status with its stable name, in code order: the one list beside the enum (which
    /// cbindgen reads). Its order is checked at compile time below, and its completeness
    /// against the generated header's `CUZK_STATUS_*` by a test.
    pub(crate) const NAMES: [(Status, &'static std::ffi::CStr); 16] = [
        (Status::Ok, c"OK"),
        (Status::InvalidArgument, c"INVALID_ARGUMENT"),
        (Status::InvalidInput, c"INVALID_INPUT"),
        (Status::Unsupported, c"UNSUPPORTED"),
        (Status::Params, c"PARAMS"),
        (Status::Proving, c"PROVING"),
        (Status::VerifyFailed, c"VERIFY_FAILED"),
        (Status::Cancelled, c"CANCELLED"),
        (Status::Timeout, c"TIMEOUT"),
        (Status::NotFound, c"NOT_FOUND"),
        (Status::NotRunning, c"NOT_RUNNING"),
        (Status::ResourceExhausted, c"RESOURCE_EXHAUSTED"),
        (Status::Panic, c"PANIC"),
        (Status::Internal, c"INTERNAL"),
        (Status::AlreadyRunning, c"ALREADY_RUNNING"),
        (Status::InCallback, c"IN_CALLBACK"),
    ];

    /// The status with this code, if any.
    pub fn from_code(code: i32) -> Option<Status> {
        usize::try_from(code)
            .ok()
            .and_then(|i| Self::NAMES.get(i))
            .map(|(s, _)| *s)
    }

    /// Stable upper-case name as a C string, as used in logs, the C ABI and the Go bindings.
    pub fn c_name(self) -> &'static std::ffi::CStr {
        Self::NAMES[self as usize].1
    }

    /// Stable upper-case name.
    pub fn name(self) -> &'static str {
        self.c_name().to_str().expect("ASCII")
    }
}

// NAMES[i] is the status of code i.
const _: () = {
    let mut i = 0;
    while i < Status::NAMES.len() {
        assert!(Status::NAMES[i].0 as usize == i);
        i += 1;
    }
};

/// An error with a status code and a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub message: String,
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        Error {
            status,
            message: message.into(),
        }
    }
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(Status::InvalidInput, message)
    }
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(Status::InvalidArgument, message)
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(Status::Unsupported, message)
    }
    pub fn params(message: impl Into<String>) -> Self {
        Self::new(Status::Params, message)
    }
    pub fn proving(message: impl Into<String>) -> Self {
        Self::new(Status::Proving, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Status::Internal, message)
    }
    /// Wraps an `anyhow` error (from the proofs crates) with full context chain.
    pub fn from_anyhow(status: Status, context: &str, e: anyhow::Error) -> Self {
        Self::new(status, format!("{context}: {e:#}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The message of a caught panic (`&str` or `String` payloads), or "unknown panic".
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs `f`, turning a panic inside it into an error with `status` and the message
/// "`what` panicked: ...". Every place that catches panics (the C boundary, the worker loops,
/// calls into the proofs crates and the GPU prover) goes through this.
pub fn catch<T>(what: &str, status: Status, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(Error::new(
            status,
            format!("{what} panicked: {}", panic_message(p.as_ref())),
        )),
    }
}

/// Runs `f`, where a panic has no status to become (a C export that returns nothing or a
/// static string): the panic is logged as an error and `fallback` returned in its place.
pub fn catch_or<T>(what: &str, fallback: T, f: impl FnOnce() -> T) -> T {
    match catch(what, Status::Panic, || Ok(f())) {
        Ok(v) => v,
        Err(e) => {
            log::error!("{e}");
            fallback
        }
    }
}
