//! A kernel's parameters as the driver takes them: packed once by a launch's planning
//! ([`pack_args`] into [`KernelArgs`]), then frozen with their `void**` array into
//! [`LaunchArgs`], which a launch plan keeps and a repeated launch patches in place (its
//! operand addresses and scalars).
//!
//! Arguments go through the driver's `void**` array rather than cudarc's launch builder: a
//! kernel's parameter list depends on the launch (arity, index width, and an
//! `OffsetCalculator` whose size depends on the rank), and the builder wants one `DeviceRepr`
//! Rust type per parameter type. [`KernelArgs`] keeps every parameter's bytes in one buffer
//! instead, in exactly the order the generated entry point declares them
//! ([`super::source::write_entry`]): the outputs, the inputs, `n`, the scalars, and for the
//! strided forms the calculator's byte image from [`OffsetCalculator::kernel_param_bytes`].

use std::any::Any;
use std::cell::Cell;
use std::ffi::c_void;

use crate::element::Element;
use crate::engine_gpu::offset_calculator::OffsetCalculator;
use crate::error::LayoutError;
use crate::layout::CollapsedLayout;

use super::form::{Form, IndexWidth};
use super::plan::Plan;

/// A scalar in its compute type, as kernel parameter bytes (little-endian, like the device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalarBytes {
    bytes: [u8; 8],
    len: usize,
}

