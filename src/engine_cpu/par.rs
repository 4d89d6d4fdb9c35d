//! Where the CPU engine's pointwise results go, and how an op is split across rayon's threads
//! (issue 29).
//!
//! An op of at least `2 * GRAIN` elements whose output is row-major contiguous (every new
//! output; a `_into` or in-place destination that is) is cut into chunks of output positions
//! ([`crate::tensor::expr::host::split_len`]: about four per thread of the *current* rayon
//! pool, so `pool.install(..)` chooses the threads), each written through its own disjoint
//! `&mut` slice (`chunks_mut`, handed to rayon's tasks) by the same kernel on a [`Walk`] of its positions: untiled
//! ranges of runs, or whole rows of tiles when an input is transposed. Every element is
//! computed alone, so the result does not depend on the chunks. Smaller ops, and
//! destinations that are not contiguous, run on the calling thread as one walk.
//!
//! A new output is not zero-filled first: untiled runs arrive in output order, so each chunk
//! appends to its part of the `Vec`'s spare capacity ([`Out::Append`]) and the length is set
//! once every chunk reports all its slots written. Tiled runs do not arrive in order; their
//! output starts as zeroed pages from the allocator ([`zeroed_vec`]), which cost nothing
//! until each task writes (and faults in) its part.

use std::ops::Range;

use super::kernels::Out;
use super::runs::{wants_tiles, Walk, TILE_ROWS};
use super::vec_with_capacity;
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::host_vec::zeroed_vec;
use crate::layout::CollapsedLayout;
use crate::tensor::expr::host::{split_len, sum_over_parts};

/// How an op over `c` (operand 0: a row-major output) is cut: chunks of `chunk` output
/// positions; for a tiled op whole rows of `row_len` positions (a multiple of [`TILE_ROWS`]
/// rows per chunk, so tiles stay whole).
#[derive(Clone, Copy, Debug)]
struct Split {
    chunk: usize,
    row_len: Option<usize>,
}

impl Split {
    /// `None` when the op stays on this thread.
    fn new<const N: usize>(c: &CollapsedLayout<N>, tiled: bool) -> Option<Split> {
        let ch = split_len(c.numel())?;
        if !tiled {
            return Some(Split {
                chunk: ch,
                row_len: None,
            });
        }
        let len = c.shape[c.rank() - 1].max(1);
        let rows = ch.div_ceil(len).div_ceil(TILE_ROWS) * TILE_ROWS;
        Some(Split {
            chunk: rows * len,
            row_len: Some(len),
        })
    }

    /// The walk of chunk `k`, `len` positions long.
    fn walk(&self, k: usize, len: usize) -> Walk {
        let s = k * self.chunk;
        match self.row_len {
            None => Walk::Span(s..s + len),
            Some(l) => Walk::TileRows(s / l..(s + len).div_ceil(l)),
        }
    }
}

