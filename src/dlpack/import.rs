//! Import: a DLPack tensor (legacy or versioned) taken over without a copy, as a
//! [`DlpackTensor`] that views borrow from and that calls the producer's deleter once when
//! dropped.

use super::device::DlpackDevice;
use super::ffi::{
    DLDataType, DLManagedTensor, DLManagedTensorVersioned, DLTensor, DLPACK_FLAG_BITMASK_READ_ONLY,
};
use crate::element::Element;
use crate::error::{DlpackError, Error, Result};
use crate::layout::{checked_numel, contiguous_strides, Layout, MAX_DIMS};
use crate::tensor::{TensorView, TensorViewMut};

/// A tensor another library made, imported through DLPack without a copy: it owns the
/// producer's managed tensor, lends views of its memory ([`DlpackTensor::view`],
/// [`DlpackTensor::view_mut`]) and calls the producer's deleter exactly once when dropped
/// (never panicking), after the work this crate queued on the memory is done (on the GPU it
/// synchronises the streams that used it first).
///
/// Made by the `unsafe` [`DlpackTensor::from_versioned`] and [`DlpackTensor::from_legacy`],
/// which check everything a DLPack tensor says about itself (element type, device, rank,
/// shape, strides, offset, alignment, flags) and trust the rest (see their `# Safety`).
pub struct DlpackTensor<T: Element, D: DlpackDevice> {
    memory: D::Memory<T>,
    layout: Layout,
    device: D,
    read_only: bool,
    /// The address of the element at all-zero indices (`data + byte_offset`), for callers
    /// that compare pointers with the producer's.
    addr: u64,
}

impl<T: Element, D: DlpackDevice> std::fmt::Debug for DlpackTensor<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DlpackTensor")
            .field("dtype", &T::DTYPE)
            .field("device", &self.device)
            .field("layout", &self.layout)
            .field("read_only", &self.read_only)
            .field("data_ptr", &format_args!("{:#x}", self.addr))
            .finish()
    }
}

/// The producer's managed tensor; dropping it calls the deleter, once.
enum Managed {
    Legacy(*mut DLManagedTensor),
    Versioned(*mut DLManagedTensorVersioned),
}

// SAFETY: the pointer is used for one thing after the import's checks: calling the
// producer's deleter, once, from whichever thread drops the import, which the import's
// `# Safety` contract allows.
unsafe impl Send for Managed {}
// SAFETY: `&Managed` gives access to nothing.
unsafe impl Sync for Managed {}

impl Drop for Managed {
    fn drop(&mut self) {
        // SAFETY: the pointer is the one the import was given, valid until its deleter runs
        // (the import's contract), and this is the only place the deleter is called: once.
        unsafe {
            match *self {
                Managed::Legacy(p) => {
                    if let Some(del) = (*p).deleter {
                        del(p);
                    }
                }
                Managed::Versioned(p) => {
                    if let Some(del) = (*p).deleter {
                        del(p);
                    }
                }
            }
        }
    }
}

impl<T: Element, D: DlpackDevice> DlpackTensor<T, D> {
    /// Takes over a DLPack 1.x managed tensor (a `"dltensor_versioned"` capsule's pointer).
    ///
    /// Whatever it returns, the tensor is taken over: on an error the deleter has been called
    /// before returning; on success it is called once when the [`DlpackTensor`] drops. A
    /// major version other than 1 is refused ([`DlpackError::Version`]) reading only the
    /// version and the deleter. `DLPACK_FLAG_BITMASK_READ_ONLY` makes the import read-only.
    ///
    /// # Errors
    /// [`DlpackError`]: a null pointer, another element type than `T`, a device other than
    /// `device` (for the GPU: `kDLCUDA` of its ordinal, and the driver's record of the data
    /// address agrees), a rank above [`MAX_DIMS`], a negative size, a layout whose addresses
    /// overflow, reach below `data` or are not aligned for `T`; the GPU's errors.
    ///
    /// # Safety
    ///
    /// `managed` is null or points to a valid `DLManagedTensorVersioned` that the caller owns
    /// and hands over (nobody else calls its deleter). Its deleter may be called from any
    /// thread. If its major version is 1, the `DLTensor` is valid: `shape` (and `strides`
    /// unless null) point to `ndim` values, and the bytes from `data` to the last element the
    /// shape, strides and `byte_offset` address are memory of the stated device holding valid
    /// values of the stated type (for `bool`, 0 or 1), allocated until the deleter runs. This
    /// is what the import cannot check: DLPack gives no allocation size. Nobody writes that
    /// memory until the deleter runs (and nobody reads it either if the import is written
    /// through [`DlpackTensor::view_mut`]) but in stream order: for a GPU tensor, the producer
    /// has ordered its pending work before work queued on `device`'s default stream (the
    /// producer's side of the handshake: `__dlpack__(stream=...)` with that stream).
    pub unsafe fn from_versioned(
        managed: *mut DLManagedTensorVersioned,
        device: &D,
    ) -> Result<Self> {
        const OP: &str = "DlpackTensor::from_versioned";
        if managed.is_null() {
            return Err(DlpackError::NullPointer {
                op: OP,
                what: "managed tensor",
            }
            .into());
        }
        let owner = Managed::Versioned(managed);
        // SAFETY: non-null, valid by the contract; the version and flags are read in every
        // DLPack 1.x layout (the header keeps them stable).
        let (version, flags) = unsafe { ((*managed).version, (*managed).flags) };
        if version.major != 1 {
            drop(owner); // the deleter, as the header asks
            return Err(DlpackError::Version {
                op: OP,
                major: version.major,
                minor: version.minor,
            }
            .into());
        }
        let read_only = flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0;
        // SAFETY: major version 1: the `DLTensor` is valid (contract), borrowed while `owner`
        // (which keeps it alive) is held.
        let t = unsafe { &(*managed).dl_tensor };
        // SAFETY: the contract, passed on.
        unsafe { Self::adopt(OP, t, owner, device, read_only) }
    }

