//! Reductions on the GPU: the tensor reductions of [`crate::ops::reduce`] as NVRTC-compiled
//! CUDA kernels (`kernels/reduce.cuh`); the Blob's `asum` / `sumsq` are two of them
//! (`sum_abs`, `sum_sq`).
//!
//! - [`plan`]: the kernel form (row or column), vector widths, block and grid, splits and
//!   index width of a launch (pure host logic).
//! - [`source`]: the kernel source of a [`source::ReduceSpec`] and its cache key.
//! - `launch`: geometry, kernel lookup (compiled once per spec through
//!   [`crate::gpu::compile`]), argument packing, stream order and the driver calls; the
//!   module's `unsafe`.
//!
//! See docs/REDUCTIONS.md for the design and the figures beside PyTorch's.

mod launch;
pub mod plan;
pub mod source;

pub(crate) use launch::reduce as reduce_view;

use crate::element::Element;
use crate::error::{Error, LayoutError};
use crate::layout::Layout;
use crate::ops::table::Identity;
use crate::runtime::{GpuStorage, Stream};

/// The element at index `offset` of `data`, copied to the host on `stream` (waits for it, and
/// the copy waits for the last write of `data` on any stream). A one-element storage is
/// copied as it is; otherwise the element is first copied into one on the device.
///
/// # Errors
/// [`LayoutError::OutOfStorage`] for an offset past the storage; the copies' errors.
pub(crate) fn read_element<T: Element>(
    stream: &Stream,
    data: &GpuStorage<T>,
    offset: usize,
) -> Result<T, Error> {
    let at = Layout::scalar(offset)?;
    at.check_within("read_element", data.len())?;
    let one = if data.len() == 1 {
        data.to_vec(stream)?
    } else {
        let mut tmp = GpuStorage::<T>::zeros(data.gpu(), 1, stream)?;
        crate::engine_gpu::pointwise::safe::unary(
            stream,
            &Identity,
            data,
            &at,
            &mut tmp,
            &Layout::scalar(0)?,
        )?;
        tmp.to_vec(stream)?
    };
    one.first().copied().ok_or_else(|| {
        LayoutError::OutOfStorage {
            op: "read_element",
            shape: vec![],
            strides: vec![],
            offset,
            storage_len: data.len(),
        }
        .into()
    })
}