impl ScalarBytes {
    /// `v` converted to `T::CUDA_COMPUTE_TYPE` (exactly: f16 and bf16 widen to f32, i8 and
    /// i16 to i32, u8 and u16 to u32; the others are their own compute type).
    pub fn of<T: Element>(v: T) -> Self {
        let any: &dyn Any = &v;
        let mut bytes = [0u8; 8];
        let mut put = |b: &[u8]| {
            bytes[..b.len()].copy_from_slice(b);
            b.len()
        };
        // `Element` is sealed to exactly these types, so one branch matches.
        let len = if let Some(x) = any.downcast_ref::<f32>() {
            put(&x.to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<f64>() {
            put(&x.to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<half::f16>() {
            put(&x.to_f32().to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<half::bf16>() {
            put(&x.to_f32().to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<i32>() {
            put(&x.to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<i64>() {
            put(&x.to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<u8>() {
            put(&u32::from(*x).to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<bool>() {
            put(&[u8::from(*x)])
        } else if let Some(x) = any.downcast_ref::<i8>() {
            put(&i32::from(*x).to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<i16>() {
            put(&i32::from(*x).to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<u16>() {
            put(&u32::from(*x).to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<u32>() {
            put(&x.to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<u64>() {
            put(&x.to_le_bytes())
        } else {
            0
        };
        ScalarBytes { bytes, len }
    }

    /// The parameter's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// The parameter as one little-endian word and its length in bytes (at most 8), as
    /// [`LaunchArgs::set_word`] takes it.
    pub(crate) fn word(&self) -> (u64, usize) {
        (u64::from_le_bytes(self.bytes), self.len)
    }
}

/// A kernel's parameters for `cuLaunchKernel`: each parameter's bytes at an 8-byte aligned
/// slot (the largest alignment of any parameter type used) of one buffer.
#[derive(Clone, Debug, Default)]
pub struct KernelArgs {
    words: Vec<u64>,
    /// (first word, byte length) of each parameter.
    slots: Vec<(usize, usize)>,
}

impl KernelArgs {
    /// Appends one parameter.
    pub fn push(&mut self, bytes: &[u8]) {
        let start = self.words.len();
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.words.push(u64::from_le_bytes(w));
        }
        self.slots.push((start, bytes.len()));
    }

    /// Number of parameters.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Parameter `i`'s bytes, or `None` past the end.
    #[cfg(test)]
    pub fn param(&self, i: usize) -> Option<Vec<u8>> {
        let &(start, len) = self.slots.get(i)?;
        let bytes: Vec<u8> = self.words[start..]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .take(len)
            .collect();
        Some(bytes)
    }

    /// Replaces parameter `i` with `bytes`, which must have its length; `false` (and no
    /// change) when it does not or there is no parameter `i`.
    #[cfg(test)]
    pub fn set(&mut self, i: usize, bytes: &[u8]) -> bool {
        match self.slots.get(i) {
            Some(&(start, len)) if len == bytes.len() => {
                for (w, chunk) in self.words[start..].iter_mut().zip(bytes.chunks(8)) {
                    let mut b = [0u8; 8];
                    b[..chunk.len()].copy_from_slice(chunk);
                    *w = u64::from_le_bytes(b);
                }
                true
            }
            _ => false,
        }
    }

    /// The `void**` array: a pointer to each parameter's first byte. The pointers are valid
    /// while `self` is neither moved nor changed.
    #[cfg(test)]
    pub(crate) fn pointers(&mut self) -> Vec<*mut c_void> {
        let base = self.words.as_mut_ptr();
        self.slots
            .iter()
            .map(|&(start, _)| base.wrapping_add(start).cast::<c_void>())
            .collect()
    }
}

/// Packed parameters frozen for launching: each parameter at an 8-byte aligned slot of one
/// heap buffer that never grows or moves, and the `void**` array pointing into it, built
/// once. A launch patches words in place ([`LaunchArgs::set_word`]) and hands
/// [`LaunchArgs::params`] to the driver.
///
/// Invariant: `slots[i].0 < words.len()` for every parameter (each has at least one byte),
/// and `words` is never resized (private fields). [`params`](LaunchArgs::params) points each
/// entry of the array at its slot afresh from `words`' address at the call, so no pointer
/// derived before the plan moved (into its cache, through a map's rehash) is handed to the
/// driver. The words are `Cell`s, so writing them through `&self` is a shared write that
/// leaves pointers derived from `words` valid.
#[derive(Debug)]
pub(crate) struct LaunchArgs {
    words: Box<[Cell<u64>]>,
    /// (first word, byte length) of each parameter.
    slots: Box<[(usize, usize)]>,
    params: Box<[*mut c_void]>,
}

impl LaunchArgs {
    /// Freezes `args`.
    pub(crate) fn new(args: KernelArgs) -> Self {
        let words: Box<[Cell<u64>]> = args.words.into_iter().map(Cell::new).collect();
        let params = vec![std::ptr::null_mut(); args.slots.len()].into_boxed_slice();
        LaunchArgs {
            words,
            slots: args.slots.into_boxed_slice(),
            params,
        }
    }

    /// Number of parameters.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Replaces parameter `i`, of at most 8 bytes, with the low `len` bytes of `word`
    /// (little-endian); `false` (and no change) when parameter `i` does not exist or is not
    /// `len` bytes long.
    #[inline]
    pub(crate) fn set_word(&self, i: usize, word: u64, len: usize) -> bool {
        match self.slots.get(i) {
            Some(&(start, l)) if l == len && len <= 8 => match self.words.get(start) {
                Some(w) => {
                    w.set(word);
                    true
                }
                None => false,
            },
            _ => false,
        }
    }

    /// The `void**` array: one pointer to each parameter's first byte, derived from the words'
    /// address now (the type's invariant), valid until `self` is moved or dropped.
    #[inline]
    pub(crate) fn params(&mut self) -> &mut [*mut c_void] {
        let base = self.words.as_ptr();
        for (param, &(start, _)) in self.params.iter_mut().zip(self.slots.iter()) {
            // `wrapping_add` stays inside the buffer: `start < words.len()` (the invariant).
            // `Cell<u64>` has the layout of `u64`.
            *param = base.wrapping_add(start).cast::<c_void>().cast_mut();
        }
        &mut self.params
    }

    /// Parameter `i`'s bytes, or `None` past the end.
    #[cfg(test)]
    pub(crate) fn param(&self, i: usize) -> Option<Vec<u8>> {
        let &(start, len) = self.slots.get(i)?;
        let bytes: Vec<u8> = self.words[start..]
            .iter()
            .flat_map(|w| w.get().to_le_bytes())
            .take(len)
            .collect();
        Some(bytes)
    }
}

/// The device address of each operand's first element in `layout`: its buffer address plus
/// its collapsed offset in bytes.
///
/// # Errors
/// [`LayoutError::SizeOverflow`] naming `op` when an address overflows.
pub(crate) fn operand_addresses<const N: usize>(
    op: &'static str,
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    ptrs: [u64; N],
) -> Result<[u64; N], LayoutError> {
    let mut addrs = [0u64; N];
    for k in 0..N {
        addrs[k] = u64::try_from(layout.offsets[k])
            .ok()
            .and_then(|o| o.checked_mul(sizes[k] as u64))
            .and_then(|b| b.checked_add(ptrs[k]))
            .ok_or_else(|| address_overflow(op, layout))?;
    }
    Ok(addrs)
}

fn address_overflow<const N: usize>(op: &'static str, layout: &CollapsedLayout<N>) -> LayoutError {
    LayoutError::SizeOverflow {
        op,
        shape: layout.shape.to_vec(),
        what: "device address",
    }
}

/// The parameters of an Apply entry point in the order `write_entry` declares them: the
/// operand addresses, `n` (elements, or vectors for the inner-vectorised form) at the
/// plan's index width, the scalars, and the form's `OffsetCalculator` image.
///
/// # Errors
/// [`LayoutError::SizeOverflow`] when `n` does not fit the index width, and the offset
/// calculator's errors.
pub(crate) fn pack_args<'s, const N: usize>(
    op: &'static str,
    layout: &CollapsedLayout<N>,
    p: Plan,
    addrs: [u64; N],
    scalars: impl IntoIterator<Item = &'s [u8]>,
) -> Result<KernelArgs, LayoutError> {
    let mut args = KernelArgs::default();
    for addr in addrs {
        args.push(&addr.to_le_bytes());
    }
    let count = match p.form {
        Form::StridedVec { vec, .. } => layout.numel() / usize::from(vec),
        _ => layout.numel(),
    } as u64;
    match p.index {
        // The plan picked 32 bits only for numel <= i32::MAX.
        IndexWidth::Bits32 => args.push(
            &u32::try_from(count)
                .map_err(|_| address_overflow(op, layout))?
                .to_le_bytes(),
        ),
        IndexWidth::Bits64 => args.push(&count.to_le_bytes()),
    }
    for s in scalars {
        args.push(s);
    }
    match p.form {
        Form::Contiguous { .. } => {}
        Form::Strided { .. } => {
            args.push(&calc_bytes(p.index, &layout.shape, &layout.strides)?);
        }
        Form::Tiled { dim, .. } => {
            let (shape, strides) = tiled_order(layout, usize::from(dim));
            args.push(&calc_bytes(p.index, &shape, &strides)?);
        }
        Form::StridedVec { vec, .. } => {
            // The same walk over vectors: the innermost size divided by `vec`, and each
            // operand moving `vec` elements (or 0, broadcast) per step along it.
            let vec = usize::from(vec);
            let mut shape = layout.shape.clone();
            let mut strides = layout.strides.clone();
            if let Some(inner) = shape.last_mut() {
                *inner /= vec;
            }
            for s in &mut strides {
                if let Some(inner) = s.last_mut() {
                    *inner *= vec as isize;
                }
            }
            args.push(&calc_bytes(p.index, &shape, &strides)?);
        }
    }
    Ok(args)
}

/// The dims of `layout` in the tiled form's order: the batch dims (every dim but `dim` and the
/// last, in collapsed order), then `dim` (the staged inputs' contiguous dim, the tile's rows),
/// then the last dim (the output's contiguous dim, the tile's columns). Reordering dims of an
/// offset calculator changes no offset, only which linear index reaches it; the kernel walks
/// the batch, rows and columns itself.
fn tiled_order<const N: usize>(
    layout: &CollapsedLayout<N>,
    dim: usize,
) -> (Vec<usize>, [Vec<isize>; N]) {
    let last = layout.rank().saturating_sub(1);
    let order: Vec<usize> = (0..layout.rank())
        .filter(|&d| d != dim && d != last)
        .chain([dim, last])
        .collect();
    let shape = order.iter().map(|&d| layout.shape[d]).collect();
    let strides = std::array::from_fn(|k| order.iter().map(|&d| layout.strides[k][d]).collect());
    (shape, strides)
}

/// The byte image of the `OffsetCalculator` over `shape` and `strides` at index width `index`.
fn calc_bytes<const N: usize, S: std::ops::Deref<Target = [isize]>>(
    index: IndexWidth,
    shape: &[usize],
    strides: &[S; N],
) -> Result<Vec<u8>, LayoutError> {
    let strides: [&[isize]; N] = std::array::from_fn(|k| &*strides[k]);
    Ok(match index {
        IndexWidth::Bits32 => OffsetCalculator::<u32, N>::new(shape, strides)?.kernel_param_bytes(),
        IndexWidth::Bits64 => OffsetCalculator::<u64, N>::new(shape, strides)?.kernel_param_bytes(),
    })
}