    /// Takes over a legacy (pre-1.0) managed tensor (a `"dltensor"` capsule's pointer), as
    /// [`DlpackTensor::from_versioned`] (the legacy form has no flags: the import is
    /// writable).
    ///
    /// # Errors
    /// As [`DlpackTensor::from_versioned`].
    ///
    /// # Safety
    ///
    /// As [`DlpackTensor::from_versioned`], for a `DLManagedTensor`.
    pub unsafe fn from_legacy(managed: *mut DLManagedTensor, device: &D) -> Result<Self> {
        const OP: &str = "DlpackTensor::from_legacy";
        if managed.is_null() {
            return Err(DlpackError::NullPointer {
                op: OP,
                what: "managed tensor",
            }
            .into());
        }
        let owner = Managed::Legacy(managed);
        // SAFETY: valid by the contract, alive while `owner` is held.
        let t = unsafe { &(*managed).dl_tensor };
        // SAFETY: the contract, passed on.
        unsafe { Self::adopt(OP, t, owner, device, false) }
    }

    /// Checks `t` and takes its memory over; `owner` is dropped (the deleter) on error.
    ///
    /// # Safety
    /// `t` is valid and its memory as the public constructors' contract says, alive while
    /// `owner` is.
    unsafe fn adopt(
        op: &'static str,
        t: &DLTensor,
        owner: Managed,
        device: &D,
        read_only: bool,
    ) -> Result<Self> {
        // SAFETY: passed on.
        let (start, len, layout, addr) = unsafe { checked_layout::<T>(op, t) }?;
        device.check_dl_device(op, t.device, start)?;
        // SAFETY: `checked_layout` found `len` elements from `start`, aligned, within what the
        // producer's tensor addresses (in bounds by the contract), of `device` (just checked),
        // of type `T`, kept alive by `owner` and ordered as the contract says.
        let memory = unsafe { device.adopt::<T>(start, len, Box::new(owner)) }?;
        Ok(DlpackTensor {
            memory,
            layout,
            device: device.clone(),
            read_only,
            addr,
        })
    }

    /// A read-only view of the tensor, borrowing the import.
    pub fn view(&self) -> TensorView<'_, T, D> {
        TensorView::from_checked(D::memory(&self.memory), self.layout.clone(), &self.device)
    }

    /// A writable view of the tensor, borrowing the import exclusively.
    ///
    /// # Errors
    /// [`DlpackError::ReadOnly`] when the producer flagged it read-only;
    /// [`LayoutError::OverlappingOutput`](crate::error::LayoutError::OverlappingOutput) when
    /// its elements alias (zero strides).
    pub fn view_mut(&mut self) -> Result<TensorViewMut<'_, T, D>> {
        if self.read_only {
            let why = "the producer set DLPACK_FLAG_BITMASK_READ_ONLY";
            return Err(DlpackError::ReadOnly {
                op: "DlpackTensor::view_mut",
                why,
            }
            .into());
        }
        TensorViewMut::new(
            D::memory_mut(&mut self.memory),
            self.layout.clone(),
            &self.device,
        )
    }

    /// Whether the producer flagged the tensor read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The shape, strides and offset of the views (the offset counts from the lowest element,
    /// so negative strides have a non-negative offset).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The address of the element at all-zero indices, `data + byte_offset` (a device address
    /// on the GPU; 0 for an empty tensor): equal to the producer's data pointer, no copy.
    pub fn data_ptr(&self) -> u64 {
        self.addr
    }
}

