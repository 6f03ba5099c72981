//! The CPU backend's operations behind the device-operation seam ([`DeviceOps`]): H by
//! the rayon NTTs of [`super::ntt`], the MSMs by [`super::msm`]. The reference every other
//! implementation is compared with.

use blstrs::{G1Projective, G2Projective, Scalar};

use super::msm::{msm_g1, msm_g2, Selection};
use super::ntt;
use crate::device_ops::{DeviceOps, QueryScalars};
use crate::error::{Error, Result};
use crate::param_file::Srs;

/// The host's cores as a [`DeviceOps`]. Stateless: every operation uses rayon's current
/// pool and keeps nothing between calls.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuOps;

/// An MSM's error (bases and scalars of different counts) with its partition and query.
fn msm_error(partition: usize, what: &str) -> impl FnOnce(String) -> Error + '_ {
    move |reason| Error::Prover {
        partition,
        backend: "cpu".into(),
        reason: format!("{what}: {reason}"),
    }
}

impl DeviceOps for CpuOps {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn h_coefficients(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        _partition: usize,
    ) -> Result<Vec<Scalar>> {
        ntt::compute_h(a, b, c)
    }

    fn msm_h(
        &mut self,
        srs: &Srs,
        coefficients: &[Scalar],
        partition: usize,
    ) -> Result<G1Projective> {
        msm_g1(&srs.params.h, coefficients, Selection::All).map_err(msm_error(partition, "H"))
    }

    fn msm_l(&mut self, srs: &Srs, aux: &[Scalar], partition: usize) -> Result<G1Projective> {
        msm_g1(&srs.params.l, aux, Selection::All).map_err(msm_error(partition, "L"))
    }

    fn msm_a(&mut self, srs: &Srs, w: &QueryScalars<'_>, partition: usize) -> Result<G1Projective> {
        let bases = &srs.params.a;
        let n_in = w.input.len().min(bases.len());
        let inputs = msm_g1(&bases[..n_in], w.input, Selection::All)
            .map_err(msm_error(partition, "A inputs"))?;
        let aux = msm_g1(&bases[n_in..], w.aux, Selection::Dense(w.a_aux_density))
            .map_err(msm_error(partition, "A aux"))?;
        Ok(inputs + aux)
    }

    fn msm_b_g1(
        &mut self,
        srs: &Srs,
        w: &QueryScalars<'_>,
        partition: usize,
    ) -> Result<G1Projective> {
        let bases = &srs.params.b_g1;
        let nb_in = w.b_input_density.count().min(bases.len());
        let inputs = msm_g1(
            &bases[..nb_in],
            w.input,
            Selection::Dense(w.b_input_density),
        )
        .map_err(msm_error(partition, "B G1 inputs"))?;
        let aux = msm_g1(&bases[nb_in..], w.aux, Selection::Dense(w.b_aux_density))
            .map_err(msm_error(partition, "B G1 aux"))?;
        Ok(inputs + aux)
    }

    fn msm_b_g2(
        &mut self,
        srs: &Srs,
        w: &QueryScalars<'_>,
        partition: usize,
    ) -> Result<G2Projective> {
        let bases = &srs.params.b_g2;
        let nb_in = w.b_input_density.count().min(bases.len());
        let inputs = msm_g2(
            &bases[..nb_in],
            w.input,
            Selection::Dense(w.b_input_density),
        )
        .map_err(msm_error(partition, "B G2 inputs"))?;
        let aux = msm_g2(&bases[nb_in..], w.aux, Selection::Dense(w.b_aux_density))
            .map_err(msm_error(partition, "B G2 aux"))?;
        Ok(inputs + aux)
    }
}
