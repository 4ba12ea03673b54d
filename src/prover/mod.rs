//! The split Groth16 prover: synthesis into a [`ProvingAssignment`], then proving from it on
//! a [`ProverBackend`].

pub mod assignment;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuzk_gpu;
#[cfg(feature = "cuda")]
pub mod gpu;
/// The Groth16 steps both provers share: shape checks and the proof's final assembly.
pub mod groth16;
pub mod reference;

pub use assignment::ProvingAssignment;

use bellperson::{groth16::Proof, multiexp::DensityTracker};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;

use crate::{error::Result, params::Srs};

/// Where the GPU prover keeps a circuit's parameters (its bases).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuParams {
    /// Resident on each GPU whose free memory holds them beside the working buffers of two
    /// partitions; streamed elsewhere.
    Auto,
    /// Copied into every GPU's memory; a GPU that cannot hold them refuses the circuit.
    Resident,
    /// Kept once in pinned host memory (charged to the memory budget): each partition copies
    /// the H bases in batch by batch and reads the others over the bus. For cards too small
    /// for the parameters (a 32 GiB circuit's ~47 GB on a 24 GB card).
    Streamed,
}

/// Time spent in the stages of one partition's proof, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// FFTs computing h.
    pub ntt_ms: f64,
    /// Multi-exponentiations.
    pub msm_ms: f64,
    /// Whole GPU call (NTT + MSMs + the host-side parts it runs), for GPU backends.
    pub gpu_ms: f64,
    /// Host-side preparation before the GPU call (assignment mapping, SRS lookup).
    pub host_ms: f64,
    /// cuzk's GPU prover, per stage: upload (with the A/B density compaction; it overlaps
    /// the previous partition's kernels), NTTs (h), H MSM, classifying the L/A/B scalars, then
    /// the L, A, B(G1), B(G2) MSMs (sum of the bases whose scalar is one, plus a Pippenger over
    /// the rest). Zero for other backends.
    pub gpu_stages_ms: [f64; 8],
}

/// A circuit's R1CS in the pre-compiled (sparse) form of `crate::pce`, as a prover reads it.
pub struct SparseR1cs<'a> {
    /// The recording's circuit (its parameter id).
    pub id: &'a str,
    /// Which recording of the circuit this is (`pce::Recording::instance`): a device copy of
    /// one is never used for another, which may differ (a recording given up and made again).
    pub instance: u64,
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
    /// Coefficients by code (code 0 is one, code 1 minus one).
    pub dict: &'a [Fr],
    /// A, B, C: row starts, columns (inputs marked by `pce::INPUT_BIT`), coefficient codes.
    pub matrices: [(&'a [u32], &'a [u32], &'a [u16]); 3],
    pub a_aux_density: &'a DensityTracker,
    pub b_input_density: &'a DensityTracker,
    pub b_aux_density: &'a DensityTracker,
    /// The owner of the matrices' tables where they stay put while it lives (a GPU short of
    /// memory may then read them in place); None where only the borrow is known.
    pub tables: Option<std::sync::Arc<dyn crate::sys::RecordingTables>>,
}

/// Marks an input column in a recording's matrices (the rest of the bits are the input's index).
pub const INPUT_BIT: u32 = 1 << 31;

impl SparseR1cs<'_> {
    /// Whether constraint `row` holds for `w` (A·w × B·w = C·w), evaluated on the host; None
    /// where the row, a column or a coefficient code is out of range.
    pub fn row_holds(&self, row: usize, w: &ClassedWitness) -> Option<bool> {
        let mut v = [Fr::ZERO; 3];
        for (x, (starts, cols, codes)) in v.iter_mut().zip(&self.matrices) {
            let (s, e) = (
                *starts.get(row)? as usize,
                *starts.get(row.checked_add(1)?)? as usize,
            );
            for t in s..e {
                let k = *self.dict.get(*codes.get(t)? as usize)?;
                *x += k * w.value(*cols.get(t)?)?;
            }
        }
        Some(v[0] * v[1] == v[2])
    }
}

