//! How a GPU proves a circuit, chosen from the device memory it has (or is allowed:
//! `CUZK_GPU_MEM_LIMIT`): where the parameters live, whether partition stages are full (a, b,
//! c and the dense scalars kept per partition, computed while the previous partition's kernels
//! run) or lean (only the compact witness and the split lists; a, b, c computed one at a time
//! into two vectors of the domain at proof time), how many stages overlap, and whether the
//! recording is copied to the GPU or read from pinned host memory.
//!
//! At 2^27 (32 and 64 GiB sectors) the plans need about 125 GB (resident, full: the H MSM in
//! one batch), 68 GB (resident, lean, two stages), 68 GB (streamed, full), 21 GB (streamed,
//! lean, two stages), 18 GB (one stage) and 12 GB (the recording read from host memory), the
//! 47 GB of parameters counted where resident (`sys::kernels` tests print the working sets):
//! the first that fits is taken. An H200 (141 GB) takes the first, an 80 GB card the second.

use crate::{prover::GpuParams, sys::gpu_prover};

/// One way of proving a circuit on a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The bases stay in pinned host memory.
    pub streamed: bool,
    /// Lean stages (compact witnesses only).
    pub lean: bool,
    /// Partition stages kept: two let an upload overlap the kernels of the partition before.
    pub stages: usize,
    /// The recording is read from pinned host memory.
    pub rec_mapped: bool,
}

/// The plans in order of preference: the parameters resident before streamed (streamed bases
/// cross the bus every partition), full stages before lean ones, two stages before one, the
/// recording on the GPU before read over the bus.
pub const PLANS: [Plan; 7] = [
    Plan::new(false, false, 2, false),
    Plan::new(false, true, 2, false),
    Plan::new(false, true, 1, false),
    Plan::new(true, false, 2, false),
    Plan::new(true, true, 2, false),
    Plan::new(true, true, 1, false),
    Plan::new(true, true, 1, true),
];

impl Plan {
    const fn new(streamed: bool, lean: bool, stages: usize, rec_mapped: bool) -> Plan {
        Plan {
            streamed,
            lean,
            stages,
            rec_mapped,
        }
    }

    /// The flags of `cuzk_gpu_working_bytes`.
    pub fn flags(&self) -> u32 {
        let mut f = 0;
        if self.streamed {
            f |= gpu_prover::PLAN_STREAMED;
        }
        if self.lean {
            f |= gpu_prover::PLAN_LEAN;
        }
        if self.rec_mapped {
            f |= gpu_prover::PLAN_REC_MAPPED;
        }
        f
    }

    /// Whether the parameter setting allows this plan.
    pub fn allowed(&self, params: GpuParams) -> bool {
        match params {
            GpuParams::Auto => true,
            GpuParams::Resident => !self.streamed,
            GpuParams::Streamed => self.streamed,
        }
    }
}

impl std::fmt::Display for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "parameters {}, {} {} stage{}, recording {}",
            if self.streamed {
                "streamed"
            } else {
                "resident"
            },
            self.stages,
            if self.lean { "lean" } else { "full" },
            if self.stages == 1 { "" } else { "s" },
            if self.rec_mapped {
                "read from host memory"
            } else {
                "on the GPU"
            }
        )
    }
}

/// The first plan `params` allows whose device memory (`need`: the working set, and the
/// parameters where resident) fits in `avail` bytes; None where none does.
pub fn choose(params: GpuParams, avail: u64, need: impl Fn(Plan) -> u64) -> Option<Plan> {
    PLANS
        .iter()
        .copied()
        .find(|p| p.allowed(params) && need(*p) <= avail)
}

#[cfg(test)]
mod tests {
    use super::{choose, Plan, PLANS};
    use crate::prover::GpuParams;

    /// A model of the sizes at 2^27 (GB): parameters 47, a full stage 26, a lean stage 1.3,
    /// the lean vectors 8.6, the recording 6, the rest 2.
    fn need(p: Plan) -> u64 {
        let gb = 1_000_000_000f64;
        let mut n = 2.0;
        if !p.streamed {
            n += 47.0;
        }
        n += p.stages as f64 * if p.lean { 1.3 } else { 26.0 };
        if p.lean {
            n += 8.6;
        }
        if !p.rec_mapped {
            n += 6.0;
        }
        (n * gb) as u64
    }

    #[test]
    fn each_card_gets_the_first_plan_that_fits() {
        let gib = |g: u64| g << 30;
        let pick = |g, params| choose(params, gib(g), need);
        // An H200: everything resident, two full stages.
        assert_eq!(pick(139, GpuParams::Auto), Some(PLANS[0]));
        // An 80 GB card: resident parameters, lean stages.
        assert_eq!(pick(80, GpuParams::Auto), Some(PLANS[1]));
        // 24 GiB: streamed, two lean stages, the recording on the GPU.
        assert_eq!(pick(24, GpuParams::Auto), Some(PLANS[4]));
        // 16 GiB: one lean stage, the recording read from host memory.
        let p = pick(16, GpuParams::Auto).unwrap();
        assert_eq!(p, PLANS[6]);
        assert!(p.streamed && p.lean && p.stages == 1 && p.rec_mapped);
        // 8 GiB: nothing fits.
        assert_eq!(pick(8, GpuParams::Auto), None);
        // The parameter setting narrows the choice.
        assert_eq!(pick(139, GpuParams::Streamed), Some(PLANS[3]));
        assert_eq!(pick(24, GpuParams::Resident), None);
        // Each plan needs no more than the one before it within a parameter mode.
        for w in PLANS.windows(2) {
            if w[0].streamed == w[1].streamed {
                assert!(need(w[1]) < need(w[0]), "{} then {}", w[0], w[1]);
            }
        }
        assert_eq!(
            PLANS[6].to_string(),
            "parameters streamed, 1 lean stage, recording read from host memory"
        );
    }
}
