//! The CPU side of a synced memory: owned (allocated lazily, or adopted) or borrowed.
//!
//! Caffe tells the two apart with `own_cpu_data_` and frees only what it allocated. Here the
//! difference is a type parameter ([`HostSlot`]): [`OwnedHost`] drops what it holds, and a
//! borrowed `&'a mut [T]` carries its lifetime into the memory's type, so the buffer cannot
//! be freed or touched while the memory uses it.

use crate::element::Element;
use crate::error::{AllocError, Error, OutOfMemoryError};
use crate::runtime::PinnedBuffer;

mod sealed {
    pub trait Sealed {}
}

/// Where the CPU copy of a synced memory lives. Sealed: [`OwnedHost`] (the default) and
/// `&'a mut [T]` (see [`super::SyncedMemory::borrow_cpu`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold the CPU side of a SyncedMemory",
    note = "use the default `OwnedHost<T>`, or borrow a buffer with `SyncedMemory::borrow_cpu(&mut slice)`"
)]
pub trait HostSlot<T: Element>: sealed::Sealed + Send + Sync {
    /// The CPU copy, if allocated.
    fn get(&self) -> Option<&[T]>;
    /// The CPU copy, mutably, if allocated.
    fn get_mut(&mut self) -> Option<&mut [T]>;
    /// The CPU copy, allocating it with `alloc` first if absent. The flag says whether it
    /// allocated.
    #[doc(hidden)]
    fn get_or_try_alloc(
        &mut self,
        alloc: impl FnOnce() -> Result<HostBuffer<T>, Error>,
    ) -> Result<(&mut [T], bool), Error>;
    /// Whether the slot is the caller's buffer, which must hold the newest data when the
    /// memory lets it go (see [`super::BorrowedSyncedMemory`]).
    #[doc(hidden)]
    const BORROWED: bool = false;
    /// Takes the slot out, leaving an empty one behind (for memories whose `Drop` runs).
    #[doc(hidden)]
    fn take_slot(&mut self) -> Self
    where
        Self: Sized;
}

/// CPU slots the memory owns: only these may be pushed asynchronously, since a borrowed
/// buffer could be handed back (by leaking the memory) while the copy still reads it.
/// Sealed: [`OwnedHost`].
#[diagnostic::on_unimplemented(
    message = "an asynchronous push needs a CPU buffer the memory owns, not `{Self}`",
    label = "a borrowed buffer could be released while the copy still reads it",
    note = "create the memory with `SyncedMemory::with_gpu` (pinned, truly asynchronous) or `from_vec_with_gpu`, or use the blocking `.into_gpu()`"
)]
pub trait OwnsHost<T: Element>: HostSlot<T> {
    /// The owned buffer, if allocated.
    #[doc(hidden)]
    fn buffer(&self) -> Option<&HostBuffer<T>>;
}

/// An owned CPU buffer: plain memory, or page-locked memory for fast, asynchronous copies.
#[derive(Debug)]
pub struct HostBuffer<T: Element> {
    repr: HostRepr<T>,
}

#[derive(Debug)]
enum HostRepr<T: Element> {
    /// Pageable memory: the memory is not tied to a GPU, or a caller's `Vec` was adopted.
    Plain(Vec<T>),
    /// Page-locked memory from the GPU's pinned source. It tracks the asynchronous copies
    /// queued on it; a synced memory keeps none pending outside `InFlight`.
    Pinned(PinnedBuffer<T>),
}

/// The elements of a pinned buffer with no copy pending.
///
/// `PinnedBuffer` refuses access only after the driver failed while tracking one of its
/// asynchronous copies (its context is then broken, and the buffer unusable): nothing
/// sensible can be returned, so this is the one place that panics on a driver failure.
fn pinned_access<R>(result: Result<R, crate::error::GpuError>) -> R {
    match result {
        Ok(r) => r,
        Err(e) => panic!("pinned host buffer unusable after a driver failure: {e}"),
    }
}

impl<T: Element> HostBuffer<T> {
    /// Adopts a caller's vector (Caffe `set_cpu_data`, but owned: no dangling pointer).
    pub fn from_vec(v: Vec<T>) -> Self {
        HostBuffer {
            repr: HostRepr::Plain(v),
        }
    }

    /// A zero-filled plain buffer of `len` elements; out-of-memory is an error, not an abort.
    pub fn zeroed_plain(len: usize) -> Result<Self, Error> {
        let mut v = Vec::new();
        v.try_reserve_exact(len).map_err(|_| {
            Error::Alloc(AllocError::OutOfMemory(Box::new(OutOfMemoryError {
                device: "host".to_owned(),
                requested: len.saturating_mul(std::mem::size_of::<T>()),
                free: 0,
                total: 0,
                allocated: 0,
                reserved: 0,
                cached: 0,
                hints: Vec::new(),
            })))
        })?;
        v.resize(len, T::ZERO);
        Ok(Self::from_vec(v))
    }

