//! Native witness generation: the gadgets of the PoRep circuit done again on plain integers,
//! each aux value they allocate emitted straight into a compact [`Witness`] in the order and
//! with the value witness-only synthesis ([`super::WitnessTarget`]) gives, without the gadgets'
//! objects, linear combinations and field arithmetic. Exactness is not assumed:
//! every gadget here is tested element for element against `WitnessTarget` running
//! bellperson's own gadget.
//!
//! Pieces: [`bits`] (bellpepper's `Boolean` and bellperson's `UInt32`: which operations
//! allocate, in which order), [`num`] (`AllocatedNum` and its bits), [`sha256`] (bellperson's
//! SHA-256 gadget), [`poseidon`] (neptune's Poseidon circuit as filecoin-hashers calls it),
//! [`insertion`] (storage-proofs' insertion of a node among its siblings), [`hashers`]
//! (filecoin-hashers' SHA-256 node hashes), [`label`] (the labelling circuit), and [`stacked`]
//! (the PoRep circuit they make, a partition at a time).

pub mod bits;
pub mod hashers;
pub mod insertion;
pub mod label;
pub mod merkle;
pub mod num;
pub mod poseidon;
pub mod post;
pub mod sha256;
pub mod stacked;