/// A partition's witness in compact form: the inputs, two class bits per aux value (0 zero,
/// 1 one, 2 other; 32 per word, least significant first) and the index and value of each aux
/// value of class 2.
pub struct ClassedWitness<'a> {
    pub inputs: &'a [Fr],
    pub n_aux: usize,
    pub classes: &'a [u64],
    pub other_index: &'a [u32],
    pub other_value: &'a [Fr],
}

impl ClassedWitness<'_> {
    /// The value of column `col` of a recording ([`INPUT_BIT`] marks an input); None out of
    /// range.
    pub fn value(&self, col: u32) -> Option<Fr> {
        if col & INPUT_BIT != 0 {
            return self.inputs.get((col & !INPUT_BIT) as usize).copied();
        }
        let j = col as usize;
        if j >= self.n_aux {
            return None;
        }
        match (self.classes.get(j / 32)? >> (2 * (j % 32))) & 3 {
            0 => Some(Fr::ZERO),
            1 => Some(Fr::ONE),
            _ => self
                .other_index
                .binary_search(&col)
                .ok()
                .and_then(|k| self.other_value.get(k).copied()),
        }
    }
}

/// Something that turns one synthesized partition into a Groth16 proof.
pub trait ProverBackend: Send + Sync {
    /// Short name used in logs and timeline events ("cpu", "cuda:0", ...).
    fn name(&self) -> &'static str;

    /// Whether this backend runs on a GPU (a failed partition is then retried on the CPU).
    fn is_gpu(&self) -> bool {
        false
    }

    /// Whether this backend proves from the full parameters in host memory (which its
    /// `prepare` loads and the budget holds while they are resident): the CPU prover does.
    fn host_params(&self) -> bool {
        !self.is_gpu()
    }

    /// For a GPU backend: whether `prepare` keeps a copy of the parameters in host memory,
    /// charged to the budget while they are loaded (cuzk's GPU prover with streamed
    /// parameters: a pinned copy), rather than reading them into host memory only for a
    /// moment to copy them to the device (resident parameters). Admission counts a kept copy
    /// beside the partitions, a passing one only as room needed while it is read.
    fn keeps_host_copy(&self) -> bool {
        true
    }

    /// Makes the parameters ready for proving (loads them where this backend needs them).
    /// Called when a job's parameters are first used and by `Engine::preload`.
    fn prepare(&self, srs: &Srs) -> Result<()>;

    /// The devices this backend drives, by name; a multi-GPU backend proves a batch of
    /// partitions across them in one call.
    fn devices(&self) -> Vec<String> {
        vec![self.name().to_string()]
    }

    /// Partitions one `prove_batch` call takes now (one per usable device; 0 when every device
    /// is disabled, and the engine then proves on the CPU).
    fn max_batch(&self) -> usize {
        1
    }

    /// The device (index into `devices()`) that item `i` of a batch of `n` will run on.
    fn device_for(&self, _i: usize, _n: usize) -> usize {
        0
    }

    /// Enables or disables one of `devices()` (taken out of service by the operator, or after
    /// repeated errors). Returns false where the backend cannot do that.
    fn set_enabled(&self, _device: usize, _on: bool) -> bool {
        false
    }

    /// Checks that device `device` works (a small kernel on a GPU), before the engine puts it
    /// back in service after a cool-down.
    fn probe(&self, _device: usize) -> Result<()> {
        Ok(())
    }

    /// Drops the parameters this backend loaded (engine shutdown).
    fn release(&self) {}

    /// Drops what the backend keeps of circuit `id`'s recording (a GPU's copy: ~6 GB at 2^27):
    /// the recording was distrusted and is not used again while the engine runs.
    fn forget_recording(&self, id: &str) {
        let _ = id;
    }