    pub(crate) fn pinned(buf: PinnedBuffer<T>) -> Self {
        HostBuffer {
            repr: HostRepr::Pinned(buf),
        }
    }

    /// The page-locked buffer, if this is one (for asynchronous copies).
    pub(crate) fn as_pinned(&self) -> Option<&PinnedBuffer<T>> {
        match &self.repr {
            HostRepr::Pinned(p) => Some(p),
            HostRepr::Plain(_) => None,
        }
    }

    /// Whether the memory is page-locked (pinned).
    pub fn is_pinned(&self) -> bool {
        matches!(self.repr, HostRepr::Pinned(_))
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.repr {
            HostRepr::Plain(v) => v.len(),
            HostRepr::Pinned(p) => p.len(),
        }
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements (waits for copies queued on a pinned buffer, of which a synced memory
    /// leaves none outside `InFlight`).
    ///
    /// # Panics
    ///
    /// Only if a pinned buffer became unusable because the driver failed while tracking an
    /// asynchronous copy of it.
    pub fn as_slice(&self) -> &[T] {
        match &self.repr {
            HostRepr::Plain(v) => v,
            HostRepr::Pinned(p) => pinned_access(p.as_slice()),
        }
    }

    /// The elements, mutably (see [`as_slice`](Self::as_slice) for the one panic).
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match &mut self.repr {
            HostRepr::Plain(v) => v,
            HostRepr::Pinned(p) => pinned_access(p.as_mut_slice()),
        }
    }

    /// The elements as a `Vec` (moves a plain buffer out, copies a pinned one; see
    /// [`as_slice`](Self::as_slice) for the one panic).
    pub fn into_vec(self) -> Vec<T> {
        match self.repr {
            HostRepr::Plain(v) => v,
            HostRepr::Pinned(p) => pinned_access(p.to_vec()),
        }
    }
}

/// The default [`HostSlot`]: a CPU buffer owned by the memory, allocated on first use
/// (pinned when the memory is tied to a GPU) or adopted from the caller.
#[derive(Debug)]
pub struct OwnedHost<T: Element> {
    buf: Option<HostBuffer<T>>,
}

impl<T: Element> OwnedHost<T> {
    pub(crate) fn empty() -> Self {
        OwnedHost { buf: None }
    }

    pub(crate) fn adopt(buf: HostBuffer<T>) -> Self {
        OwnedHost { buf: Some(buf) }
    }

    pub(crate) fn replace(&mut self, buf: HostBuffer<T>) -> Option<HostBuffer<T>> {
        self.buf.replace(buf)
    }

    pub(crate) fn take(&mut self) -> Option<HostBuffer<T>> {
        self.buf.take()
    }
}

impl<T: Element> OwnsHost<T> for OwnedHost<T> {
    fn buffer(&self) -> Option<&HostBuffer<T>> {
        self.buf.as_ref()
    }
}

impl<T: Element> sealed::Sealed for OwnedHost<T> {}
impl<T: Element> HostSlot<T> for OwnedHost<T> {
    fn get(&self) -> Option<&[T]> {
        self.buf.as_ref().map(HostBuffer::as_slice)
    }
    fn get_mut(&mut self) -> Option<&mut [T]> {
        self.buf.as_mut().map(HostBuffer::as_mut_slice)
    }
    fn get_or_try_alloc(
        &mut self,
        alloc: impl FnOnce() -> Result<HostBuffer<T>, Error>,
    ) -> Result<(&mut [T], bool), Error> {
        match &mut self.buf {
            Some(b) => Ok((b.as_mut_slice(), false)),
            slot => Ok((slot.insert(alloc()?).as_mut_slice(), true)),
        }
    }
    fn take_slot(&mut self) -> Self {
        OwnedHost {
            buf: self.buf.take(),
        }
    }
}

impl<T: Element> sealed::Sealed for &mut [T] {}
impl<T: Element> HostSlot<T> for &mut [T] {
    fn get(&self) -> Option<&[T]> {
        Some(self)
    }
    fn get_mut(&mut self) -> Option<&mut [T]> {
        Some(self)
    }
    fn get_or_try_alloc(
        &mut self,
        _alloc: impl FnOnce() -> Result<HostBuffer<T>, Error>,
    ) -> Result<(&mut [T], bool), Error> {
        Ok((self, false))
    }
    const BORROWED: bool = true;
    fn take_slot(&mut self) -> Self {
        std::mem::take(self)
    }
}
