//! Bits and 32-bit words as bellpepper's `Boolean` and bellperson's `UInt32` hold them, with
//! their operations allocating exactly what those allocate (an aux value per allocated bit,
//! pushed to the [`Witness`] in the gadgets' order). A constant bit allocates nothing, and the
//! gadgets choose their branch by which operands are constants, allocated, or negations of
//! allocated bits: [`Bit`] keeps that distinction.

use crate::pce::Witness;

/// A `Boolean`: a constant, an allocated bit (`Is`, its variable's value), or the negation of
/// an allocated bit (`Not`, the value of the variable it negates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bit {
    Const(bool),
    Is(bool),
    Not(bool),
}

impl Bit {
    /// The boolean's value.
    #[inline]
    pub fn value(self) -> bool {
        match self {
            Bit::Const(b) | Bit::Is(b) => b,
            Bit::Not(v) => !v,
        }
    }

    #[inline]
    pub fn not(self) -> Bit {
        match self {
            Bit::Const(b) => Bit::Const(!b),
            Bit::Is(v) => Bit::Not(v),
            Bit::Not(v) => Bit::Is(v),
        }
    }

    #[inline]
    pub fn is_const(self) -> bool {
        matches!(self, Bit::Const(_))
    }
}

/// `AllocatedBit::alloc`: one aux value.
#[inline]
pub fn alloc(w: &mut Witness, b: bool) -> Bit {
    w.push_bit(b);
    Bit::Is(b)
}

/// `Boolean::xor`.
pub fn xor(w: &mut Witness, a: Bit, b: Bit) -> Bit {
    use Bit::*;
    match (a, b) {
        (Const(false), x) | (x, Const(false)) => x,
        (Const(true), x) | (x, Const(true)) => x.not(),
        // The `Not` made `Is`, xor-ed (allocated), negated.
        (Is(x), Not(y)) | (Not(y), Is(x)) => alloc(w, x ^ y).not(),
        (Is(x), Is(y)) | (Not(x), Not(y)) => alloc(w, x ^ y),
    }
}

/// `Boolean::and`.
pub fn and(w: &mut Witness, a: Bit, b: Bit) -> Bit {
    use Bit::*;
    match (a, b) {
        (Const(false), _) | (_, Const(false)) => Const(false),
        (Const(true), x) | (x, Const(true)) => x,
        // `AllocatedBit::and_not(is, not)`: is & !not over the variables' values.
        (Is(x), Not(y)) | (Not(y), Is(x)) => alloc(w, x & !y),
        // `AllocatedBit::nor`.
        (Not(x), Not(y)) => alloc(w, !x & !y),
        (Is(x), Is(y)) => alloc(w, x & y),
    }
}

/// `Boolean::sha256_ch`: (a and b) xor ((not a) and c).
pub fn ch(w: &mut Witness, a: Bit, b: Bit, c: Bit) -> Bit {
    use Bit::*;
    let v = (a.value() & b.value()) ^ (!a.value() & c.value());
    match (a, b, c) {
        (Const(_), Const(_), Const(_)) => Const(v),
        (Const(false), _, c) => c,
        (a, Const(false), c) => and(w, a.not(), c),
        (a, b, Const(false)) => and(w, a, b),
        (a, b, Const(true)) => and(w, a, b.not()).not(),
        (a, Const(true), c) => and(w, a.not(), c.not()).not(),
        _ => alloc(w, v),
    }
}

/// `Boolean::sha256_maj`: (a and b) xor (a and c) xor (b and c).
pub fn maj(w: &mut Witness, a: Bit, b: Bit, c: Bit) -> Bit {
    use Bit::*;
    let v = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
    match (a, b, c) {
        (Const(_), Const(_), Const(_)) => Const(v),
        (Const(false), b, c) => and(w, b, c),
        (a, Const(false), c) => and(w, a, c),
        (a, b, Const(false)) => and(w, a, b),
        (a, b, Const(true)) => and(w, a.not(), b.not()).not(),
        (a, Const(true), c) => and(w, a.not(), c.not()).not(),
        (Const(true), b, c) => and(w, b.not(), c.not()).not(),
        _ => {
            // The result first, then `b and c` (allocated after it).
            let r = alloc(w, v);
            and(w, b, c);
            r
        }
    }
}

