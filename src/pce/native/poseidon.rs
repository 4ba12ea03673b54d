//! neptune's Poseidon circuit as filecoin-hashers calls it (`circuit::poseidon_hash`, the
//! "legacy" circuit: comm_r's H(comm_c, comm_r_last), the trees' nodes, the columns): the
//! state's elements are either allocated or linear combinations; every S-box allocates its
//! input where that is a combination, then x², x⁴ and x⁵ (plus its round keys), and the MDS
//! products stay combinations. Values are computed as neptune's circuit computes them.

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::PoseidonArity;

use super::num::alloc_num;
use crate::pce::Witness;

/// The constants of one arity, borrowed from filecoin-hashers' (neptune's) tables.
pub struct Constants {
    width: usize,
    full_rounds: usize,
    half_full_rounds: usize,
    partial_rounds: usize,
    domain_tag: Fr,
    round_constants: &'static [Fr],
    m: &'static [Vec<Fr>],
    pre_sparse: &'static [Vec<Fr>],
    /// (w_hat, v_rest) of each sparse matrix.
    sparse: Vec<(&'static [Fr], &'static [Fr])>,
}

/// [`Constants`] borrowed from a `&'static` neptune `PoseidonConstants` of arity `$arity`.
macro_rules! borrow_constants {
    ($c:expr, $arity:expr) => {{
        let c = $c;
        Constants {
            width: $arity + 1,
            full_rounds: c.full_rounds,
            half_full_rounds: c.half_full_rounds,
            partial_rounds: c.partial_rounds,
            domain_tag: c.domain_tag,
            round_constants: &c.compressed_round_constants,
            m: &c.mds_matrices.m,
            pre_sparse: &c.pre_sparse_matrix,
            sparse: c
                .sparse_matrixes
                .iter()
                .map(|s| (&s.w_hat[..], &s.v_rest[..]))
                .collect(),
        }
    }};
}

impl Constants {
    /// The constants filecoin-hashers hashes arity `A` with.
    pub fn of<A: PoseidonArity + 'static>() -> Constants {
        borrow_constants!(A::PARAMETERS(), A::to_usize())
    }

    /// Arity 11: a column of the 11 layers' labels (`stacked::circuit::hash_single_column`).
    pub fn column() -> Constants {
        borrow_constants!(&*filecoin_hashers::POSEIDON_CONSTANTS_11, 11)
    }
}

/// A state element: its value, and whether it is allocated (else a linear combination).
#[derive(Clone, Copy)]
struct Elt {
    v: Fr,
    allocated: bool,
}

impl Elt {
    fn num(v: Fr) -> Elt {
        Elt {
            v,
            allocated: false,
        }
    }
}

/// `ensure_allocated`: a combination is allocated (one aux value).
fn ensure_allocated(w: &mut Witness, e: Elt) -> Fr {
    if !e.allocated {
        alloc_num(w, e.v);
    }
    e.v
}

/// `quintic_s_box`: x, x², x⁴, x⁵ (+ the round key).
fn s_box(w: &mut Witness, e: Elt, post: Option<Fr>) -> Elt {
    let l = ensure_allocated(w, e);
    let l2 = alloc_num(w, l.square());
    let l4 = alloc_num(w, l2.square());
    let mut l5 = l4 * l;
    if let Some(k) = post {
        l5 += k;
    }
    Elt {
        v: alloc_num(w, l5),
        allocated: true,
    }
}

/// `quintic_s_box_pre_add`: x, (x + pre)², its square, (x + pre)⁵ + post.
fn s_box_pre_add(w: &mut Witness, e: Elt, pre: Fr, post: Fr) -> Elt {
    let l = ensure_allocated(w, e);
    let l2 = alloc_num(w, (l + pre).square());
    let l4 = alloc_num(w, l2.square());
    Elt {
        v: alloc_num(w, (l + pre) * l4 + post),
        allocated: true,
    }
}

/// The permutation's state as neptune's `PoseidonCircuit` keeps it.
struct State<'a> {
    c: &'a Constants,
    elements: Vec<Elt>,
    offset: usize,
    round: usize,
}

