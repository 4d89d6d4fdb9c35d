//! Printing, on every device: `{}` like ndarray and PyTorch (the elements, then shape and
//! dtype), `{:?}` a struct with the elements, dtype, device and layout.
//!
//! ```text
//! [[ 1.0, -2.5],
//!  [10.0,  3.0]], shape=[2, 2], dtype=f32
//! ```
//!
//! - Floats print in the shortest form that reads back as the same value, always with a
//!   decimal point or an exponent (`1.0`, `0.1`, `1e-7`, `NaN`, `inf`), never as an integer;
//!   `{:.3}` prints them with that many decimals. Every element is padded to the widest.
//! - Past [`SUMMARY_THRESHOLD`] elements the tensor is summarised as PyTorch and ndarray do:
//!   each dim longer than `2 * EDGE_ITEMS` shows its first and last [`EDGE_ITEMS`] entries
//!   around `...`. Where that still leaves more than [`MAX_SHOWN`] elements (many short
//!   dims: a one-element tensor broadcast to `[6; 12]` has 6^12), the outer dims longer
//!   than 2 show only their first and last entries around `...`, outermost first, until at
//!   most [`MAX_SHOWN`] remain (or every such dim is cut): what is printed and copied is
//!   bounded by the corners, never by the element count.
//! - A GPU tensor copies to the host only what is printed: for a summarised tensor the
//!   corners, gathered on the GPU one dim at a time (each step a strided copy kernel into a
//!   smaller tensor), then one download. A failed copy (or printing inside a CUDA graph
//!   capture, where host copies are refused) prints `<elements not available: ...>` in place
//!   of the elements, never a panic.
//! - The device is shown when it is not the CPU (`device=cuda:0`).

use std::fmt::{self, Write as _};

use super::backend::Backend;
use super::{ReadRepr, Tensor, TensorView};
use crate::element::{DType, Element};
use crate::error::Result;
use crate::layout::Layout;

/// Tensors with more elements than this are printed summarised (PyTorch's threshold).
pub const SUMMARY_THRESHOLD: usize = 1000;

/// Entries shown at each end of a summarised dim (PyTorch's `edgeitems`).
pub const EDGE_ITEMS: usize = 3;

/// Most elements a summarised tensor shows (and copies to the host) before its outer dims
/// are cut down to their first and last entries. PyTorch's rule alone keeps up to
/// `(2 * EDGE_ITEMS)^rank` elements, under this up to rank 6 (6^6 = 46656).
pub const MAX_SHOWN: usize = 1 << 16;

/// The printed part of one dim: `shown` entries, with `...` after the first `shown / 2`
/// when `gap`.
#[derive(Clone, Copy, Debug)]
struct DimShown {
    shown: usize,
    gap: bool,
}

/// The elements that will be printed, on the host, row-major over the shown entries.
struct Shown<T> {
    values: Vec<T>,
    dims: Vec<DimShown>,
}

/// What each dim of `shape` shows: PyTorch's rule (past [`SUMMARY_THRESHOLD`] elements,
/// the first and last [`EDGE_ITEMS`] of each dim longer than `2 * EDGE_ITEMS`), then, while
/// more than [`MAX_SHOWN`] elements would show, the first and last entry of the outer dims
/// longer than 2, outermost first.
fn shown_dims(shape: &[usize]) -> Vec<DimShown> {
    let numel: usize = shape.iter().product();
    let mut dims: Vec<DimShown> = shape
        .iter()
        .map(|&n| {
            let gap = numel > SUMMARY_THRESHOLD && n > 2 * EDGE_ITEMS;
            DimShown {
                shown: if gap { 2 * EDGE_ITEMS } else { n },
                gap,
            }
        })
        .collect();
    // At most `numel`, which fits `usize` (Layout invariant 2).
    let mut total: usize = dims.iter().map(|d| d.shown).product();
    for (dim, &n) in dims.iter_mut().zip(shape) {
        if total <= MAX_SHOWN {
            break;
        }
        if n > 2 {
            // `dim.shown` divides `total`, and `shown > 2` here (`n > 2`, `shown` is `n` or 6).
            total = total / dim.shown * 2;
            *dim = DimShown {
                shown: 2,
                gap: true,
            };
        }
    }
    dims
}