/// Reads and checks a `DLTensor`'s description: `(lowest address, elements from there to the
/// highest, layout from the lowest, address of element 0)`. Nothing is read at `data`.
///
/// # Safety
/// `t.shape` (and `t.strides` unless null) point to `t.ndim` values when `t.ndim > 0`.
unsafe fn checked_layout<T: Element>(
    op: &'static str,
    t: &DLTensor,
) -> Result<(u64, usize, Layout, u64)> {
    let ndim = usize::try_from(t.ndim).ok().filter(|&n| n <= MAX_DIMS);
    let Some(ndim) = ndim else {
        return Err(DlpackError::Rank {
            op,
            ndim: t.ndim,
            max: MAX_DIMS,
        }
        .into());
    };
    let want = DLDataType::of(T::DTYPE);
    if t.dtype != want {
        let d = t.dtype;
        return Err(DlpackError::DTypeMismatch {
            op,
            expected: T::DTYPE,
            got_code: d.code,
            got_bits: d.bits,
            got_lanes: d.lanes,
        }
        .into());
    }
    let read = |p: *mut i64, what: &'static str| -> Result<&[i64]> {
        if ndim == 0 {
            Ok(&[])
        } else if p.is_null() {
            Err(DlpackError::NullPointer { op, what }.into())
        } else {
            // SAFETY: `ndim` values at `p` (the caller's contract), borrowed while `t` is.
            Ok(unsafe { std::slice::from_raw_parts(p.cast_const(), ndim) })
        }
    };
    let shape_i = read(t.shape, "shape")?;
    let strides_i: Vec<i64> = if t.strides.is_null() {
        Vec::new()
    } else {
        read(t.strides, "strides")?.to_vec()
    };
    let bad = |reason: &'static str| -> Error {
        let strides = if strides_i.is_empty() {
            vec![]
        } else {
            strides_i.clone()
        };
        DlpackError::BadLayout {
            op,
            reason,
            shape: shape_i.to_vec(),
            strides,
            byte_offset: t.byte_offset,
        }
        .into()
    };
    let shape = shape_i
        .iter()
        .map(|&s| usize::try_from(s))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| bad("a negative size"))?;
    let numel = checked_numel(op, &shape)?;
    let strides: Vec<isize> = if t.strides.is_null() {
        contiguous_strides(&shape)
    } else {
        strides_i
            .iter()
            .map(|&s| isize::try_from(s))
            .collect::<Result<_, _>>()
            .map_err(|_| bad("a stride does not fit isize"))?
    };
    if numel == 0 {
        let layout = Layout::new(&shape, &contiguous_strides(&shape), 0)?;
        return Ok((0, 0, layout, 0));
    }
    let data = t.data as usize as u64;
    if data == 0 {
        return Err(DlpackError::NullPointer { op, what: "data" }.into());
    }
    let size = T::DTYPE.size_in_bytes() as i128;
    // Offsets in elements relative to element 0, in i128: no overflow for 32 dims of i64.
    let (mut lo, mut hi) = (0i128, 0i128);
    for (&n, &s) in shape.iter().zip(&strides) {
        let reach = (n as i128 - 1) * s as i128;
        if reach < 0 {
            lo += reach
        } else {
            hi += reach
        }
    }
    let base = data as i128 + t.byte_offset as i128;
    let low_addr = base + lo * size;
    let end_addr = base + (hi + 1) * size;
    if low_addr < data as i128 {
        return Err(bad(
            "an element lies below `data` (a negative stride past the start)",
        ));
    }
    let count = hi - lo + 1;
    if end_addr > u64::MAX as i128 || count * size > isize::MAX as i128 {
        return Err(bad("the addressed bytes overflow"));
    }
    if base % std::mem::align_of::<T>() as i128 != 0 {
        return Err(bad("the data address is not aligned for the element type"));
    }
    // Within `0..=isize::MAX` (checked just above), so the casts are exact.
    let layout = Layout::new(&shape, &strides, (-lo) as usize)?;
    layout.check_within(op, count as usize)?;
    Ok((low_addr as u64, count as usize, layout, base as u64))
}