impl State<'_> {
    fn full_round(&mut self, w: &mut Witness, first: bool, last: bool) {
        let width = self.c.width;
        let mut off = self.offset;
        let pre = if first {
            let k = &self.c.round_constants[off..off + width];
            off += width;
            Some(k)
        } else {
            None
        };
        let post = if first || !last {
            let k = &self.c.round_constants[off..off + width];
            off += width;
            Some(k)
        } else {
            None
        };
        for i in 0..self.elements.len() {
            let e = self.elements[i];
            self.elements[i] = match (pre, post) {
                // The tag: a constant, its S-box computed outside the circuit.
                (Some(pre), Some(post)) if i == 0 => {
                    let x = e.v + pre[0];
                    Elt::num(x.square().square() * x + post[0])
                }
                (Some(pre), Some(post)) => s_box_pre_add(w, e, pre[i], post[i]),
                _ => s_box(w, e, post.map(|k| k[i])),
            };
        }
        self.offset = off;
        self.product_mds();
    }

    fn partial_round(&mut self, w: &mut Witness) {
        let k = self.c.round_constants[self.offset];
        self.offset += 1;
        self.elements[0] = s_box(w, self.elements[0], Some(k));
        self.product_mds();
    }

    fn product_mds(&mut self) {
        let sparse_offset = self.c.half_full_rounds - 1;
        if self.round == sparse_offset {
            self.with_matrix(self.c.pre_sparse);
        } else if self.round > sparse_offset
            && self.round < self.c.half_full_rounds + self.c.partial_rounds
        {
            let (w_hat, v_rest) = self.c.sparse[self.round - sparse_offset - 1];
            let e0 = self.elements[0].v;
            let first = dot(&self.elements, w_hat);
            let mut out = Vec::with_capacity(self.c.width);
            out.push(Elt::num(first));
            for j in 1..self.c.width {
                out.push(Elt::num(self.elements[j].v + e0 * v_rest[j - 1]));
            }
            self.elements = out;
        } else {
            self.with_matrix(self.c.m);
        }
        self.round += 1;
    }

    fn with_matrix(&mut self, m: &[Vec<Fr>]) {
        let out = (0..self.c.width)
            .map(|j| {
                let v = self
                    .elements
                    .iter()
                    .enumerate()
                    .fold(Fr::ZERO, |acc, (i, e)| acc + e.v * m[i][j]);
                Elt::num(v)
            })
            .collect();
        self.elements = out;
    }
}

fn dot(elts: &[Elt], k: &[Fr]) -> Fr {
    elts.iter()
        .zip(k)
        .fold(Fr::ZERO, |acc, (e, k)| acc + e.v * k)
}

