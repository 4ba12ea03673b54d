//! storage-proofs-porep's labelling circuit (`create_label_circuit`): the replica id, the
//! layer, the node and the 37 parents' labels as bytes, hashed with SHA-256, the digest's bits
//! renumbered and its first 254 packed into one allocated number (the label).

use blstrs::Scalar as Fr;

use super::{
    bits::{alloc, reverse_bit_numbering, Bit, U32},
    hashers::pack_bits,
    sha256::sha256,
};
use crate::pce::Witness;

/// Parents a label hashes (`stacked::vanilla::TOTAL_PARENTS`).
pub const TOTAL_PARENTS: usize = 37;

/// `UInt64::alloc`: 64 allocated bits, least significant first.
pub fn alloc_u64(w: &mut Witness, v: u64) -> [Bit; 64] {
    std::array::from_fn(|i| alloc(w, v >> i & 1 == 1))
}

/// `create_label_circuit`: `node` as `UInt64` bits (least significant first), `layer` as a
/// `UInt32`; returns the label.
pub fn create_label(
    w: &mut Witness,
    replica_id: &[Bit],
    parents: &[Vec<Bit>],
    layer: &U32,
    node: &[Bit; 64],
) -> Fr {
    assert!((32..=256).contains(&replica_id.len()));
    assert_eq!(parents.len(), TOTAL_PARENTS);
    let mut c = replica_id.to_vec();
    c.resize(256, Bit::Const(false));
    c.extend(layer.into_bits_be());
    c.extend(node.iter().rev());
    c.resize(512, Bit::Const(false));
    for p in parents {
        c.extend_from_slice(p);
        while c.len() % 256 != 0 {
            c.push(Bit::Const(false));
        }
    }
    assert_eq!(c.len(), (2 + TOTAL_PARENTS) * 256);
    let digest = reverse_bit_numbering(&sha256(w, &c));
    pack_bits(w, &digest[..254])
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{
        gadgets::{
            boolean::{AllocatedBit, Boolean},
            uint32::UInt32,
        },
        Circuit, ConstraintSystem, SynthesisError,
    };
    use blstrs::Scalar as Fr;
    use ff::Field;
    use rand::{Rng, SeedableRng};
    use storage_proofs_core::gadgets::uint64::UInt64;
    use storage_proofs_porep::stacked::create_label_circuit;

    use crate::pce::WitnessTarget;

    struct Label {
        replica_id: Vec<bool>,
        parents: Vec<Vec<bool>>,
        layer: u32,
        node: u64,
    }

    fn bits_of(w: &mut Witness, v: &[bool]) -> Vec<Bit> {
        v.iter().map(|&b| alloc(w, b)).collect()
    }

    impl Circuit<Fr> for Label {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let mut n = 0;
            let mut alloc_bits = |cs: &mut CS, v: &[bool]| {
                v.iter()
                    .map(|&b| {
                        n += 1;
                        AllocatedBit::alloc(cs.namespace(|| format!("bit {n}")), Some(b))
                            .map(Boolean::from)
                    })
                    .collect::<Result<Vec<_>, _>>()
            };
            let id = alloc_bits(cs, &self.replica_id)?;
            let parents = self
                .parents
                .iter()
                .map(|p| alloc_bits(cs, p))
                .collect::<Result<Vec<_>, _>>()?;
            let node = UInt64::alloc(cs.namespace(|| "node"), Some(self.node))?;
            create_label_circuit(
                cs.namespace(|| "label"),
                &id,
                parents,
                UInt32::constant(self.layer),
                node,
            )?;
            Ok(())
        }
    }

    /// Element for element the witness of `create_label_circuit` (255-bit replica id and
    /// parents, as the circuit passes them), for two layers and nodes.
    #[test]
    fn label_matches_the_gadget() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(37);
        for (layer, node) in [(1u32, 5u64), (11, (1 << 30) + 12345)] {
            let l = Label {
                replica_id: (0..255).map(|_| rng.gen()).collect(),
                parents: (0..TOTAL_PARENTS)
                    .map(|_| (0..255).map(|_| rng.gen()).collect())
                    .collect(),
                layer,
                node,
            };
            let mut w = Witness::with_inputs(vec![Fr::ONE], 0);
            let id = bits_of(&mut w, &l.replica_id);
            let parents: Vec<Vec<Bit>> = l.parents.iter().map(|p| bits_of(&mut w, p)).collect();
            let node = alloc_u64(&mut w, l.node);
            create_label(&mut w, &id, &parents, &U32::constant(l.layer), &node);
            let want = WitnessTarget::synthesize(l, None, None).unwrap();
            assert_eq!(w.n_aux(), want.n_aux());
            assert!(w == want, "layer {layer}: the witness differs");
        }
    }
}
