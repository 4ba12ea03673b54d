//! bellperson's SHA-256 gadget (`gadgets::sha256`): the message schedule and 64 rounds with
//! the additions deferred as the gadget defers them, every bit it allocates emitted in its
//! order. Constant inputs (the IV, padding, a constant block) allocate nothing, as there.

use super::bits::{Bit, U32};
use crate::pce::Witness;

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// `sha256`: the message (a multiple of 8 bits, big-endian bits) padded with constants, then
/// compressed block by block from the IV; the digest's 256 bits, big-endian.
pub fn sha256(w: &mut Witness, input: &[Bit]) -> Vec<Bit> {
    assert!(input.len() % 8 == 0);
    let mut padded = input.to_vec();
    let plen = padded.len() as u64;
    padded.push(Bit::Const(true));
    while (padded.len() + 64) % 512 != 0 {
        padded.push(Bit::Const(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Const(plen >> i & 1 == 1)));
    let mut cur: Vec<U32> = IV.iter().map(|&v| U32::constant(v)).collect();
    for block in padded.chunks(512) {
        cur = compression(w, block, &cur);
    }
    cur.into_iter().flat_map(U32::into_bits_be).collect()
}

/// `sha256_block_no_padding`: one 512-bit block compressed from the IV.
pub fn sha256_block_no_padding(w: &mut Witness, input: &[Bit]) -> Vec<Bit> {
    let iv: Vec<U32> = IV.iter().map(|&v| U32::constant(v)).collect();
    compression(w, input, &iv)
        .into_iter()
        .flat_map(U32::into_bits_be)
        .collect()
}

/// An addition the gadget defers until its result is used (`Maybe`).
enum Maybe {
    Deferred(Vec<U32>),
    Concrete(U32),
}

impl Maybe {
    fn compute(self, w: &mut Witness, others: &[U32]) -> U32 {
        match self {
            Maybe::Concrete(v) => v,
            Maybe::Deferred(mut v) => {
                v.extend_from_slice(others);
                U32::addmany(w, &v)
            }
        }
    }
}

/// `sha256_compression_function`.
pub fn compression(w: &mut Witness, input: &[Bit], current: &[U32]) -> Vec<U32> {
    assert_eq!(input.len(), 512);
    assert_eq!(current.len(), 8);
    let mut ws: Vec<U32> = input.chunks(32).map(U32::from_bits_be).collect();
    for i in 16..64 {
        let s0 = ws[i - 15].rotr(7);
        let s0 = s0.xor(w, &ws[i - 15].rotr(18));
        let s0 = s0.xor(w, &ws[i - 15].shr(3));
        let s1 = ws[i - 2].rotr(17);
        let s1 = s1.xor(w, &ws[i - 2].rotr(19));
        let s1 = s1.xor(w, &ws[i - 2].shr(10));
        let t = U32::addmany(w, &[ws[i - 16], s0, ws[i - 7], s1]);
        ws.push(t);
    }
    let mut a = Maybe::Concrete(current[0]);
    let mut b = current[1];
    let mut c = current[2];
    let mut d = current[3];
    let mut e = Maybe::Concrete(current[4]);
    let mut f = current[5];
    let mut g = current[6];
    let mut h = current[7];
    for (i, &k) in ROUND_CONSTANTS.iter().enumerate() {
        let new_e = e.compute(w, &[]);
        let s1 = new_e.rotr(6);
        let s1 = s1.xor(w, &new_e.rotr(11));
        let s1 = s1.xor(w, &new_e.rotr(25));
        let ch = U32::ch(w, &new_e, &f, &g);
        let temp1 = [h, s1, ch, U32::constant(k), ws[i]];
        let new_a = a.compute(w, &[]);
        let s0 = new_a.rotr(2);
        let s0 = s0.xor(w, &new_a.rotr(13));
        let s0 = s0.xor(w, &new_a.rotr(22));
        let maj = U32::maj(w, &new_a, &b, &c);
        h = g;
        g = f;
        f = new_e;
        e = Maybe::Deferred(temp1.iter().copied().chain(Some(d)).collect());
        d = c;
        c = b;
        b = new_a;
        a = Maybe::Deferred(temp1.iter().copied().chain([s0, maj]).collect());
    }
    let h0 = a.compute(w, &[current[0]]);
    let h1 = U32::addmany(w, &[current[1], b]);
    let h2 = U32::addmany(w, &[current[2], c]);
    let h3 = U32::addmany(w, &[current[3], d]);
    let h4 = e.compute(w, &[current[4]]);
    let h5 = U32::addmany(w, &[current[5], f]);
    let h6 = U32::addmany(w, &[current[6], g]);
    let h7 = U32::addmany(w, &[current[7], h]);
    vec![h0, h1, h2, h3, h4, h5, h6, h7]
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{
        gadgets::{
            boolean::{AllocatedBit, Boolean},
            sha256 as gadget,
        },
        Circuit, ConstraintSystem, SynthesisError,
    };
    use blstrs::Scalar as Fr;
    use ff::Field;
    use rand::{Rng, SeedableRng};

    use crate::pce::WitnessTarget;

    /// A message of bits: allocated where `alloc[i]`, else constants; hashed by the gadget
    /// (`blocks`: `sha256_block_no_padding` on a 512-bit message, else `sha256`).
    struct Hash {
        bits: Vec<bool>,
        alloc: Vec<bool>,
        block: bool,
    }

    impl Circuit<Fr> for Hash {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let mut input = Vec::new();
            for (i, (&b, &a)) in self.bits.iter().zip(&self.alloc).enumerate() {
                input.push(if a {
                    Boolean::from(AllocatedBit::alloc(
                        cs.namespace(|| format!("bit {i}")),
                        Some(b),
                    )?)
                } else {
                    Boolean::constant(b)
                });
            }
            let out = if self.block {
                gadget::sha256_block_no_padding(cs.namespace(|| "sha256"), &input)?
            } else {
                gadget::sha256(cs.namespace(|| "sha256"), &input)?
            };
            // The digest is used (as a circuit would), allocating nothing more.
            assert_eq!(out.len(), 256);
            Ok(())
        }
    }

    fn native(h: &Hash) -> (Witness, Vec<bool>) {
        let mut w = Witness::with_inputs(vec![Fr::ONE], 0);
        let input: Vec<Bit> = h
            .bits
            .iter()
            .zip(&h.alloc)
            .map(|(&b, &a)| {
                if a {
                    super::super::bits::alloc(&mut w, b)
                } else {
                    Bit::Const(b)
                }
            })
            .collect();
        let out = if h.block {
            sha256_block_no_padding(&mut w, &input)
        } else {
            sha256(&mut w, &input)
        };
        (w, out.into_iter().map(Bit::value).collect())
    }

    fn digest_bits(msg: &[u8]) -> Vec<bool> {
        use sha2::Digest;
        sha2::Sha256::digest(msg)
            .iter()
            .flat_map(|byte| (0..8).rev().map(move |i| byte >> i & 1 == 1))
            .collect()
    }

    /// Element for element the witness bellperson's gadget gives, over messages of several
    /// lengths (one to three blocks), allocated, constant or mixed, and the digest SHA-256
    /// gives.
    #[test]
    fn sha256_matches_the_gadget_bit_for_bit() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(25);
        for (bytes, mix) in [
            (0, 0),
            (32, 2),
            (55, 2),
            (64, 2),
            (64, 0),
            (64, 1),
            (100, 2),
            (150, 2),
        ] {
            let msg: Vec<u8> = (0..bytes).map(|_| rng.gen()).collect();
            let bits: Vec<bool> = msg
                .iter()
                .flat_map(|byte| (0..8).rev().map(move |i| byte >> i & 1 == 1))
                .collect();
            // mix 0: all constant; 1: all allocated; 2: some of each.
            let alloc: Vec<bool> = (0..bits.len())
                .map(|_| match mix {
                    0 => false,
                    1 => true,
                    _ => rng.gen_bool(0.8),
                })
                .collect();
            let h = Hash {
                bits,
                alloc,
                block: false,
            };
            let (w, digest) = native(&h);
            assert_eq!(digest, digest_bits(&msg), "{bytes} bytes: the digest");
            let want = WitnessTarget::synthesize(h, None, None).unwrap();
            assert_eq!(
                w.n_aux(),
                want.n_aux(),
                "{bytes} bytes, mix {mix}: aux count"
            );
            assert!(w == want, "{bytes} bytes, mix {mix}: the witness differs");
        }
        // One block, no padding.
        let bits: Vec<bool> = (0..512).map(|_| rng.gen()).collect();
        let h = Hash {
            alloc: vec![true; 512],
            bits,
            block: true,
        };
        let (w, _) = native(&h);
        let want = WitnessTarget::synthesize(h, None, None).unwrap();
        assert!(w == want && w.n_aux() > 20_000, "one block: {}", w.n_aux());
    }
    /// Not a test: CPU time of the native SHA-256 against witness-only synthesis running the
    /// gadget, on the same 1,000 one-block messages (all bits allocated). Run with
    /// `cargo test --release --lib -- --ignored native_sha256_speed --nocapture`.
    #[test]
    #[ignore]
    fn native_sha256_speed() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let msgs: Vec<Vec<bool>> = (0..1000)
            .map(|_| (0..512).map(|_| rng.gen()).collect())
            .collect();
        let t = std::time::Instant::now();
        let mut n = 0;
        for m in &msgs {
            let h = Hash {
                bits: m.clone(),
                alloc: vec![true; 512],
                block: true,
            };
            n += native(&h).0.n_aux();
        }
        let native_s = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        for m in &msgs {
            let h = Hash {
                bits: m.clone(),
                alloc: vec![true; 512],
                block: true,
            };
            WitnessTarget::synthesize(h, None, None).unwrap();
        }
        let gadget_s = t.elapsed().as_secs_f64();
        eprintln!(
            "1000 compressions, {n} aux values: native {:.1} ms, gadget (witness-only) {:.1} ms, {:.1}x; native {:.2} ns per aux value",
            native_s * 1e3,
            gadget_s * 1e3,
            gadget_s / native_s,
            native_s * 1e9 / n as f64
        );
    }
}
