//! [`GpuStorage`]: typed device memory from a [`Gpu`]'s allocator, its stream order and its
//! release. Its copies (host slices, pinned buffers, device memory of the same GPU, and
//! [`PendingCopy`]) are `copy.rs`; copies between GPUs are `runtime/peer/`.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

mod copy;
// issue 30 (dlpack): foreign device memory (DLPack imports).
mod foreign;

/// What keeps foreign memory alive (`foreign.rs`); dropped (its `Drop` releases the memory to
/// its producer) once no work of ours on the memory is pending.
type ForeignOwner = Box<dyn Send + Sync>;

pub use copy::PendingCopy;

use super::byte_len;
use super::device::Gpu;
use super::driver;
use super::graph::pool::GraphPool;
use super::graph::{active, state};
use super::stream::Stream;
use super::stream_order::{Access, StreamOrder};
use crate::element::Element;
use crate::error::{AllocError, Error, LayoutError};
use crate::storage::allocator::{check_handed_out, Block, DeviceAllocator};

fn check_len(op: &'static str, expected: usize, got: usize) -> Result<(), LayoutError> {
    if expected == got {
        Ok(())
    } else {
        Err(LayoutError::LengthMismatch {
            op,
            shape: vec![expected],
            expected,
            got,
        })
    }
}

/// Device memory for `len` elements of `T` on one GPU: the storage of `Tensor<T, Gpu>`.
///
/// Invariants:
/// - Foreign memory (`foreign` set: a DLPack import, `foreign.rs`) is owned by `foreign`
///   instead, never by an allocator: `block` names it, and the drop waits for the work
///   queued on it before dropping `foreign`. The points below hold for the other storages.
/// - `block` comes from `pool`'s allocator if `pool` is set (memory allocated inside a CUDA
///   graph capture, docs/GRAPHS.md), else from `gpu.allocator()`, and holds at least
///   `len * size_of::<T>()` bytes of device memory of `gpu`'s device, used by this value
///   alone (and by the replays of the graph that captured it, for a pool's memory: a pool is
///   private to one graph). It goes back to that allocator exactly once, in `Drop` (errors
///   there are recorded, see [`Gpu::check_err`]).
/// - Every element is initialised, in stream order: zero-filled or copied at creation (or
///   promised by the caller of [`GpuStorage::uninit`]). So reading it back gives valid `T`s.
/// - `stream` (the home stream, the one it was allocated and initialised on, `block.stream`)
///   is kept alive.
/// - Stream order (docs/STREAMS.md): `order` knows the stream of the last write and the
///   streams that read since. Every read or write of the memory, by any path of this crate
///   (copies here, kernels, reductions), first goes through `GpuStorage::access`, which
///   makes the work's stream wait for what it must (a read for the last write, a write for
///   the last write and every read since) and records the access. Writes are asked through
///   `&mut self`, so a recorded write has been queued before anything else can order after
///   it. Every stream used besides the home stream was also passed to the allocator's
///   `record_stream` on first use, so the memory is reused only after the work queued on
///   it before the free is done.
///
/// Copies come in two forms. The plain ones (`copy_from_host`, ...) queue the copy on the
/// given stream and wait for that stream before returning. The `_async` ones do not wait for
/// the stream: device-to-device and [`PinnedBuffer`](crate::runtime::PinnedBuffer) copies return once queued; copies from
/// or to other host memory return once the copy is done with the host memory (CUDA stages
/// a pageable source and finishes a pageable target before returning; page-locked memory
/// they cannot track is waited for: see [`GpuStorage::copy_from_host_async`]). Those reading
/// or writing host memory return a [`PendingCopy`] that keeps the host memory borrowed and
/// waits when dropped. Only [`PinnedBuffer`](crate::runtime::PinnedBuffer) memory is copied truly asynchronously.
///
/// Inside a CUDA graph capture ([`Gpu::capture`], docs/GRAPHS.md), on the capturing thread,
/// every copy from or to the host and every call that waits is refused with
/// [`GpuError::NotCapturable`](crate::error::GpuError::NotCapturable); device-to-device copies are recorded like kernels. Memory
/// allocated there comes from the graph's private pool.
///
/// Any stream of the memory's GPU may be used with any call: the memory orders the work
/// itself, so no use can see data older than the last write queued before it, and no write
/// can overtake a read queued before it. While one stream is used throughout, this costs no
/// event and no lock.
pub struct GpuStorage<T: Element> {
    block: Block,
    len: usize,
    gpu: Gpu,
    stream: Stream,
    order: StreamOrder,
    /// The private pool of the graph capture that allocated this memory, if any.
    pool: Option<Arc<GraphPool>>,
    /// issue 30 (dlpack): for foreign memory (`foreign.rs`, a DLPack import), what keeps it
    /// alive; then `block` came from no allocator and goes back to none.
    foreign: Option<ForeignOwner>,
    _element: PhantomData<T>,
}

