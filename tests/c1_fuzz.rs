//! Property test of C1 parsing and validation: random damage to a real C1 output (bytes
//! flipped, cut, spliced; JSON values replaced) is always refused with an input error or,
//! where the damage happens to leave a valid job, accepted; never a panic or a hang. The run
//! is bounded by its case count (`PROPTEST_CASES`, default 256).

mod common;

use cuzk::{porep, porep::FixtureShape, Status};
use proptest::prelude::*;

fn check(bytes: &[u8], prover: [u8; 32], sector: u64) -> Result<(), TestCaseError> {
    let r = std::panic::catch_unwind(|| {
        porep::parse_c1(bytes)
            .and_then(|p| porep::prepare(p.c1, prover, sector, FixtureShape::default()))
            .map(|_| ())
    });
    match r {
        Err(_) => Err(TestCaseError::fail("parsing or validation panicked")),
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            prop_assert!(
                matches!(
                    e.status,
                    Status::InvalidInput | Status::Unsupported | Status::InvalidArgument
                ),
                "unexpected status for damaged input: {e}"
            );
            prop_assert!(!e.message.is_empty());
            Ok(())
        }
    }
}

/// Replaces the `n`-th JSON scalar (in document order) with `v`.
fn replace_scalar(v: &mut serde_json::Value, n: &mut usize, with: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Array(a) => a.iter_mut().any(|x| replace_scalar(x, n, with)),
        serde_json::Value::Object(o) => o.values_mut().any(|x| replace_scalar(x, n, with)),
        _ => {
            if *n == 0 {
                *v = with.clone();
                return true;
            }
            *n -= 1;
            false
        }
    }
}

fn fixture() -> (Vec<u8>, [u8; 32], u64) {
    static F: std::sync::OnceLock<(Vec<u8>, [u8; 32], u64)> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        let (spec, _, c1) = common::fixture(FixtureShape::default());
        (c1, spec.prover_id(), spec.sector_id)
    })
    .clone()
}

proptest! {
    #[test]
    fn damaged_bytes_are_refused_cleanly(
        flips in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..8),
        cut in proptest::option::of(any::<proptest::sample::Index>()),
    ) {
        let (mut c1, prover, sector) = fixture();
        for (at, b) in flips {
            let i = at.index(c1.len());
            c1[i] = b;
        }
        if let Some(cut) = cut {
            c1.truncate(cut.index(c1.len()));
        }
        check(&c1, prover, sector)?;
    }

    #[test]
    fn damaged_values_are_refused_cleanly(
        which in any::<proptest::sample::Index>(),
        with in prop_oneof![
            Just(serde_json::json!(null)),
            Just(serde_json::json!(-1)),
            Just(serde_json::json!(256)),
            Just(serde_json::json!(u64::MAX)),
            Just(serde_json::json!("x")),
            Just(serde_json::json!([])),
            Just(serde_json::json!({})),
            (0u8..=255).prop_map(|b| serde_json::json!(b)),
        ],
    ) {
        let (c1, prover, sector) = fixture();
        let mut v: serde_json::Value = serde_json::from_slice(&c1).unwrap();
        let mut count = 0;
        fn scalars(v: &serde_json::Value, n: &mut usize) {
            match v {
                serde_json::Value::Array(a) => a.iter().for_each(|x| scalars(x, n)),
                serde_json::Value::Object(o) => o.values().for_each(|x| scalars(x, n)),
                _ => *n += 1,
            }
        }
        scalars(&v, &mut count);
        let mut n = which.index(count);
        replace_scalar(&mut v, &mut n, &with);
        check(&serde_json::to_vec(&v).unwrap(), prover, sector)?;
    }
}
