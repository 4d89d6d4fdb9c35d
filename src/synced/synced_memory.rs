//! [`SyncedMemory`]: Caffe's lazily allocated, lazily synchronized CPU/GPU memory, with the
//! head state in the type.

use std::marker::PhantomData;

use super::accel::GpuAccel;
use super::host::{HostBuffer, HostSlot, OwnedHost, OwnsHost};
use super::raw::{RawSynced, TransferStats};
use super::state::{
    CpuReadable, CpuWritable, Head, HeadAtCpu, HeadAtGpu, HeadState, Settled, ToCpu, ToGpu,
    Uninitialized,
};
use super::transition_error::TransitionError;
use crate::element::Element;
use crate::error::{Error, LayoutError};

/// `len` elements of `T` with a CPU copy and a GPU copy, each allocated on first use and
/// copied only when stale (Caffe's `SyncedMemory`). `S` is the head state; `H` says whether
/// the CPU side is owned ([`OwnedHost`], the default) or borrowed (`&'a mut [T]`).
///
/// Invariants:
/// 1. Both copies, when allocated, hold exactly [`len`](Self::len) elements.
/// 2. `S` is the truth about freshness: the side(s) `S` makes readable are allocated and hold
///    the data (see the state types in [`super::state`]).
/// 3. Methods that borrow a side exist only in states where that side is current
///    ([`CpuReadable`], [`super::GpuReadable`]) or the head ([`CpuWritable`],
///    [`super::GpuWritable`]); transitions consume the value, so an old state cannot be used
///    after a change, and a borrow cannot be held across one.
/// 4. A failed transition returns the value in its old state inside [`TransitionError`].
///
/// ```
/// use typestate_tensor::synced::{HeadAtCpu, SyncedMemory};
///
/// # fn main() -> typestate_tensor::Result<()> {
/// // CPU-only memory runs anywhere; `SyncedMemory::with_gpu(&gpu, len)` ties it to a GPU.
/// let m: SyncedMemory<f32> = SyncedMemory::new(3)?; // `Uninitialized`: nothing allocated
/// let mut m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut()?; // zero-filled CPU copy
/// m.cpu_mut().copy_from_slice(&[1.0, 2.0, 3.0]);
/// // A new batch each iteration, through `&mut`: the state stays `HeadAtCpu`.
/// let old = m.set_cpu_data_in_place(vec![4.0, 5.0, 6.0])?;
/// assert_eq!(old.map(|b| b.into_vec()), Some(vec![1.0, 2.0, 3.0]));
/// assert_eq!(m.cpu(), &[4.0, 5.0, 6.0]);
/// // The GPU side of CPU-only memory is an error, and the memory comes back unchanged.
/// let err = m.into_gpu().unwrap_err();
/// println!("{}", err.error); // "to_gpu: this memory is not tied to a GPU; ..."
/// let m = err.into_inner();
/// let m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu()?; // no copy: already current
/// assert_eq!(m.stats().copies(), 0);
/// # Ok(())
/// # }
/// ```
///
/// Caffe's calls map as follows (transitions return the new state; borrows do not copy):
///
/// | Caffe | here | copies |
/// |---|---|---|
/// | `SyncedMemory(size)` | [`SyncedMemory::new`] / [`SyncedMemory::with_gpu`] | none |
/// | `cpu_data()` | [`into_cpu()`](Self::into_cpu) then [`cpu()`](Self::cpu) | D2H if `HeadAtGpu` |
/// | `gpu_data()` | [`into_gpu()`](Self::into_gpu) then [`gpu()`](Self::gpu) | H2D if `HeadAtCpu` |
/// | `mutable_cpu_data()` | [`into_cpu_mut()`](Self::into_cpu_mut) then [`cpu_mut()`](Self::cpu_mut) | D2H if `HeadAtGpu` |
/// | `mutable_gpu_data()` | [`into_gpu_mut()`](Self::into_gpu_mut) then [`gpu_mut()`](Self::gpu_mut) | H2D if `HeadAtCpu` |
/// | `set_cpu_data(p)` | [`SyncedMemory::from_vec`], [`set_cpu_data`](Self::set_cpu_data), [`SyncedMemory::borrow_cpu`] | none |
/// | `set_gpu_data(p)` | [`SyncedMemory::from_gpu_storage`], [`set_gpu_data`](Self::set_gpu_data) | none |
/// | `async_gpu_push(stream)` | [`async_gpu_push`](Self::async_gpu_push) (gives `InFlight`), then [`wait()`](Self::wait) or [`gpu_after(&stream)`](Self::gpu_after) | H2D, queued |
/// | `head()` | the type `S`, or [`head()`](Self::head) at run time | |
pub struct SyncedMemory<T: Element, S: HeadState = Uninitialized, H: HostSlot<T> = OwnedHost<T>> {
    // Boxed: transitions move the memory by value, and so only move a pointer; a failed
    // one returns it inside an error that stays small.
    pub(crate) raw: Box<RawSynced<T, H, GpuAccel>>,
    state: PhantomData<S>,
}