impl<T: Element> GpuStorage<T> {
    /// Allocates without initialising; callers establish the initialisation invariant.
    fn allocate(op: &'static str, gpu: &Gpu, len: usize, stream: &Stream) -> Result<Self, Error> {
        gpu.check_stream(op, stream)?;
        let bytes = byte_len::<T>(op, len)?;
        // Inside a capture, on the capturing thread: the capture's private pool, with the
        // capture mode relaxed around it (`cuMemAlloc` is refused while capturing otherwise).
        let pool = active::allocation_pool(op, stream.id(), stream.capture_owner())?;
        let block = match &pool {
            None => gpu.allocator().allocate(bytes, stream.id())?,
            Some(pool) => state::relaxed(|| {
                pool.allocator()
                    .allocate(bytes, stream.id())
                    .map_err(Error::from)
            })?,
        };
        let storage = GpuStorage {
            block,
            len,
            gpu: gpu.clone(),
            stream: stream.clone(),
            order: StreamOrder::new(),
            pool,
            foreign: None,
            _element: PhantomData,
        };
        if let Err(reason) = check_handed_out(&storage.block, bytes, stream.id()) {
            // `storage` drops here and hands the block back.
            return Err(AllocError::BrokenAllocator {
                allocator: storage.allocator().name(),
                reason,
            }
            .into());
        }
        Ok(storage)
    }

    /// Zero-filled device memory for `len` elements, allocated on `stream` and filled in
    /// stream order (`cuMemsetD8Async`): work queued on `stream` after this sees zeros.
    pub fn zeros(gpu: &Gpu, len: usize, stream: &Stream) -> Result<Self, Error> {
        let storage = Self::allocate("GpuStorage::zeros", gpu, len, stream)?;
        if len > 0 {
            // SAFETY: the block is live, holds at least `byte_len()` bytes and is used by
            // nobody else (just allocated). It stays allocated until the memset completes:
            // it is freed only on drop, to its allocator, in order on `stream` (its own).
            unsafe {
                driver::memset_zero_async(storage.block.addr(), storage.byte_len(), stream.cuda())
            }?;
        }
        // All-zero bytes are a valid `T` (`Element`'s contract): initialised.
        Ok(storage)
    }

    /// Device memory for `len` elements allocated on `stream`, not initialised.
    ///
    /// # Safety
    ///
    /// Every element must be written (a copy into the whole storage, or a kernel that writes
    /// every element) before any element is read, in stream order: reading uninitialised
    /// device memory back gives arbitrary bytes, which are not a valid `bool`.
    pub unsafe fn uninit(gpu: &Gpu, len: usize, stream: &Stream) -> Result<Self, Error> {
        Self::allocate("GpuStorage::uninit", gpu, len, stream)
    }