/// `layout` with dim `d` (of size `n > 2 * edge`, stride `s`) split into two dims,
/// `[2, edge]` with strides `[(n - edge) s, s]`: exactly its first and last `edge` entries,
/// in order.
fn split_dim(layout: &Layout, d: usize, edge: usize) -> Result<Layout> {
    let mut shape = layout.shape().to_vec();
    let mut strides = layout.strides().to_vec();
    let (n, s) = (shape[d], strides[d]);
    // `(n - edge) * s` is an offset step the layout already reaches (`n - 1 >= n - edge`).
    let far = (n - edge) as isize * s;
    shape.splice(d..=d, [2, edge]);
    strides.splice(d..=d, [far, s]);
    Ok(Layout::new(&shape, &strides, layout.offset())?)
}

/// The elements to print of `v`, copied to the host.
fn shown<T: Element, D: Backend>(v: &TensorView<'_, T, D>) -> Result<Shown<T>> {
    // Before the corner copies below queue anything (inside a CUDA graph capture they would
    // be recorded into the graph).
    v.device().check_host_copy()?;
    let dims = shown_dims(v.shape());
    // One dim at a time, largest first, each step copying the corners kept so far into a
    // smaller row-major tensor on the device (one split at a time keeps every copy within
    // the GPU kernels' rank).
    // Only the shown elements are ever copied, so the copies are bounded by the corners.
    let mut order: Vec<usize> = (0..v.rank()).filter(|&d| dims[d].gap).collect();
    order.sort_by_key(|&d| std::cmp::Reverse(v.shape()[d]));
    let mut kept: Option<Tensor<T, D>> = None;
    for d in order {
        let next = {
            let cur = kept.as_ref().map_or_else(|| v.clone(), |t| t.view());
            let split = TensorView::new(
                cur.storage(),
                split_dim(cur.layout(), d, dims[d].shown / 2)?,
                cur.device(),
            )?;
            let mut next = split.contiguous()?;
            let mut shape = cur.shape().to_vec();
            shape[d] = dims[d].shown;
            next.set_layout(Layout::contiguous(&shape)?)?;
            next
        };
        kept = Some(next);
    }
    let values = match &kept {
        Some(t) => t.device().to_host(&t.view())?,
        None => v.device().to_host(v)?,
    };
    Ok(Shown { values, dims })
}

/// `x` as printed: floats in their shortest round-trip form with a point or an exponent, or
/// with `precision` decimals; integers and bools as Rust prints them.
fn element_text<T: Element>(x: T, precision: Option<usize>) -> String {
    match T::DTYPE {
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 => {
            let v = x.to_f64();
            match precision {
                Some(p) => format!("{v:.p$}"),
                None => shortest_float::<T>(v),
            }
        }
        _ => format!("{x:?}"),
    }
}

/// The shortest decimal text that reads back as the same `T` (`T` a float type, `v` its
/// exact value), in Rust's `Debug` style: `1.0`, `0.1`, `1e-7`, `NaN`, `inf`.
fn shortest_float<T: Element>(v: f64) -> String {
    match T::DTYPE {
        DType::F64 => format!("{v:?}"),
        // Exact: `v` is an `f32` value.
        DType::F32 => format!("{:?}", v as f32),
        _ => {
            // A half type: its shortest form is at most 5 significant digits; search for
            // the fewest that read back as the same value through `from_f64`.
            if !v.is_finite() || v == 0.0 {
                return format!("{:?}", v as f32);
            }
            let exponent = v.abs().log10().floor();
            let scientific = !(-5.0..16.0).contains(&exponent);
            for digits in 1..=17usize {
                let text = if scientific {
                    format!("{:.*e}", digits - 1, v)
                } else {
                    let decimals = (digits as f64 - 1.0 - exponent).max(0.0) as usize;
                    format!("{v:.decimals$}")
                };
                let back: f64 = text.parse().unwrap_or(f64::NAN);
                if T::from_f64(back).to_f64() == v {
                    return with_point(text);
                }
            }
            format!("{:?}", v as f32)
        }
    }
}