/// A [`SyncedMemory`] whose CPU side is a caller's buffer, borrowed for `'a`.
///
/// **The buffer always ends up with the newest data.** When the borrow ends with the GPU
/// copy newer than the buffer (head `HeadAtGpu`, reached by `into_gpu_mut()` or
/// `set_gpu_data`), the memory copies it back first:
/// - [`release()`](SyncedMemory::release) (from any settled state) does the copy and returns
///   the buffer, or hands the memory back with the error: the form to use when errors
///   matter;
/// - dropping the memory does the same blocking copy; a failure there cannot be returned, so
///   it is recorded with the GPU ([`Gpu::check_err`](crate::gpu::Gpu::check_err)) and the
///   buffer keeps its old values. Nothing panics.
///
/// In every other state the buffer already holds the newest data (or, `Uninitialized`, none)
/// and nothing is copied. Why a write-back rather than a type that forbids the GPU head:
/// Caffe's `set_cpu_data` memory is used exactly that way (a layer computes on the GPU into a
/// caller's buffer), and a silent loss was the one outcome the type could not show.
/// `mem::forget` skips the copy, as it skips every destructor.
pub type BorrowedSyncedMemory<'a, T, S = HeadAtCpu> = SyncedMemory<T, S, &'a mut [T]>;

impl<T: Element> SyncedMemory<T, Uninitialized> {
    /// CPU-only memory of `len` elements (plain host memory); nothing is allocated yet.
    ///
    /// Errors if `len` elements of `T` overflow `isize` bytes.
    pub fn new(len: usize) -> Result<Self, Error> {
        Ok(Self::from_raw(Box::new(RawSynced::new(
            "SyncedMemory::new",
            len,
            OwnedHost::empty(),
            None,
        )?)))
    }
}

/// The error for a new CPU buffer `data` that does not hold `len` elements.
fn check_cpu_len<T>(op: &'static str, len: usize, data: &[T]) -> Option<LayoutError> {
    (data.len() != len).then(|| LayoutError::LengthMismatch {
        op,
        shape: vec![len],
        expected: len,
        got: data.len(),
    })
}

impl<T: Element> SyncedMemory<T, HeadAtCpu> {
    /// CPU-only memory holding `data` (Caffe `set_cpu_data`, but the memory owns the buffer
    /// and frees it; [`into_vec`](Self::into_vec) gives it back).
    pub fn from_vec(data: Vec<T>) -> Self {
        Self::from_raw(Box::new(RawSynced::from_host_buffer(
            OwnedHost::adopt(HostBuffer::from_vec(data)),
            None,
        )))
    }
}

impl<'a, T: Element> SyncedMemory<T, HeadAtCpu, &'a mut [T]> {
    /// CPU-only memory whose CPU side is `buf`, borrowed for `'a` (Caffe `set_cpu_data` with
    /// `own_cpu_data_ = false`). The borrow checker keeps `buf` alive and untouched while the
    /// memory lives; [`into_borrowed`](SyncedMemory::into_borrowed) hands it back.
    pub fn borrow_cpu(buf: &'a mut [T]) -> Self {
        Self::from_raw(Box::new(RawSynced::from_host_buffer(buf, None)))
    }
}

impl<T: Element, S: HeadState, H: HostSlot<T>> SyncedMemory<T, S, H> {
    pub(crate) fn from_raw(raw: Box<RawSynced<T, H, GpuAccel>>) -> Self {
        SyncedMemory {
            raw,
            state: PhantomData,
        }
    }

    /// Runs one machine step and retypes the memory as `N`, or hands it back unchanged.
    fn step<N: HeadState>(
        mut self,
        f: impl FnOnce(&mut RawSynced<T, H, GpuAccel>, Head) -> Result<Head, Error>,
    ) -> Result<SyncedMemory<T, N, H>, TransitionError<Self>> {
        match f(&mut self.raw, S::HEAD) {
            Ok(next) => {
                debug_assert_eq!(next, N::HEAD, "typed and run-time machines disagree");
                Ok(SyncedMemory::from_raw(self.raw))
            }
            Err(e) => Err(TransitionError::new(self, e)),
        }
    }