    /// Device memory holding a copy of `src`, allocated and copied on `stream` (waits for it).
    pub fn from_host(gpu: &Gpu, src: &[T], stream: &Stream) -> Result<Self, Error> {
        let mut storage = Self::allocate("GpuStorage::from_host", gpu, src.len(), stream)?;
        // Writes every element before anything can read them: initialised.
        storage.copy_from_host(src, stream)?;
        Ok(storage)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn byte_len(&self) -> usize {
        // Cannot overflow: checked at allocation.
        self.len * size_of::<T>()
    }

    /// The GPU the memory lives on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The stream the memory was allocated on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The allocator the block came from (and goes back to).
    fn allocator(&self) -> &dyn DeviceAllocator {
        match &self.pool {
            Some(pool) => pool.allocator(),
            None => &**self.gpu.allocator(),
        }
    }

    /// The private pool of the graph capture that allocated this memory, if any.
    pub(crate) fn graph_pool(&self) -> Option<&Arc<GraphPool>> {
        self.pool.as_ref()
    }

    /// The device address, for kernel arguments that read the memory.
    pub(crate) fn device_ptr(&self) -> u64 {
        self.block.addr()
    }

    /// The device address, for kernel arguments that write the memory.
    pub(crate) fn device_ptr_mut(&mut self) -> u64 {
        self.block.addr()
    }

    /// Orders work about to be queued on `stream` that reads this memory: `stream` waits
    /// (on the GPU) for the last write, and the read is recorded so later writes wait for
    /// it. Call it right before queueing the work; see the stream-order invariant.
    pub(crate) fn access_read(&self, op: &'static str, stream: &Stream) -> Result<(), Error> {
        self.access(op, stream, Access::Read)
    }

    /// Orders work about to be queued on `stream` that writes this memory: `stream` waits
    /// for the last write and every read since, and becomes the last writer.
    pub(crate) fn access_write(&mut self, op: &'static str, stream: &Stream) -> Result<(), Error> {
        self.access(op, stream, Access::Write)
    }

    /// Both `access_read` and `access_write`: `Write` is only reached through `&mut self`.
    #[inline]
    fn access(&self, op: &'static str, stream: &Stream, access: Access) -> Result<(), Error> {
        self.gpu.check_stream(op, stream)?;
        if let Some(pool) = &self.pool {
            active::check_pool(op, pool)?;
        }
        active::check_access(
            op,
            stream.id(),
            stream.capture_owner(),
            self.pool.as_ref(),
            self.block.addr(),
            access == Access::Write,
        )?;
        self.order.order(&self.stream, stream, access, |id| {
            if self.foreign.is_some() {
                // Foreign memory never goes back to an allocator: its drop waits instead.
                return Ok(());
            }
            self.allocator()
                .record_stream(&self.block, id)
                .map_err(Error::from)
        })
    }

    /// The streams whose queued work a new access on another stream would wait for: the
    /// last writer's first, then the readers' since. One stream (the home stream) while the
    /// memory has only been used there.
    pub fn pending_streams(&self) -> Vec<Stream> {
        self.order.pending_streams(&self.stream)
    }
}

impl<T: Element> Drop for GpuStorage<T> {
    fn drop(&mut self) {
        if let Some(owner) = self.foreign.take() {
            return self.release_foreign(owner);
        }
        let empty = Block::empty(self.block.stream());
        let block = std::mem::replace(&mut self.block, empty);
        // Relaxed if this thread is capturing: the allocator may record or query events.
        if let Err(e) = state::relaxed(|| self.allocator().free(block).map_err(Error::from)) {
            self.gpu.errors().record(e);
        }
    }
}

impl<T: Element> crate::device::Storage<T> for GpuStorage<T> {
    fn len(&self) -> usize {
        self.len
    }
}

impl<T: Element> fmt::Debug for GpuStorage<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuStorage")
            .field("dtype", &T::DTYPE)
            .field("len", &self.len)
            .field("ordinal", &self.gpu.ordinal())
            .field("addr", &format_args!("{:#x}", self.block.addr()))
            .field("stream", &self.stream)
            .finish()
    }
}

static_assertions::assert_impl_all!(GpuStorage<f32>: Send, Sync, crate::device::Storage<f32>);
static_assertions::assert_impl_all!(GpuStorage<bool>: Send, Sync);
static_assertions::assert_not_impl_any!(GpuStorage<f32>: Clone);

/// `Gpu` as a [`Device`](crate::device::Device) (written here, with the storage it names,
/// so that `device.rs` does not import buffers: buffers need the device, not the reverse).
impl crate::device::sealed::Sealed for Gpu {}

impl crate::device::Device for Gpu {
    type Storage<T: Element> = GpuStorage<T>;

    fn name(&self) -> String {
        format!("cuda:{}", self.ordinal())
    }
}

static_assertions::assert_impl_all!(Gpu: crate::device::Device);

impl Gpu {
    /// Zero-filled device memory for `len` elements, queued on the default stream
    /// (shorthand for [`GpuStorage::zeros`]).
    pub fn zeros<T: Element>(&self, len: usize) -> Result<GpuStorage<T>, Error> {
        GpuStorage::zeros(self, len, self.default_stream())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_len_checks_overflow() {
        assert_eq!(byte_len::<f64>("t", 3), Ok(24));
        assert_eq!(byte_len::<u8>("t", usize::MAX), Ok(usize::MAX));
        assert_eq!(
            byte_len::<f32>("t", usize::MAX / 2),
            Err(LayoutError::SizeOverflow {
                op: "t",
                shape: vec![usize::MAX / 2],
                what: "bytes"
            })
        );
    }

    #[test]
    fn length_mismatch_names_both_lengths() {
        assert_eq!(check_len("op", 4, 4), Ok(()));
        assert_eq!(
            check_len("op", 4, 5),
            Err(LayoutError::LengthMismatch {
                op: "op",
                shape: vec![4],
                expected: 4,
                got: 5
            })
        );
    }
}
