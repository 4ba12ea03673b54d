//! The Groth16 steps both provers share (the CPU one in [`super::cpu`] and, with the `cuda`
//! feature, cuzk's GPU one): an assignment's shape checked against the parameters, and the
//! proof assembled from the multi-exponentiation results with the verifying key and `r`, `s`.

use std::ops::{AddAssign, MulAssign};

use bellperson::groth16::{Parameters, Proof};
use blstrs::{Bls12, Scalar as Fr};
use group::{prime::PrimeCurveAffine, Curve};

use super::assignment::ProvingAssignment;
use crate::{
    error::{Error, Result},
    params::CircuitSize,
};

/// Checks that an assignment matches the parameters it is to be proved with.
pub fn check_shape(asg: &ProvingAssignment, params: &Parameters<Bls12>) -> Result<()> {
    check_size(
        asg,
        &CircuitSize {
            constraints: params.h.len() + 1,
            inputs: params.vk.ic.len(),
            aux: params.l.len(),
        },
    )
}

/// Checks an assignment against the size the parameters describe (`constraints` = domain).
pub fn check_size(asg: &ProvingAssignment, want: &CircuitSize) -> Result<()> {
    let size = asg.size();
    let domain = size.domain();
    if want.inputs != size.inputs {
        return Err(Error::invalid_input(format!(
            "circuit has {} public inputs, parameters expect {}",
            size.inputs, want.inputs
        )));
    }
    if want.aux != size.aux {
        return Err(Error::invalid_input(format!(
            "circuit has {} aux variables, parameters expect {}",
            size.aux, want.aux
        )));
    }
    if want.constraints != domain {
        return Err(Error::invalid_input(format!(
            "circuit domain is {}, parameters expect {}",
            domain, want.constraints
        )));
    }
    Ok(())
}

/// Combines the multi-exponentiation results into the proof (bellperson's formulas).
#[allow(clippy::too_many_arguments)]
pub fn assemble_proof(
    vk: &bellperson::groth16::VerifyingKey<Bls12>,
    r: Fr,
    s: Fr,
    h: blstrs::G1Projective,
    l: blstrs::G1Projective,
    a: blstrs::G1Projective,
    b_g1: blstrs::G1Projective,
    b_g2: blstrs::G2Projective,
) -> Result<Proof<Bls12>> {
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(Error::params(
            "parameters have an identity delta (subverted CRS)",
        ));
    }
    let mut g_a = vk.delta_g1 * r;
    g_a.add_assign(&vk.alpha_g1);
    g_a.add_assign(&a);

    let mut g_b = vk.delta_g2 * s;
    g_b.add_assign(&vk.beta_g2);
    g_b.add_assign(&b_g2);

    let mut g_c = a;
    g_c.mul_assign(s);
    let mut b1 = b_g1;
    b1.mul_assign(r);
    g_c.add_assign(&b1);
    g_c.add_assign(vk.delta_g1 * (r * s));
    g_c.add_assign(vk.alpha_g1 * s);
    g_c.add_assign(vk.beta_g1 * r);
    g_c.add_assign(&h);
    g_c.add_assign(&l);

    Ok(Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;
    use ff::Field;

    /// An assignment that does not fit the parameters is INVALID_INPUT: the input's (or the
    /// circuit's) fault. The hazard: a PROVING error counts as a fault of the device that was
    /// asked, and takes a healthy device out of service.
    #[test]
    fn an_assignment_of_another_shape_is_invalid_input_not_a_device_fault() {
        let mut asg = ProvingAssignment::default();
        asg.input_assignment = vec![Fr::ONE];
        asg.aux_assignment = vec![Fr::ONE; 3];
        asg.a = vec![Fr::ONE; 4];
        asg.b = vec![Fr::ONE; 4];
        asg.c = vec![Fr::ONE; 4];
        let fits = asg.size();
        for want in [
            CircuitSize {
                inputs: 2,
                ..fits.clone()
            },
            CircuitSize {
                aux: 4,
                ..fits.clone()
            },
            CircuitSize {
                constraints: 16,
                ..fits.clone()
            },
        ] {
            let e = check_size(&asg, &want).unwrap_err();
            assert_eq!(e.status, Status::InvalidInput, "{e}");
        }
    }
}