    /// Changes the state in the type without a transition.
    ///
    /// Precondition: the memory is in state `N` (callers know it from the run-time machine,
    /// e.g. `HeadAtCpu` is its own `MathSide::AfterWrite`).
    pub(crate) fn retype<N: HeadState>(self) -> SyncedMemory<T, N, H> {
        SyncedMemory::from_raw(self.raw)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size in bytes (Caffe `size()`).
    pub fn size_in_bytes(&self) -> usize {
        self.raw.bytes()
    }

    /// The head state at run time (Caffe `head()`); always `S::HEAD`.
    pub fn head(&self) -> Head {
        S::HEAD
    }

    /// Copies and allocations made so far by this memory.
    pub fn stats(&self) -> TransferStats {
        self.raw.stats()
    }

    /// Whether the memory is tied to a GPU (and so may use its GPU side).
    pub fn has_gpu(&self) -> bool {
        self.raw.accel().is_some()
    }

    /// Makes the CPU copy readable (Caffe `to_cpu()`, as called by `cpu_data()`):
    /// `Uninitialized -> HeadAtCpu` allocates it zero-filled; `HeadAtGpu -> Synced` copies
    /// device to host once; `HeadAtCpu` and `Synced` stay as they are, with no copy.
    pub fn into_cpu(self) -> Result<SyncedMemory<T, S::Next, H>, TransitionError<Self>>
    where
        S: ToCpu,
    {
        self.step(RawSynced::ensure_cpu_readable)
    }

    /// Makes the GPU copy readable (Caffe `to_gpu()`, as called by `gpu_data()`):
    /// `Uninitialized -> HeadAtGpu` allocates it zero-filled; `HeadAtCpu -> Synced` copies
    /// host to device once; `HeadAtGpu` and `Synced` stay as they are, with no copy.
    ///
    /// Fails with [`crate::error::StateError::NoGpu`] on memory not tied to a GPU.
    pub fn into_gpu(self) -> Result<SyncedMemory<T, <S as ToGpu>::Next, H>, TransitionError<Self>>
    where
        S: ToGpu,
    {
        self.step(RawSynced::ensure_gpu_readable)
    }

    /// Takes the CPU side for writing (Caffe `mutable_cpu_data()`): syncs it if stale, then
    /// the CPU side is the head, whatever the state was.
    pub fn into_cpu_mut(self) -> Result<SyncedMemory<T, HeadAtCpu, H>, TransitionError<Self>>
    where
        S: Settled,
    {
        self.step(RawSynced::make_cpu_head)
    }

    /// Takes the GPU side for writing (Caffe `mutable_gpu_data()`): syncs it if stale, then
    /// the GPU side is the head, whatever the state was.
    pub fn into_gpu_mut(self) -> Result<SyncedMemory<T, HeadAtGpu, H>, TransitionError<Self>>
    where
        S: Settled,
    {
        self.step(RawSynced::make_gpu_head)
    }

    /// The CPU copy (Caffe `cpu_data()` once readable). No copy, no state change.
    pub fn cpu(&self) -> &[T]
    where
        S: CpuReadable,
    {
        match self.raw.host() {
            Some(h) => h,
            None => unreachable!("invariant 2: a CpuReadable state has a CPU copy"),
        }
    }

    /// The CPU copy, writable (Caffe `mutable_cpu_data()` once the CPU side is the head).
    pub fn cpu_mut(&mut self) -> &mut [T]
    where
        S: CpuWritable,
    {
        match self.raw.host_mut() {
            Some(h) => h,
            None => unreachable!("invariant 2: a CpuWritable state has a CPU copy"),
        }
    }
}

impl<T: Element, S: HeadState> SyncedMemory<T, S> {
    /// Replaces the CPU side with `data` and makes it the head (Caffe `set_cpu_data`): the
    /// GPU copy, if any, is kept as a buffer but now stale. Returns the memory and the old CPU
    /// buffer, if there was one. A length mismatch hands both back.
    #[allow(clippy::type_complexity)] // the error hands back both inputs
    pub fn set_cpu_data(
        mut self,
        data: Vec<T>,
    ) -> Result<(SyncedMemory<T, HeadAtCpu>, Option<HostBuffer<T>>), TransitionError<(Self, Vec<T>)>>
    where
        S: Settled,
    {
        if let Some(error) = check_cpu_len("SyncedMemory::set_cpu_data", self.len(), &data) {
            return Err(TransitionError::new((self, data), error));
        }
        let old = self.raw.host_slot_mut().replace(HostBuffer::from_vec(data));
        Ok((SyncedMemory::from_raw(self.raw), old))
    }