/// `poseidon_hash` of `preimage` (already allocated, as the circuit's `AllocatedNum`s are),
/// its result allocated; returns the hash.
pub fn hash(w: &mut Witness, c: &Constants, preimage: &[Fr]) -> Fr {
    assert_eq!(
        preimage.len() + 1,
        c.width,
        "the preimage's length is the arity"
    );
    let mut elements = Vec::with_capacity(c.width);
    elements.push(Elt::num(c.domain_tag));
    elements.extend(preimage.iter().map(|&v| Elt { v, allocated: true }));
    let mut s = State {
        c,
        elements,
        offset: 0,
        round: 0,
    };
    s.full_round(w, true, false);
    for _ in 1..c.full_rounds / 2 {
        s.full_round(w, false, false);
    }
    for _ in 0..c.partial_rounds {
        s.partial_round(w);
    }
    for _ in 0..c.full_rounds / 2 - 1 {
        s.full_round(w, false, false);
    }
    s.full_round(w, false, true);
    ensure_allocated(w, s.elements[1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{gadgets::num::AllocatedNum, Circuit, ConstraintSystem, SynthesisError};
    use filecoin_hashers::{
        poseidon::PoseidonFunction, HashFunction, PoseidonBinaryArity, PoseidonOctArity,
        PoseidonQuadArity,
    };
    use rand::SeedableRng;

    use crate::pce::WitnessTarget;

    /// Preimages allocated, then hashed by filecoin-hashers' Poseidon circuit (arity `A`).
    struct Hashes<A>(Vec<Vec<Fr>>, std::marker::PhantomData<A>);

    impl<A: PoseidonArity + 'static> Circuit<Fr> for Hashes<A> {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            for (k, pre) in self.0.into_iter().enumerate() {
                let nums = pre
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| {
                        AllocatedNum::alloc(cs.namespace(|| format!("{k} {i}")), || Ok(v))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                PoseidonFunction::hash_multi_leaf_circuit::<A, _>(
                    cs.namespace(|| format!("hash {k}")),
                    &nums,
                    0,
                )?;
            }
            Ok(())
        }
    }

    fn check<A: PoseidonArity + 'static>() {
        let arity = A::to_usize();
        let mut rng = rand::rngs::StdRng::seed_from_u64(arity as u64);
        let pres: Vec<Vec<Fr>> = (0..4)
            .map(|k| {
                (0..arity)
                    .map(|_| {
                        if k == 0 {
                            Fr::ZERO
                        } else {
                            Fr::random(&mut rng)
                        }
                    })
                    .collect()
            })
            .collect();
        let c = Constants::of::<A>();
        let mut w = Witness::with_inputs(vec![Fr::ONE], 0);
        for pre in &pres {
            for &v in pre {
                alloc_num(&mut w, v);
            }
            let h = hash(&mut w, &c, pre);
            // The hash outside the circuit, by filecoin-hashers' own Poseidon.
            if arity == 2 {
                use filecoin_hashers::poseidon::PoseidonDomain;
                let d = PoseidonFunction::hash2(
                    &PoseidonDomain::from(pre[0]),
                    &PoseidonDomain::from(pre[1]),
                );
                assert_eq!(h, Fr::from(d));
            }
        }
        let want =
            WitnessTarget::synthesize(Hashes::<A>(pres, std::marker::PhantomData), None, None)
                .unwrap();
        assert_eq!(w.n_aux(), want.n_aux(), "arity {arity}: aux count");
        assert!(w == want, "arity {arity}: the witness differs");
    }

    /// Arity 11 (a column): the same permutation code with the column's constants. Its hash
    /// is checked against storage-proofs' column hash outside the circuit, and its count of
    /// allocations against the rounds' (the gadget itself is not reachable for arity 11 from
    /// here: its arity type is not exported).
    #[test]
    fn a_column_hashes_as_storage_proofs_hashes_it() {
        use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
        use storage_proofs_porep::stacked::Column;
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let rows: Vec<Fr> = (0..11).map(|_| Fr::random(&mut rng)).collect();
        let c = Constants::column();
        let mut w = Witness::with_inputs(vec![Fr::ONE], 0);
        let h = hash(&mut w, &c, &rows);
        let col = Column::<PoseidonHasher>::new(
            0,
            rows.iter().map(|&r| PoseidonDomain::from(r)).collect(),
        )
        .unwrap();
        assert_eq!(h, col.hash());
        // First round: 3 per preimage element (the tag is a constant); other full rounds: 4
        // per element (the input allocated first); partial rounds: 4; the result: 1.
        let (full, partial) = (c.full_rounds, c.partial_rounds);
        assert_eq!(w.n_aux(), 11 * 3 + (full - 1) * 12 * 4 + partial * 4 + 1);
    }

    /// Element for element the witness of filecoin-hashers' Poseidon circuit, arities 2, 4
    /// and 8 (zeros and random preimages); arity 2 also against the hash outside the circuit.
    #[test]
    fn poseidon_matches_the_gadget() {
        check::<PoseidonBinaryArity>();
        check::<PoseidonQuadArity>();
        check::<PoseidonOctArity>();
    }
    /// Not a test: CPU time of the native arity-8 Poseidon (a tree node) against witness-only
    /// synthesis running the circuit, on the same 2,000 preimages. Run with
    /// `cargo test --release --lib -- --ignored native_poseidon_speed --nocapture`.
    #[test]
    #[ignore]
    fn native_poseidon_speed() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        let pres: Vec<Vec<Fr>> = (0..2000)
            .map(|_| (0..8).map(|_| Fr::random(&mut rng)).collect())
            .collect();
        let c = Constants::of::<PoseidonOctArity>();
        let t = std::time::Instant::now();
        let mut w = Witness::with_inputs(vec![Fr::ONE], 0);
        for pre in &pres {
            for &v in pre {
                alloc_num(&mut w, v);
            }
            hash(&mut w, &c, pre);
        }
        let native_s = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let want = WitnessTarget::synthesize(
            Hashes::<PoseidonOctArity>(pres, std::marker::PhantomData),
            None,
            None,
        )
        .unwrap();
        let gadget_s = t.elapsed().as_secs_f64();
        assert!(w == want);
        eprintln!(
            "2000 arity-8 hashes, {} aux values: native {:.1} ms, gadget (witness-only) {:.1} ms, {:.1}x",
            w.n_aux(),
            native_s * 1e3,
            gadget_s * 1e3,
            gadget_s / native_s
        );
    }
}