/// `text` without trailing zeros after its point, and with `.0` added when it has no point
/// and no exponent (`3` becomes `3.0`, `0.10` becomes `0.1`).
fn with_point(text: String) -> String {
    if text.contains(['e', 'N', 'i']) {
        text
    } else if text.contains('.') {
        let trimmed = text.trim_end_matches('0');
        if trimmed.ends_with('.') {
            format!("{trimmed}0")
        } else {
            trimmed.to_owned()
        }
    } else {
        text + ".0"
    }
}

/// Writes the nested brackets of `texts` (row-major over `dims`), each padded to `width`.
/// `depth` is the nesting level; `grid` puts each row on its own line (the `{}` form).
fn write_nested(
    out: &mut String,
    texts: &[String],
    dims: &[DimShown],
    depth: usize,
    width: usize,
    grid: bool,
) {
    let Some((first, rest)) = dims.split_first() else {
        let _ = write!(out, "{:>width$}", texts.first().map_or("", String::as_str));
        return;
    };
    let inner: usize = rest.iter().map(|d| d.shown).product();
    let separator = |out: &mut String| {
        out.push(',');
        if rest.is_empty() || !grid {
            out.push(' ');
        } else {
            out.extend(std::iter::repeat_n('\n', rest.len()));
            out.extend(std::iter::repeat_n(' ', depth + 1));
        }
    };
    out.push('[');
    for i in 0..first.shown {
        if i > 0 {
            separator(out);
        }
        let block = &texts[(i * inner).min(texts.len())..((i + 1) * inner).min(texts.len())];
        write_nested(out, block, rest, depth + 1, width, grid);
        if first.gap && i + 1 == first.shown / 2 {
            separator(out);
            out.push_str("...");
        }
    }
    out.push(']');
}

/// The elements of `v` as printed, or the error that kept them from the host.
fn elements_text<T: Element, D: Backend>(
    v: &TensorView<'_, T, D>,
    precision: Option<usize>,
    grid: bool,
) -> std::result::Result<String, crate::error::Error> {
    let shown = shown(v)?;
    let texts: Vec<String> = shown
        .values
        .iter()
        .map(|&x| element_text(x, precision))
        .collect();
    let width = texts.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    write_nested(&mut out, &texts, &shown.dims, 0, width, grid);
    Ok(out)
}

impl<T: Element, D: Backend, S: ReadRepr<T, D>> fmt::Display for Tensor<T, D, S> {
    /// The elements as ndarray and PyTorch print them (summarised past
    /// [`SUMMARY_THRESHOLD`] elements), then `shape=[..], dtype=..` and, off the CPU, the
    /// device: `[[1.0, 2.0],\n [3.0, 4.0]], shape=[2, 2], dtype=f32`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.view();
        match elements_text(&v, f.precision(), true) {
            Ok(text) => f.write_str(&text)?,
            Err(e) => write!(f, "<elements not available: {e}>")?,
        }
        write!(f, ", shape={:?}, dtype={}", self.shape(), T::DTYPE)?;
        let device = self.device().name();
        if device != "cpu" {
            write!(f, ", device={device}")?;
        }
        Ok(())
    }
}

/// The elements of a tensor for `Debug`: one line in `{:?}`, a grid in `{:#?}`.
struct Elements<'v, 'a, T: Element, D: Backend>(&'v TensorView<'a, T, D>);

impl<T: Element, D: Backend> fmt::Debug for Elements<'_, '_, T, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match elements_text(self.0, f.precision(), f.alternate()) {
            Ok(text) => f.write_str(&text),
            Err(e) => write!(f, "<elements not available: {e}>"),
        }
    }
}

impl<T: Element, D: Backend, S: ReadRepr<T, D>> fmt::Debug for Tensor<T, D, S> {
    /// The type (`Tensor`, `TensorView`, `TensorViewMut`), the elements (summarised as in
    /// `Display`; one line, or a grid with `{:#?}`), dtype, device and layout.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.view();
        f.debug_struct(S::NAME)
            .field("data", &Elements(&v))
            .field("dtype", &T::DTYPE)
            .field("device", &self.device().name())
            .field("shape", &self.layout().shape())
            .field("strides", &self.layout().strides())
            .field("offset", &self.layout().offset())
            .finish()
    }
}
