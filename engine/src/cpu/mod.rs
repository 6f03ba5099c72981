//! The CPU backend: rayon NTTs for H, and MSMs by Pippenger's method: blst's for G1,
//! batch-affine buckets ([`batch_affine`]) for G2, which measured faster there ([`msm`]).
//! It is the embedded default when no GPU is present and the reference for every other
//! backend.

pub mod batch_affine;
pub mod msm;
pub mod ntt;

use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use cuzk_pce::Assignment;
use tracing::info_span;

use crate::error::{Error, Result};
use crate::param_file::Srs;
use crate::prover::{assemble, check_shape, Backend, MsmResults};
use msm::{msm_g1, msm_g2, Selection};

/// Proves on the host's cores.
#[derive(Clone, Debug, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn prove(
        &mut self,
        srs: &Srs,
        asg: Assignment,
        r: Scalar,
        s: Scalar,
        partition: usize,
    ) -> Result<Proof<Bls12>> {
        let p = &srs.params;
        check_shape(p, &asg, &srs.path.display().to_string())?;
        let err = |what: &str, reason: String| Error::Prover {
            partition,
            backend: "cpu".into(),
            reason: format!("{what}: {reason}"),
        };
        let Assignment {
            input,
            aux,
            a,
            b,
            c,
            a_aux_density,
            b_input_density,
            b_aux_density,
        } = asg;
        let h_coeffs = info_span!("ntt", partition).in_scope(|| ntt::compute_h(a, b, c))?;
        let h = info_span!("msm_h", partition)
            .in_scope(|| msm_g1(&p.h, &h_coeffs, Selection::All))
            .map_err(|e| err("H", e))?;
        drop(h_coeffs); // m field elements: free before the other MSMs
        let l = info_span!("msm_l", partition)
            .in_scope(|| msm_g1(&p.l, &aux, Selection::All))
            .map_err(|e| err("L", e))?;
        let n_in = input.len();
        let a_sum = info_span!("msm_a", partition).in_scope(|| -> Result<_> {
            let a_in =
                msm_g1(&p.a[..n_in], &input, Selection::All).map_err(|e| err("A inputs", e))?;
            let a_aux = msm_g1(&p.a[n_in..], &aux, Selection::Dense(&a_aux_density))
                .map_err(|e| err("A aux", e))?;
            Ok(a_in + a_aux)
        })?;
        let nb_in = b_input_density.count();
        let b_g1 = info_span!("msm_b_g1", partition).in_scope(|| -> Result<_> {
            let x = msm_g1(&p.b_g1[..nb_in], &input, Selection::Dense(&b_input_density))
                .map_err(|e| err("B G1 inputs", e))?;
            let y = msm_g1(&p.b_g1[nb_in..], &aux, Selection::Dense(&b_aux_density))
                .map_err(|e| err("B G1 aux", e))?;
            Ok(x + y)
        })?;
        let b_g2 = info_span!("msm_b_g2", partition).in_scope(|| -> Result<_> {
            let x = msm_g2(&p.b_g2[..nb_in], &input, Selection::Dense(&b_input_density))
                .map_err(|e| err("B G2 inputs", e))?;
            let y = msm_g2(&p.b_g2[nb_in..], &aux, Selection::Dense(&b_aux_density))
                .map_err(|e| err("B G2 aux", e))?;
            Ok(x + y)
        })?;
        assemble(
            p,
            &MsmResults {
                h,
                l,
                a: a_sum,
                b_g1,
                b_g2,
            },
            r,
            s,
        )
    }
}
