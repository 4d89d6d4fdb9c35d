//! The operands of one call as they go to cuBLASLt: borrowed views, or copies made with the
//! crate's copy kernel (`Identity`) on the call's stream when no layout can express them.

use crate::element::Element;
use crate::engine_gpu::pointwise::launch as pointwise;
use crate::error::{LayoutError, Result};
use crate::layout::{contiguous_strides, Layout};
use crate::ops::table::Identity;
use crate::runtime::{Gpu, GpuStorage, Stream};

/// The op name in errors.
pub(super) const OP: &str = "matmul (GPU)";

/// Storage an operand is read from: the caller's, or a copy this call owns (freed in stream
/// order after the work queued on its stream).
pub(super) enum Buf<'s, T: Element> {
    Borrowed(&'s GpuStorage<T>),
    Owned(GpuStorage<T>),
}

impl<T: Element> Buf<'_, T> {
    pub fn get(&self) -> &GpuStorage<T> {
        match self {
            Buf::Borrowed(s) => s,
            Buf::Owned(s) => s,
        }
    }

    pub fn is_owned(&self) -> bool {
        matches!(self, Buf::Owned(_))
    }
}

/// An operand: its storage and the layout (`[B.., r, c]`) read through it.
pub(super) struct Operand<'s, T: Element> {
    pub buf: Buf<'s, T>,
    pub layout: Layout,
}

impl<'s, T: Element> Operand<'s, T> {
    pub fn borrowed(storage: &'s GpuStorage<T>, layout: Layout) -> Self {
        Operand {
            buf: Buf::Borrowed(storage),
            layout,
        }
    }

    /// Replaces the operand by a contiguous copy (batch dims of stride 0 stay broadcast, copied
    /// once). A copy it already owns is contiguous and stays.
    pub fn make_contiguous(&mut self, gpu: &Gpu, stream: &Stream) -> Result<()> {
        if self.buf.is_owned() {
            return Ok(());
        }
        let (storage, layout) = contiguous_copy(gpu, stream, self.buf.get(), &self.layout)?;
        self.buf = Buf::Owned(storage);
        self.layout = layout;
        Ok(())
    }
}

/// A contiguous copy of the view `(src, layout)` on `stream`: batch dims (all but the last
/// two) of stride 0 are kept at stride 0 and copied once. Returns the copy and the layout of
/// the same shape over it.
pub(super) fn contiguous_copy<T: Element>(
    gpu: &Gpu,
    stream: &Stream,
    src: &GpuStorage<T>,
    layout: &Layout,
) -> Result<(GpuStorage<T>, Layout)> {
    let shape = layout.shape();
    let rank = shape.len();
    let batch = rank.saturating_sub(2);
    let copied: Vec<usize> = shape
        .iter()
        .zip(layout.strides())
        .enumerate()
        .map(|(i, (&n, &s))| if i < batch && s == 0 { 1 } else { n })
        .collect();
    let dense = contiguous_strides(&copied);
    let strides: Vec<isize> = dense
        .iter()
        .zip(layout.strides())
        .enumerate()
        .map(|(i, (&d, &s))| if i < batch && s == 0 { 0 } else { d })
        .collect();
    let from = Layout::new(&copied, layout.strides(), layout.offset())?;
    let into = Layout::contiguous(&copied)?;
    // SAFETY: the copy kernel below writes every element of the new storage (its layout is
    // the whole storage, contiguous) before anything reads it, on `stream`.
    let mut out = unsafe { GpuStorage::<T>::uninit(gpu, into.numel(), stream) }?;
    pointwise::unary(stream, &Identity, src, &from, &mut out, &into)?;
    Ok((out, Layout::new(shape, &strides, 0)?))
}

/// A zero operand `[B.., r, c]` (batch strides 0, one matrix): stands in for an operand of an
/// empty inner dim (`k == 0`), so the product is exactly zero and the epilogue still runs.
pub(super) fn zeros<'s, T: Element>(
    gpu: &Gpu,
    stream: &Stream,
    batch: &[usize],
    r: usize,
    c: usize,
) -> Result<Operand<'s, T>> {
    let mut shape = batch.to_vec();
    shape.extend([r, c]);
    let mut strides = vec![0isize; batch.len()];
    let c_stride = isize::try_from(c).map_err(|_| LayoutError::SizeOverflow {
        op: OP,
        shape: shape.clone(),
        what: "a zero operand",
    })?;
    strides.extend([c_stride, 1]);
    let storage = GpuStorage::zeros(gpu, r.saturating_mul(c), stream)?;
    Ok(Operand {
        buf: Buf::Owned(storage),
        layout: Layout::new(&shape, &strides, 0)?,
    })
}
