//! Scans on the GPU (issue 28): [`ScanEngine`] for [`Gpu`], as NVRTC-compiled kernels
//! (`kernels/scan.cuh`).
//!
//! - [`source`]: the kernel source of a [`source::ScanSpec`] and its cache key.
//! - `launch`: the plan (one block per row; few long rows split into tiles scanned in three
//!   passes: totals, carries, scan from the carries), argument packing, stream order and the
//!   launches; the module's `unsafe`.
//!
//! Every call is queued on the GPU's default stream and nothing synchronises.

mod launch;
pub mod source;

pub(crate) use launch::{address, ll};

use crate::element::FloatElement;
use crate::error::Result;
use crate::ops::reduce::ReduceElement;
use crate::runtime::Gpu;
use crate::tensor::order::{CumOp, Extreme, ScanEngine};
use crate::tensor::{TensorView, TensorViewMut};
use source::ScanKind;

// SAFETY: `launch::scan` checks that the source and every destination are row-major
// `[rows, n]` and launches kernels whose every thread block writes each element `j < n` of
// the rows it takes exactly once (the store of the chunk that holds it), for every row
// (blocks loop over all `rows * tiles`); destinations are never read. Indices written are the
// positions `j` of the row. A failed launch leaves the destinations partly written, never with
// values of another type.
unsafe impl<T: ReduceElement> ScanEngine<T> for Gpu {
    fn cumulate(
        &self,
        op: CumOp,
        src: &TensorView<'_, T, Self>,
        dst: &mut TensorViewMut<'_, T::Sum, Self>,
    ) -> Result<()> {
        let kind = match op {
            CumOp::Sum => ScanKind::Sum,
            CumOp::Prod => ScanKind::Prod,
        };
        launch::scan(self, kind, src, dst, None)
    }

    fn cum_extreme(
        &self,
        which: Extreme,
        src: &TensorView<'_, T, Self>,
        values: &mut TensorViewMut<'_, T, Self>,
        indices: &mut TensorViewMut<'_, i64, Self>,
    ) -> Result<()> {
        let kind = match which {
            Extreme::Max => ScanKind::Max,
            Extreme::Min => ScanKind::Min,
        };
        launch::scan(self, kind, src, values, Some(indices))
    }

    fn logcumsumexp(
        &self,
        src: &TensorView<'_, T, Self>,
        dst: &mut TensorViewMut<'_, T, Self>,
    ) -> Result<()>
    where
        T: FloatElement,
    {
        launch::scan(self, ScanKind::LogSumExp, src, dst, None)
    }
}