    /// The devices (indices into `devices()`) inside a call now, where the backend knows: the
    /// engine's watchdog then takes out only those of a call it gives up on. None: it takes
    /// out every device the call's partitions were placed on.
    fn busy_devices(&self) -> Option<Vec<usize>> {
        None
    }

    /// How each device proves `srs`'s circuit (GPU backends: the plan chosen for its memory),
    /// or why it cannot; empty where there is nothing to choose.
    fn plans(&self, _srs: &Srs) -> Vec<(String, Result<String>)> {
        Vec::new()
    }

    /// [`ProverBackend::prove_batch`], asking `stop` before each partition after a device's
    /// first: where it answers true (a partition of a higher class waits), the device's
    /// partitions not yet begun come back [`yielded`], their assignments in place, and the
    /// engine queues them again. The default proves them all.
    fn prove_batch_between(
        &self,
        asgs: &mut [Option<ProvingAssignment>],
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
        times: &mut [StageTimes],
        stop: Between<'_>,
    ) -> Vec<(usize, Result<Proof<Bls12>>)> {
        let _ = stop;
        self.prove_batch(asgs, srs, rs, ss, times)
    }

    /// [`ProverBackend::prove_witness_batch`] stopping between partitions as
    /// [`ProverBackend::prove_batch_between`] does. The default proves them all.
    #[allow(clippy::too_many_arguments)]
    fn prove_witness_batch_between(
        &self,
        r1cs: &SparseR1cs,
        ws: &[ClassedWitness],
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
        times: &mut [StageTimes],
        stop: Between<'_>,
    ) -> Option<Vec<(usize, Result<Proof<Bls12>>)>> {
        let _ = stop;
        self.prove_witness_batch(r1cs, ws, srs, rs, ss, times)
    }

    /// Proves `asgs.len() <= max_batch()` assignments; result `i` is for `asgs[i]`, with the
    /// index (into `devices()`) of the device that ran it. The default proves them in turn.
    fn prove_batch(
        &self,
        asgs: &mut [Option<ProvingAssignment>],
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
        times: &mut [StageTimes],
    ) -> Vec<(usize, Result<Proof<Bls12>>)> {
        asgs.iter_mut()
            .zip(rs.iter().zip(ss))
            .zip(times.iter_mut())
            .map(|((a, (r, s)), t)| (0, self.prove(a, srs, *r, *s, t)))
            .collect()
    }

    /// Whether this backend proves `srs`'s circuit from a fully synthesized assignment (not
    /// only from a compact witness under a recording): a GPU whose plan has lean stages does
    /// not. The engine waits for a circuit's recording rather than synthesize it in full where
    /// no backend does.
    fn takes_assignments(&self, _srs: &Srs) -> bool {
        true
    }

    /// Whether `prove_witness_batch` proves (a, b and c computed by the backend): the engine
    /// then hands it witnesses, not host-computed assignments.
    fn proves_witness(&self) -> bool {
        false
    }

    /// Proves partitions from their witnesses `ws` under the circuit's sparse R1CS, computing
    /// a, b and c itself (cuzk's GPU prover does it on the GPU, from the compact witness);
    /// result `i` is for `ws[i]`, with the index (into `devices()`) of the device that ran it.
    /// A row the witness does not satisfy is an INTERNAL error. None where the backend cannot:
    /// the caller then computes the assignments on the host.
    fn prove_witness_batch(
        &self,
        _r1cs: &SparseR1cs,
        _ws: &[ClassedWitness],
        _srs: &Srs,
        _rs: &[Fr],
        _ss: &[Fr],
        _times: &mut [StageTimes],
    ) -> Option<Vec<(usize, Result<Proof<Bls12>>)>> {
        None
    }

