//! filecoin-hashers' circuits over SHA-256 (`Sha256Function`: the data tree behind comm_d):
//! numbers turned into their bits, the bits into bytes, SHA-256, and the digest's first 254
//! bits (little-endian by byte) packed into one allocated number.

use blstrs::Scalar as Fr;
use ff::Field;

use super::{
    bits::{reverse_bit_numbering, Bit},
    num,
    sha256::sha256,
};
use crate::pce::Witness;

/// `Fr::CAPACITY`: the bits a packed number holds.
pub const CAPACITY: usize = 254;

/// The number the first 254 bits make, least significant first (`multipack`'s packing).
pub fn packed(bits: &[Bit]) -> Fr {
    let mut v = Fr::ZERO;
    let mut coeff = Fr::ONE;
    for b in bits.iter().take(CAPACITY) {
        if b.value() {
            v += coeff;
        }
        coeff = coeff.double();
    }
    v
}

/// `multipack::pack_bits`: the first 254 bits as one number, allocated.
pub fn pack_bits(w: &mut Witness, bits: &[Bit]) -> Fr {
    num::alloc_num(w, packed(bits))
}

/// `Sha256Function::hash_circuit`.
pub fn sha256_hash_circuit(w: &mut Witness, bits: &[Bit]) -> Fr {
    let le = reverse_bit_numbering(&sha256(w, bits));
    pack_bits(w, &le[..CAPACITY])
}

/// `Sha256Function::hash_multi_leaf_circuit` (and, with two leaves, `hash2_circuit`): each
/// leaf's 255 bits allocated in turn, then hashed.
pub fn sha256_multi_leaf(w: &mut Witness, leaves: &[Fr]) -> Fr {
    let mut bits = Vec::with_capacity(leaves.len() * 256);
    for leaf in leaves {
        bits.extend(reverse_bit_numbering(&num::to_bits_le(w, leaf)));
    }
    sha256_hash_circuit(w, &bits)
}

/// `Sha256Function::hash_leaf_bits_circuit`: two bit strings hashed as bytes.
pub fn sha256_leaf_bits(w: &mut Witness, left: &[Bit], right: &[Bit]) -> Fr {
    let mut pre = reverse_bit_numbering(left);
    pre.extend(reverse_bit_numbering(right));
    sha256_hash_circuit(w, &pre)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{gadgets::num::AllocatedNum, Circuit, ConstraintSystem, SynthesisError};
    use filecoin_hashers::{
        sha256::{Sha256Domain, Sha256Function},
        Domain, HashFunction, PoseidonBinaryArity,
    };
    use rand::SeedableRng;

    use crate::pce::WitnessTarget;

    struct Pairs(Vec<(Fr, Fr)>, bool);

    impl Circuit<Fr> for Pairs {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            for (k, (a, b)) in self.0.into_iter().enumerate() {
                let a = AllocatedNum::alloc(cs.namespace(|| format!("a{k}")), || Ok(a))?;
                let b = AllocatedNum::alloc(cs.namespace(|| format!("b{k}")), || Ok(b))?;
                if self.1 {
                    Sha256Function::hash2_circuit(cs.namespace(|| format!("h{k}")), &a, &b)?;
                } else {
                    Sha256Function::hash_multi_leaf_circuit::<PoseidonBinaryArity, _>(
                        cs.namespace(|| format!("h{k}")),
                        &[a, b],
                        0,
                    )?;
                }
            }
            Ok(())
        }
    }

    /// Element for element the witness of `hash2_circuit` and `hash_multi_leaf_circuit` (two
    /// leaves), and the hash outside the circuit.
    #[test]
    fn sha256_node_hash_matches_the_gadget() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let pairs: Vec<(Fr, Fr)> = (0..3)
            .map(|_| {
                (
                    Fr::from(Sha256Domain::random(&mut rng)),
                    Fr::from(Sha256Domain::random(&mut rng)),
                )
            })
            .collect();
        for two in [true, false] {
            let mut w = Witness::with_inputs(vec![Fr::ONE], 0);
            for &(a, b) in &pairs {
                num::alloc_num(&mut w, a);
                num::alloc_num(&mut w, b);
                let h = sha256_multi_leaf(&mut w, &[a, b]);
                let want = Sha256Function::hash2(&Sha256Domain::from(a), &Sha256Domain::from(b));
                assert_eq!(h, Fr::from(want));
            }
            let want = WitnessTarget::synthesize(Pairs(pairs.clone(), two), None, None).unwrap();
            assert_eq!(w.n_aux(), want.n_aux());
            assert!(w == want, "the witness differs (hash2: {two})");
        }
    }
}