/// A new row-major output for the collapsed op `c` (operand 0), written by `kernel` on the
/// calling thread: appended to unfilled memory when untiled, written into zeros when tiled.
/// For kernels that cannot cross threads (a user's closure, [`Tensor::map`]).
///
/// [`Tensor::map`]: crate::tensor::Tensor::map
pub(crate) fn into_new_here<U: Element, const N: usize>(
    c: &CollapsedLayout<N>,
    kernel: impl FnOnce(&Walk, &mut Out<'_, U>),
) -> Result<Vec<U>> {
    let len = c.numel();
    let tiled = wants_tiles(c);
    let walk = Walk::Whole { tiled };
    if tiled {
        // Zeroed pages (nothing written here); the tiles fault them in as they write.
        let mut out = zeroed_vec::<U>(len)?;
        kernel(
            &walk,
            &mut Out::Write {
                buf: &mut out,
                base: 0,
            },
        );
        return Ok(out);
    }
    let mut out = vec_with_capacity::<U>(len)?;
    let filled = {
        let buf = spare(&mut out, len, c)?;
        let mut sink = Out::Append { buf, filled: 0 };
        kernel(&walk, &mut sink);
        filled(&sink)
    };
    finish(out, len, filled, c)
}

/// [`into_new_here`], split across the current rayon pool when large.
pub(crate) fn into_new<U: Element, const N: usize>(
    c: &CollapsedLayout<N>,
    kernel: impl Fn(&Walk, &mut Out<'_, U>) + Sync,
) -> Result<Vec<U>> {
    let tiled = wants_tiles(c);
    let Some(split) = Split::new(c, tiled) else {
        return into_new_here(c, kernel);
    };
    let len = c.numel();
    if tiled {
        // Zeroed pages: each task faults in the part it writes, on its own thread (a fill
        // here wrote all of it on this one first).
        let mut out = zeroed_vec::<U>(len)?;
        let parts: Vec<&mut [U]> = out.chunks_mut(split.chunk).collect();
        sum_over_parts(parts, &|k, buf| {
            let walk = split.walk(k, buf.len());
            kernel(
                &walk,
                &mut Out::Write {
                    buf,
                    base: k * split.chunk,
                },
            );
            0
        });
        return Ok(out);
    }
    let mut out = vec_with_capacity::<U>(len)?;
    let parts: Vec<_> = spare(&mut out, len, c)?.chunks_mut(split.chunk).collect();
    let filled = sum_over_parts(parts, &|k, buf| {
        let walk = split.walk(k, buf.len());
        let mut sink = Out::Append { buf, filled: 0 };
        kernel(&walk, &mut sink);
        // At most this chunk's length, so the sum reaches `len` only when every chunk
        // wrote all its slots.
        filled(&sink)
    });
    finish(out, len, filled, c)
}

/// Runs `kernel(walk, dst_part, base)` over the collapsed op `c`, whose operand 0 is the
/// destination with storage `dst` (`dst_part` starts at storage index `base`). Split across
/// the current rayon pool when large and `contiguous` (the destination's storage range when
/// its layout is row-major contiguous).
pub(crate) fn into_view<U: Send, const N: usize>(
    c: &CollapsedLayout<N>,
    dst: &mut [U],
    contiguous: Option<Range<usize>>,
    kernel: impl Fn(&Walk, &mut [U], usize) + Sync,
) {
    let tiled = wants_tiles(c);
    match (contiguous, Split::new(c, tiled)) {
        (Some(r), Some(split)) => {
            let parts: Vec<&mut [U]> = dst[r.clone()].chunks_mut(split.chunk).collect();
            sum_over_parts(parts, &|k, part| {
                let walk = split.walk(k, part.len());
                kernel(&walk, part, r.start + k * split.chunk);
                0
            });
        }
        _ => kernel(&Walk::Whole { tiled }, dst, 0),
    }
}

/// The first `len` slots of `out`'s spare capacity (reserved by [`vec_with_capacity`]).
fn spare<'v, U, const N: usize>(
    out: &'v mut Vec<U>,
    len: usize,
    c: &CollapsedLayout<N>,
) -> Result<&'v mut [std::mem::MaybeUninit<U>]> {
    let got = out.capacity();
    out.spare_capacity_mut()
        .get_mut(..len)
        .ok_or_else(|| short(c, len, got))
}

fn filled<U>(sink: &Out<'_, U>) -> usize {
    match sink {
        Out::Append { filled, .. } => *filled,
        Out::Write { .. } => 0,
    }
}

/// `out` with its length set to `len` once `filled == len` slots were written.
fn finish<U, const N: usize>(
    mut out: Vec<U>,
    len: usize,
    filled: usize,
    c: &CollapsedLayout<N>,
) -> Result<Vec<U>> {
    if filled != len {
        // Unreachable by the walks' contract (each position in exactly one run); an error
        // beats a short tensor.
        return Err(short(c, len, filled));
    }
    // SAFETY: `out` is empty with capacity >= `len` (`spare` took `len` slots of it), and its
    // first `len` slots are initialised: [`Out::Append`] writes slot `i` of its buffer before
    // counting it, in order, so each buffer's first `filled` slots are written; the buffers
    // are the disjoint chunks of those `len` slots, each counted at most its length, and the
    // counts sum to `len`, so every chunk (and so every slot) is full.
    unsafe { out.set_len(len) };
    Ok(out)
}

fn short<const N: usize>(c: &CollapsedLayout<N>, expected: usize, got: usize) -> crate::Error {
    LayoutError::LengthMismatch {
        op: "cpu engine",
        shape: c.shape.to_vec(),
        expected,
        got,
    }
    .into()
}