    /// One partition through `prove_witness_batch`.
    fn prove_witness(
        &self,
        r1cs: &SparseR1cs,
        w: &ClassedWitness,
        srs: &Srs,
        r: Fr,
        s: Fr,
        times: &mut StageTimes,
    ) -> Option<Result<Proof<Bls12>>> {
        let mut t = [StageTimes::default()];
        let out =
            self.prove_witness_batch(r1cs, std::slice::from_ref(w), srs, &[r], &[s], &mut t)?;
        *times = t[0];
        out.into_iter().next().map(|(_, r)| r)
    }

    /// Proves one assignment with the randomness `r`, `s`. A backend that consumes the
    /// assignment takes it out of `asg` (freeing memory as it goes); one that only reads it
    /// leaves it there, so that after an error the engine can retry it elsewhere without having
    /// kept a copy.
    fn prove(
        &self,
        asg: &mut Option<ProvingAssignment>,
        srs: &Srs,
        r: Fr,
        s: Fr,
        times: &mut StageTimes,
    ) -> Result<Proof<Bls12>>;
}

/// What a call asks between partitions: whether to stop before the next (a partition of a
/// higher class waits for the device).
pub type Between<'a> = &'a (dyn Fn() -> bool + Sync);

const YIELDED: &str = "not begun: the device went to a partition of a higher class";

/// The result of a partition a call did not begin because `stop` asked it to (its work is left
/// in place): the engine queues it again. Never a job's outcome.
pub fn yielded() -> crate::error::Error {
    crate::error::Error::new(crate::error::Status::Cancelled, YIELDED)
}

/// Whether `e` is [`yielded`]'s.
pub fn is_yielded(e: &crate::error::Error) -> bool {
    e.status == crate::error::Status::Cancelled && e.message == YIELDED
}

/// `ProverBackend::prove` for a backend whose native call is `prove_batch`: a batch of one,
/// the assignment handed back in place (for the engine's retry) unless the backend took it.
pub fn prove_one_as_batch<B: ProverBackend + ?Sized>(
    backend: &B,
    asg: &mut Option<ProvingAssignment>,
    srs: &Srs,
    r: Fr,
    s: Fr,
    times: &mut StageTimes,
) -> Result<Proof<Bls12>> {
    let mut one = [asg.take()];
    let mut t = [StageTimes::default()];
    let res = backend.prove_batch(&mut one, srs, &[r], &[s], &mut t).pop();
    *asg = one[0].take();
    *times = t[0];
    res.map(|(_, r)| r).unwrap_or_else(|| {
        Err(crate::error::Error::internal(
            "the backend returned no result",
        ))
    })
}

/// The device (of `g`) that item `i` of a batch of `n` runs on: contiguous runs, the first
/// `n % g` devices taking one more.
pub fn batch_device(i: usize, n: usize, g: usize) -> usize {
    let g = g.clamp(1, n.max(1));
    let (per, rem) = (n / g, n % g);
    // GPUs 0..rem hold per+1 circuits each, the rest per.
    if i < rem * (per + 1) {
        i / (per + 1)
    } else {
        rem + (i - rem * (per + 1)) / per.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::batch_device as gpu_of;

    #[test]
    fn a_batch_maps_to_gpus_in_contiguous_runs() {
        // n = 5 on 2 GPUs: 3 then 2.
        assert_eq!(
            (0..5).map(|i| gpu_of(i, 5, 2)).collect::<Vec<_>>(),
            [0, 0, 0, 1, 1]
        );
        assert_eq!((0..2).map(|i| gpu_of(i, 2, 2)).collect::<Vec<_>>(), [0, 1]);
        assert_eq!((0..1).map(|i| gpu_of(i, 1, 2)).collect::<Vec<_>>(), [0]);
        assert_eq!(
            (0..4).map(|i| gpu_of(i, 4, 1)).collect::<Vec<_>>(),
            [0, 0, 0, 0]
        );
        assert_eq!(
            (0..7).map(|i| gpu_of(i, 7, 3)).collect::<Vec<_>>(),
            [0, 0, 0, 1, 1, 2, 2]
        );
    }
}
