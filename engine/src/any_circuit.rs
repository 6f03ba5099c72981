//! Any bellpepper-core circuit (not only Filecoin's) proved on one backend, in the caller's
//! thread. A lower-level step, not a second way to prove requests: Filecoin requests are
//! planned, scheduled, proved and verified by the Engine (`cuzk::Engine`); this is for
//! circuits the Engine does not plan, and for tests that hold a backend to bellperson byte
//! for byte with fixed r and s.

use bellperson::groth16::{verify_proof, Proof};
use blstrs::{Bls12, Scalar};

use crate::error::{Error, Result};
use crate::options::ProveOptions;
use crate::param_file::Srs;
use crate::prover::Backend;

/// Proves `circuit` with `srs`'s parameters on `backend`: synthesis in full, then one
/// [`Backend::prove`] with r and s from `opts.randomness`. Returns the proof and the
/// circuit's public inputs (without the leading ONE).
///
/// Invariant: unless `opts.verify` is false, the proof returned verifies against those
/// public inputs; one that does not is [`Error::VerificationFailed`], never returned.
/// `opts.pce` is ignored: a circuit proved once has no recording to reuse.
pub fn prove_circuit<C: bellpepper_core::Circuit<Scalar> + Send>(
    srs: &Srs,
    backend: &mut dyn Backend,
    circuit: C,
    opts: &ProveOptions,
) -> Result<(Proof<Bls12>, Vec<Scalar>)> {
    let asg = cuzk_pce::synthesize(circuit).map_err(|e| Error::Synthesis {
        partition: 0,
        reason: e.to_string(),
    })?;
    let inputs = asg.public_inputs().to_vec();
    let (r, s) = opts.randomness.draw();
    let proof = backend.prove(srs, asg, r, s, 0)?;
    if opts.verify && !matches!(verify_proof(&srs.pvk, &proof, &inputs), Ok(true)) {
        return Err(Error::VerificationFailed {
            what: format!("circuit proof on {}", backend.name()),
        });
    }
    Ok((proof, inputs))
}