/// `util::reverse_bit_numbering` (also how filecoin-hashers turns a number's little-endian bits
/// into the bytes SHA-256 reads): padded to whole bytes, each byte's bits reversed.
pub fn reverse_bit_numbering(bits: &[Bit]) -> Vec<Bit> {
    let mut padded = bits.to_vec();
    while padded.len() % 8 != 0 {
        padded.push(Bit::Const(false));
    }
    padded
        .chunks(8)
        .flat_map(|c| c.iter().rev().copied())
        .collect()
}

/// A `UInt32`: 32 bits, least significant first, and the word they make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct U32 {
    pub bits: [Bit; 32],
    pub value: u32,
}

impl U32 {
    pub fn constant(value: u32) -> U32 {
        U32 {
            bits: std::array::from_fn(|i| Bit::Const(value >> i & 1 == 1)),
            value,
        }
    }

    /// `UInt32::alloc`: 32 allocated bits, least significant first.
    pub fn alloc(w: &mut Witness, value: u32) -> U32 {
        U32 {
            bits: std::array::from_fn(|i| alloc(w, value >> i & 1 == 1)),
            value,
        }
    }

    /// `UInt32::from_bits_be`.
    pub fn from_bits_be(bits: &[Bit]) -> U32 {
        assert_eq!(bits.len(), 32);
        let value = bits.iter().fold(0u32, |v, b| v << 1 | b.value() as u32);
        U32 {
            bits: std::array::from_fn(|i| bits[31 - i]),
            value,
        }
    }

    /// `UInt32::into_bits_be`.
    pub fn into_bits_be(self) -> impl Iterator<Item = Bit> {
        self.bits.into_iter().rev()
    }

    pub fn rotr(&self, by: usize) -> U32 {
        let by = by % 32;
        U32 {
            bits: std::array::from_fn(|i| self.bits[(i + by) % 32]),
            value: self.value.rotate_right(by as u32),
        }
    }

    pub fn shr(&self, by: usize) -> U32 {
        let by = by % 32;
        U32 {
            bits: std::array::from_fn(|i| {
                if i + by < 32 {
                    self.bits[i + by]
                } else {
                    Bit::Const(false)
                }
            }),
            value: self.value >> by,
        }
    }

    /// `UInt32::xor`, bit 0 first.
    pub fn xor(&self, w: &mut Witness, o: &U32) -> U32 {
        let mut bits = [Bit::Const(false); 32];
        for (i, b) in bits.iter_mut().enumerate() {
            *b = xor(w, self.bits[i], o.bits[i]);
        }
        U32 {
            bits,
            value: self.value ^ o.value,
        }
    }

    /// `UInt32::sha256_ch`, bit 0 first.
    pub fn ch(w: &mut Witness, a: &U32, b: &U32, c: &U32) -> U32 {
        let mut bits = [Bit::Const(false); 32];
        for (i, r) in bits.iter_mut().enumerate() {
            *r = ch(w, a.bits[i], b.bits[i], c.bits[i]);
        }
        U32 {
            bits,
            value: (a.value & b.value) ^ (!a.value & c.value),
        }
    }

    /// `UInt32::sha256_maj`, bit 0 first.
    pub fn maj(w: &mut Witness, a: &U32, b: &U32, c: &U32) -> U32 {
        let mut bits = [Bit::Const(false); 32];
        for (i, r) in bits.iter_mut().enumerate() {
            *r = maj(w, a.bits[i], b.bits[i], c.bits[i]);
        }
        U32 {
            bits,
            value: (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value),
        }
    }

    /// `UInt32::addmany`: a constant where every operand bit is one; else the sum's bits
    /// allocated, as many as the largest possible sum of this many words has (its carries
    /// included), the low 32 kept.
    pub fn addmany(w: &mut Witness, operands: &[U32]) -> U32 {
        assert!((2..=10).contains(&operands.len()));
        let sum: u64 = operands.iter().map(|o| u64::from(o.value)).sum();
        if operands.iter().all(|o| o.bits.iter().all(|b| b.is_const())) {
            return U32::constant(sum as u32);
        }
        let mut max = operands.len() as u64 * u64::from(u32::MAX);
        let mut bits = [Bit::Const(false); 32];
        let mut i = 0;
        while max != 0 {
            let b = alloc(w, sum >> i & 1 == 1);
            if i < 32 {
                bits[i] = b;
            }
            max >>= 1;
            i += 1;
        }
        U32 {
            bits,
            value: sum as u32,
        }
    }
}