    /// Whether the CPU copy is page-locked (it is when the memory is tied to a GPU and
    /// allocated the buffer itself); `None` while no CPU copy exists.
    pub fn is_host_pinned(&self) -> Option<bool> {
        self.raw.host_slot().buffer().map(HostBuffer::is_pinned)
    }

    /// The CPU copy as a vector (moves an adopted or plain buffer out; copies a pinned one).
    pub fn into_vec(self) -> Vec<T>
    where
        S: CpuReadable,
    {
        let mut raw = self.raw;
        match raw.host_slot_mut().take() {
            Some(b) => b.into_vec(),
            None => unreachable!("invariant 2: a CpuReadable state has a CPU copy"),
        }
    }
}

impl<T: Element> SyncedMemory<T, HeadAtCpu> {
    /// [`set_cpu_data`](Self::set_cpu_data) through `&mut self`, for memory whose CPU side is
    /// already the head (the state stays `HeadAtCpu`; a GPU copy, if any, stays stale):
    /// replaces the CPU buffer with `data` and returns the old one, e.g. to feed a new batch
    /// into the same memory each iteration. A length mismatch hands `data` back.
    pub fn set_cpu_data_in_place(
        &mut self,
        data: Vec<T>,
    ) -> Result<Option<HostBuffer<T>>, TransitionError<Vec<T>>> {
        if let Some(error) = check_cpu_len("SyncedMemory::set_cpu_data_in_place", self.len(), &data)
        {
            return Err(TransitionError::new(data, error));
        }
        Ok(self.raw.host_slot_mut().replace(HostBuffer::from_vec(data)))
    }
}

impl<'a, T: Element, S: HeadState> SyncedMemory<T, S, &'a mut [T]> {
    /// Ends the borrow and hands the caller's buffer back, holding the current data (no copy:
    /// the CPU side is current in this state).
    pub fn into_borrowed(self) -> &'a mut [T]
    where
        S: CpuReadable,
    {
        self.raw.into_host_slot()
    }

    /// Ends the borrow from any settled state and hands the caller's buffer back holding the
    /// newest data: from `HeadAtGpu` it first copies the GPU copy into the buffer (one
    /// blocking device-to-host copy, counted in [`stats`](Self::stats)); from `HeadAtCpu` and
    /// `Synced` it copies nothing; from `Uninitialized` the buffer comes back untouched.
    /// Dropping the memory does the same copy but can only record its error.
    ///
    /// # Errors
    /// The copy's error, with the memory handed back unchanged (its GPU copy still the head).
    pub fn release(mut self) -> Result<&'a mut [T], TransitionError<Self>>
    where
        S: Settled,
    {
        match self.raw.write_back() {
            Ok(()) => Ok(self.raw.into_host_slot()),
            Err(e) => Err(TransitionError::new(self, e)),
        }
    }
}

impl<T: Element, S: HeadState, H: HostSlot<T>> std::fmt::Debug for SyncedMemory<T, S, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncedMemory")
            .field("dtype", &T::DTYPE)
            .field("len", &self.len())
            .field("head", &S::HEAD)
            .field("gpu", &self.has_gpu())
            .field("stats", &self.stats())
            .finish()
    }
}

static_assertions::assert_eq_size!(
    SyncedMemory<f32, Uninitialized>,
    SyncedMemory<f32, HeadAtCpu>,
    SyncedMemory<f32, HeadAtGpu>,
    SyncedMemory<f32, super::Synced>,
    SyncedMemory<f32, super::InFlight>,
);
static_assertions::assert_eq_size!(
    BorrowedSyncedMemory<'static, f64, HeadAtCpu>,
    BorrowedSyncedMemory<'static, f64, super::Synced>,
);
static_assertions::assert_impl_all!(SyncedMemory<f32, super::Synced>: Send, Sync);
static_assertions::assert_impl_all!(BorrowedSyncedMemory<'static, f32>: Send, Sync);
static_assertions::assert_not_impl_any!(SyncedMemory<f32, HeadAtCpu>: Clone, Copy);
