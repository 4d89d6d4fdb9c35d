//! `pad`: PyTorch's `F.pad` with its four modes. The input is copied once into the middle of
//! the output; the borders are then filled dim by dim from the output itself (a border
//! along dim `d` spans the full, already padded extent of the dims before `d` and the
//! unpadded extent of those after it, so corners come out as PyTorch's).

use super::{ReadRepr, Tensor};
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::tensor::Backend;

/// How [`Tensor::pad`] fills the border (PyTorch's `mode`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum PadMode<T> {
    /// Every border element is this value (`mode="constant", value=v`).
    Constant(T),
    /// The input mirrored about its edge element, which is not repeated (`mode="reflect"`:
    /// `[1, 2, 3]` padded by 2 on the left reads `3, 2, 1, 2, 3`); needs `pad < size`.
    Reflect,
    /// The edge element repeated (`mode="replicate"`); needs a non-empty dim.
    Replicate,
    /// The input wrapped around (`mode="circular"`); needs `pad <= size`.
    Circular,
}

impl<T> PadMode<T> {
    fn name(&self) -> &'static str {
        match self {
            PadMode::Constant(_) => "constant",
            PadMode::Reflect => "reflect",
            PadMode::Replicate => "replicate",
            PadMode::Circular => "circular",
        }
    }
}

/// Where one border along one dim reads from, in output coordinates: `start..start + len`,
/// reversed for a reflection.
struct Source {
    start: usize,
    len: usize,
    flip: bool,
}

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// A new row-major tensor with borders added, as PyTorch's `F.pad(x, pads, mode)`:
    /// `pads` lists `(before, after)` pairs from the **last** dim backwards
    /// (`[left, right, top, bottom]` pads the last two dims), at most one pair per dim.
    ///
    /// ```
    /// use typestate_tensor::tensor::pad::PadMode;
    /// use typestate_tensor::Tensor;
    ///
    /// let x = Tensor::<f32>::from_vec(&[3], vec![1.0, 2.0, 3.0])?;
    /// assert_eq!(x.pad(&[2, 1], PadMode::Reflect)?.to_vec(), [3.0, 2.0, 1.0, 2.0, 3.0, 2.0]);
    /// assert_eq!(x.pad(&[1, 2], PadMode::Constant(9.0))?.to_vec(), [9.0, 1.0, 2.0, 3.0, 9.0, 9.0]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::PadLength`] for an odd count or more pairs than dims,
    /// [`LayoutError::PadTooWide`] for a border its mode cannot fill, a size overflow; the
    /// device's errors.
    pub fn pad(&self, pads: &[usize], mode: PadMode<T>) -> Result<Tensor<T, D>> {
        const OP: &str = "pad";
        let rank = self.rank();
        if !pads.len().is_multiple_of(2) || pads.len() > 2 * rank {
            return Err(LayoutError::PadLength {
                op: OP,
                got: pads.len(),
                rank,
            }
            .into());
        }
        let shape = self.shape().to_vec();
        let mut before = vec![0usize; rank];
        let mut after = vec![0usize; rank];
        for (i, pair) in pads.chunks(2).enumerate() {
            before[rank - 1 - i] = pair[0];
            after[rank - 1 - i] = pair[1];
        }
        let mut out_shape = Vec::with_capacity(rank);
        for d in 0..rank {
            check_mode(&mode, d, before[d].max(after[d]), shape[d])?;
            let total = shape[d]
                .checked_add(before[d])
                .and_then(|n| n.checked_add(after[d]))
                .ok_or_else(|| LayoutError::SizeOverflow {
                    op: OP,
                    shape: shape.clone(),
                    what: "padded dim",
                })?;
            out_shape.push(total);
        }
        let mut out = match mode {
            PadMode::Constant(value) => Tensor::full_on(&out_shape, value, self.device())?,
            _ => Tensor::zeros_on(&out_shape, self.device())?,
        };
        if self.numel() > 0 {
            let mut middle = out.view_mut();
            for d in 0..rank {
                middle = middle.narrow(d, before[d], shape[d])?;
            }
            middle.copy_from(self)?;
        }
        if matches!(mode, PadMode::Constant(_)) || out.numel() == 0 {
            return Ok(out);
        }
        for d in 0..rank {
            let n = shape[d];
            let sides = [(0, before[d], true), (before[d] + n, after[d], false)];
            for (dst_start, width, left) in sides {
                if width == 0 {
                    continue;
                }
                let src = source(&mode, before[d], n, width, left);
                // The source and the border are disjoint parts of `out`: copy the (small)
                // source out first, since one storage cannot be read and written at once.
                let mut piece = out.view();
                for (e, start, len) in border(d, src.start, src.len, &before, &shape) {
                    piece = piece.narrow(e, start, len)?;
                }
                if src.flip {
                    piece = piece.flip(d)?;
                }
                let piece = piece.contiguous()?;
                let mut dst = out.view_mut();
                for (e, start, len) in border(d, dst_start, width, &before, &shape) {
                    dst = dst.narrow(e, start, len)?;
                }
                dst.copy_from(&piece)?;
            }
        }
        Ok(out)
    }
}

/// The part of the output a border along `d` covers, as `(dim, start, len)` narrows:
/// `start..start + len` along `d`, all of the dims before `d` (padded already), the input's
/// extent of the dims after it.
fn border(
    d: usize,
    start: usize,
    len: usize,
    before: &[usize],
    shape: &[usize],
) -> Vec<(usize, usize, usize)> {
    std::iter::once((d, start, len))
        .chain((d + 1..shape.len()).map(|e| (e, before[e], shape[e])))
        .collect()
}

/// Where the border of `width` on the `left` (or right) of a dim of input size `n`, placed
/// at `lead` in the output, reads from. A replicated edge reads one element, broadcast.
fn source<T>(mode: &PadMode<T>, lead: usize, n: usize, width: usize, left: bool) -> Source {
    let (start, len, flip) = match (mode, left) {
        (PadMode::Reflect, true) => (lead + 1, width, true),
        (PadMode::Reflect, false) => (lead + n - 1 - width, width, true),
        (PadMode::Replicate, true) => (lead, 1, false),
        (PadMode::Replicate, false) => (lead + n - 1, 1, false),
        (PadMode::Circular, true) => (lead + n - width, width, false),
        (PadMode::Circular, false) | (PadMode::Constant(_), _) => (lead, width, false),
    };
    Source { start, len, flip }
}

/// Whether `mode` can fill a border of `pad` next to a dim of `size`.
fn check_mode<T>(mode: &PadMode<T>, dim: usize, pad: usize, size: usize) -> Result<()> {
    let (fits, rule) = match mode {
        PadMode::Constant(_) => (true, ""),
        PadMode::Reflect => (pad < size, "a padding smaller than the dim"),
        PadMode::Replicate => (size > 0, "a non-empty dim"),
        PadMode::Circular => (pad <= size, "a padding no wider than the dim"),
    };
    if pad == 0 || fits {
        return Ok(());
    }
    Err(LayoutError::PadTooWide {
        op: "pad",
        mode: mode.name(),
        dim,
        pad,
        size,
        rule,
    }
    .into())
}
