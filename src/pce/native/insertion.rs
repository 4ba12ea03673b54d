//! storage-proofs' `gadgets::insertion`: a node put into its siblings at the position its
//! index bits give (a Merkle path's step in a tree of arity 2, 4 or 8, or any power of two by
//! `select`), every `pick` one allocated value, in the gadget's order.

use blstrs::Scalar as Fr;

use super::{
    bits::{alloc, Bit},
    num::alloc_num,
};
use crate::pce::Witness;

/// `pick`: `a` where `cond`, else `b`, allocated.
#[inline]
fn pick(w: &mut Witness, cond: bool, a: Fr, b: Fr) -> Fr {
    alloc_num(w, if cond { a } else { b })
}

/// `insert`: `element` put among `elements` at the index `bits` give (least significant
/// first; allocated, unnegated bits, as the gadget requires for arity 8).
pub fn insert(w: &mut Witness, element: Fr, bits: &[Bit], elements: &[Fr]) -> Vec<Fr> {
    let size = elements.len() + 1;
    assert_eq!(1 << bits.len(), size);
    let v: Vec<bool> = bits.iter().map(|b| b.value()).collect();
    let a = element;
    match size {
        2 => vec![pick(w, v[0], elements[0], a), pick(w, v[0], a, elements[0])],
        4 => {
            let (b0, b1) = (v[0], v[1]);
            let (b, c, d) = (elements[0], elements[1], elements[2]);
            let p0_x0 = pick(w, b0, b, a);
            let p0 = pick(w, b1, b, p0_x0);
            let p1_x0 = pick(w, b0, a, b);
            let p1 = pick(w, b1, c, p1_x0);
            let p2_x1 = pick(w, b0, d, a);
            let p2 = pick(w, b1, p2_x1, c);
            let p3_x1 = pick(w, b0, a, d);
            let p3 = pick(w, b1, p3_x1, d);
            vec![p0, p1, p2, p3]
        }
        8 => {
            assert!(
                bits[..2].iter().all(|b| matches!(b, Bit::Is(_))),
                "bits must be allocated and unnegated"
            );
            let (b0, b1, b2) = (v[0], v[1], v[2]);
            let [b, c, d, e, f, g, h]: [Fr; 7] = elements.try_into().expect("seven siblings");
            // `AllocatedBit::nor` then `AllocatedBit::and` of the two low bits.
            let nor = alloc(w, !b0 & !b1).value();
            let and = alloc(w, b0 & b1).value();
            let p0_xx0 = pick(w, nor, a, b);
            let p0 = pick(w, b2, b, p0_xx0);
            let p1_x00 = pick(w, b0, a, b);
            let p1_xx0 = pick(w, b1, c, p1_x00);
            let p1 = pick(w, b2, c, p1_xx0);
            let p2_x10 = pick(w, b0, d, a);
            let p2_xx0 = pick(w, b1, p2_x10, c);
            let p2 = pick(w, b2, d, p2_xx0);
            let p3_xx0 = pick(w, and, a, d);
            let p3 = pick(w, b2, e, p3_xx0);
            let p4_xx1 = pick(w, nor, a, f);
            let p4 = pick(w, b2, p4_xx1, e);
            let p5_x01 = pick(w, b0, a, f);
            let p5_xx1 = pick(w, b1, g, p5_x01);
            let p5 = pick(w, b2, p5_xx1, f);
            let p6_x11 = pick(w, b0, h, a);
            let p6_xx1 = pick(w, b1, p6_x11, g);
            let p6 = pick(w, b2, p6_xx1, g);
            let p7_xx1 = pick(w, and, a, h);
            let p7 = pick(w, b2, p7_xx1, h);
            vec![p0, p1, p2, p3, p4, p5, p6, p7]
        }
        _ => {
            // Every position chosen among the candidates by `select`.
            let candidates: Vec<Vec<Fr>> = (0..size)
                .map(|index| {
                    let mut r = elements[..index].to_vec();
                    r.push(a);
                    r.extend_from_slice(&elements[index..]);
                    r
                })
                .collect();
            (0..size)
                .map(|pos| {
                    let choices: Vec<Fr> = candidates.iter().map(|r| r[pos]).collect();
                    select(w, &choices, &v)
                })
                .collect()
        }
    }
}

/// `select`: `from[index]`, halving by the bits from the most significant.
pub fn select(w: &mut Witness, from: &[Fr], bits: &[bool]) -> Fr {
    assert_eq!(1 << bits.len(), from.len());
    let mut state = from.to_vec();
    let mut half = from.len() / 2;
    for &bit in bits.iter().rev() {
        state = (0..half)
            .map(|j| pick(w, bit, state[half + j], state[j]))
            .collect();
        half /= 2;
    }
    state[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{
        gadgets::{
            boolean::{AllocatedBit, Boolean},
            num::AllocatedNum,
        },
        Circuit, ConstraintSystem, SynthesisError,
    };
    use ff::Field;
    use rand::{Rng, SeedableRng};
    use storage_proofs_core::gadgets::insertion;

    use crate::pce::WitnessTarget;

    /// (element, siblings, index) triples, each allocated, then inserted by the gadget.
    struct Inserts(Vec<(Fr, Vec<Fr>, usize)>);

    impl Circuit<Fr> for Inserts {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            for (k, (el, sibs, index)) in self.0.into_iter().enumerate() {
                let cs = &mut cs.namespace(|| format!("insert {k}"));
                let n = sibs.len() + 1;
                let el = AllocatedNum::alloc(cs.namespace(|| "el"), || Ok(el))?;
                let sibs = sibs
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| AllocatedNum::alloc(cs.namespace(|| format!("s{i}")), || Ok(v)))
                    .collect::<Result<Vec<_>, _>>()?;
                let bits = (0..n.trailing_zeros() as usize)
                    .map(|i| {
                        AllocatedBit::alloc(
                            cs.namespace(|| format!("b{i}")),
                            Some(index >> i & 1 == 1),
                        )
                        .map(Boolean::from)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let out = insertion::insert(cs, &el, &bits, &sibs)?;
                assert_eq!(out.len(), n);
            }
            Ok(())
        }
    }

    /// Element for element the gadget's witness at arities 2, 4, 8 and 16 (the generic
    /// `select` path), every index; the result is the element at its index among the rest.
    #[test]
    fn insertion_matches_the_gadget() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        let mut cases = Vec::new();
        for n in [2usize, 4, 8, 16] {
            for index in 0..n {
                let sibs: Vec<Fr> = (0..n - 1).map(|_| Fr::random(&mut rng)).collect();
                cases.push((Fr::from(rng.gen::<u64>()), sibs, index));
            }
        }
        let mut w = Witness::with_inputs(vec![Fr::ONE], 0);
        for (el, sibs, index) in &cases {
            let n = sibs.len() + 1;
            alloc_num(&mut w, *el);
            for &s in sibs {
                alloc_num(&mut w, s);
            }
            let bits: Vec<Bit> = (0..n.trailing_zeros() as usize)
                .map(|i| alloc(&mut w, index >> i & 1 == 1))
                .collect();
            let out = insert(&mut w, *el, &bits, sibs);
            let mut want = sibs.clone();
            want.insert(*index, *el);
            assert_eq!(out, want, "arity {n}, index {index}");
        }
        let want = WitnessTarget::synthesize(Inserts(cases), None, None).unwrap();
        assert_eq!(w.n_aux(), want.n_aux());
        assert!(w == want, "the witness differs");
    }
}
