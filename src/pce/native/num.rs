//! bellpepper's `AllocatedNum`: a field element allocated as one aux value, and its
//! little-endian bits (`to_bits_le`: one allocated bit per bit of the field's 255).

use blstrs::Scalar as Fr;

use super::bits::{alloc, Bit};
use crate::pce::Witness;

/// Bits of a BLS12-381 scalar: its modulus has 255.
pub const FR_BITS: usize = 255;

/// `AllocatedNum::alloc`: one aux value (of class other unless it is 0 or 1).
#[inline]
pub fn alloc_num(w: &mut Witness, v: Fr) -> Fr {
    w.push(v);
    v
}

/// `gadgets::encode::encode` (`constraint::add`): key + value, allocated.
#[inline]
pub fn encode(w: &mut Witness, key: Fr, value: Fr) -> Fr {
    alloc_num(w, key + value)
}

/// `AllocatedNum::to_bits_le` (`field_into_allocated_bits_le`): the 255 bits of `v`, least
/// significant first, each allocated in that order.
pub fn to_bits_le(w: &mut Witness, v: &Fr) -> Vec<Bit> {
    let bytes = v.to_bytes_le();
    (0..FR_BITS)
        .map(|i| alloc(w, bytes[i / 8] >> (i % 8) & 1 == 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{gadgets::num::AllocatedNum, Circuit, ConstraintSystem, SynthesisError};
    use ff::Field;
    use rand::SeedableRng;

    use crate::pce::WitnessTarget;

    struct Bits(Vec<Fr>);

    impl Circuit<Fr> for Bits {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            for (i, v) in self.0.into_iter().enumerate() {
                let n = AllocatedNum::alloc(cs.namespace(|| format!("n{i}")), || Ok(v))?;
                n.to_bits_le(cs.namespace(|| format!("bits{i}")))?;
            }
            Ok(())
        }
    }

    /// Element for element the witness of `AllocatedNum::alloc` and `to_bits_le`, for the
    /// edge values and random ones; the bits give the value back.
    #[test]
    fn num_and_its_bits_match_the_gadget() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(255);
        let mut vals = vec![Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(u64::MAX)];
        vals.extend((0..20).map(|_| Fr::random(&mut rng)));
        let mut w = Witness::with_inputs(vec![Fr::ONE], 0);
        for v in &vals {
            alloc_num(&mut w, *v);
            let bits = to_bits_le(&mut w, v);
            let back = bits.iter().rev().fold(Fr::ZERO, |acc, b| {
                acc.double() + if b.value() { Fr::ONE } else { Fr::ZERO }
            });
            assert_eq!(back, *v);
        }
        let want = WitnessTarget::synthesize(Bits(vals), None, None).unwrap();
        assert_eq!(w.n_aux(), want.n_aux());
        assert!(w == want, "the witness differs");
    }
}
