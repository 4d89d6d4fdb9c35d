//! Several GPUs: peer access between devices, and copies between the memory of two GPUs
//! (directly, or staged through pinned host memory), ordered on both devices' streams.
//!
//! # Peer access
//!
//! [`Gpu::enable_peer_access`] asks the driver once per ordered pair of devices
//! (`cuDeviceCanAccessPeer`, then `cuCtxEnablePeerAccess`) and remembers the answer for the
//! life of the process, as THC's `p2pAccessEnabled` table does; the contexts of a pair that
//! was enabled are kept retained, so the answer cannot go stale.
//!
//! # Copies between GPUs
//!
//! A copy from memory of GPU `j` into memory of GPU `k` goes one of three ways
//! ([`PeerRoute`]): on one GPU, a device-to-device copy; between two GPUs with peer access
//! enabled both ways, one `cuMemcpyPeerAsync` (NVLink or PCIe peer-to-peer, no host
//! involved); otherwise staged through pinned host memory from the destination GPU's caching
//! host allocator, in chunks of [`STAGE_CHUNK`] bytes that pipeline the device-to-host copies
//! on `j` with the host-to-device copies on `k`. [`PeerPath::Staged`] (or
//! `TYPESTATE_TENSOR_PEER_PATH=staged`, [`PEER_PATH_ENV`]) forces the staged way, also on one
//! GPU, so it is tested where peer access exists or only one GPU does.
//!
//! # Order across devices (docs/STREAMS.md)
//!
//! A buffer's stream order knows only streams of its own GPU (its allocator can record events
//! and synchronise only there). So a copy queued on a stream `S` of one GPU orders the buffer
//! of the *other* GPU through that buffer's home stream `P` (its proxy):
//!
//! 1. the buffer's access (a read of the source, a write of the destination) is asked on `P`,
//!    which waits for the buffer's pending work as any access does;
//! 2. `S` waits for `P` (an event recorded on `P` now);
//! 3. the copy is queued on `S`;
//! 4. `P` waits for `S` (an event recorded on `S` after the copy).
//!
//! After step 4, everything queued on `P` later, and everything that later waits for `P`
//! (every access the buffer orders after its recorded access on `P`), runs after the copy; the
//! buffer's allocator reuses its memory in order on `P` (its home stream) or after events on
//! streams of its own GPU, which again follow the copy. The buffer on `S`'s own GPU is ordered
//! on `S` directly. PyTorch's cross-device `copy_` makes the same two waits (on the current
//! streams of both devices). A staged copy needs no proxy: its device-to-host copies run on a
//! stream of the source's GPU and its host-to-device copies on one of the destination's.
//!
//! The events of steps 2 and 4 are reused: one per GPU context and thread (re-recording an
//! event does not change waits already queued on it).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

use cudarc::driver::CudaContext;

use super::buffer::GpuStorage;
use super::device::Gpu;
use super::driver;
use super::event::Event;
use super::graph::state;
use super::stream::Stream;
use crate::device::wrong_device::{GpuTensorOnly, HostTensorOnly};
use crate::device::Cpu;
use crate::element::Element;
use crate::error::{Error, GpuError, LayoutError};
use crate::storage::allocator::{Block, DeviceAllocator};
use crate::tensor::Tensor;

/// The environment variable that picks the default [`PeerPath`]: `auto` (or unset) or
/// `staged`. Read once per process.
pub const PEER_PATH_ENV: &str = "TYPESTATE_TENSOR_PEER_PATH";

/// Bytes per chunk of a staged copy (a multiple of every element size).
pub const STAGE_CHUNK: usize = 8 << 20;

/// Chunks of a staged copy in flight at once (the staging buffer holds this many).
const STAGE_SLOTS: usize = 4;

/// How a copy between the memory of two GPUs may go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PeerPath {
    /// Directly (`cuMemcpyPeerAsync`, with peer access enabled both ways) where the two
    /// devices allow it, staged through pinned host memory where they do not; a plain
    /// device-to-device copy on one GPU.
    #[default]
    Auto,
    /// Always staged through pinned host memory (device to host on the source's GPU, host to
    /// device on the destination's), even on one GPU or where peer access exists: the
    /// fallback, forced, for tests and benchmarks of it.
    Staged,
}

impl PeerPath {
    /// The path [`PEER_PATH_ENV`] asks for: [`PeerPath::Auto`] when unset or `auto`,
    /// [`PeerPath::Staged`] for `staged` (read once per process).
    ///
    /// # Errors
    /// [`GpuError::InvalidPeerPath`] for any other value.
    pub fn from_env() -> Result<PeerPath, GpuError> {
        static FROM_ENV: OnceLock<Result<PeerPath, String>> = OnceLock::new();
        FROM_ENV
            .get_or_init(|| match std::env::var(PEER_PATH_ENV) {
                Err(_) => Ok(PeerPath::Auto),
                Ok(value) => value.parse().map_err(|_| value),
            })
            .clone()
            .map_err(|value| GpuError::InvalidPeerPath {
                var: PEER_PATH_ENV,
                value,
            })
    }
}

impl std::str::FromStr for PeerPath {
    type Err = GpuError;

    /// `auto` or `staged` (case and surrounding spaces ignored).
    fn from_str(s: &str) -> Result<PeerPath, GpuError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(PeerPath::Auto),
            "staged" => Ok(PeerPath::Staged),
            _ => Err(GpuError::InvalidPeerPath {
                var: PEER_PATH_ENV,
                value: s.to_owned(),
            }),
        }
    }
}

/// How a copy between GPU memories went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerRoute {
    /// Both memories on one GPU: a device-to-device copy.
    Local,
    /// Between two GPUs with peer access: one `cuMemcpyPeerAsync`, no host memory involved.
    Direct,
    /// Through pinned host memory, in chunks.
    Staged,
}

// ---------------------------------------------------------------------------------------------
// Peer access, once per ordered pair
// ---------------------------------------------------------------------------------------------

/// What the driver said about one ordered pair `(from, to)`: whether `from`'s context may
/// reach `to`'s memory. The contexts are kept retained so that the answer stays true.
struct Link {
    enabled: bool,
    _contexts: [Arc<CudaContext>; 2],
}

static LINKS: LazyLock<Mutex<HashMap<(usize, usize), Link>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Whether peer access from `from` to `to` is enabled, enabling it on first ask. The table
/// lock is held over the driver calls, so each pair is asked once even when threads race
/// (rare: once per pair per process). A driver failure other than "unsupported" is returned
/// and not remembered.
fn link(from: &Gpu, to: &Gpu) -> Result<bool, GpuError> {
    let key = (from.ordinal(), to.ordinal());
    let mut links = LINKS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(link) = links.get(&key) {
        return Ok(link.enabled);
    }
    let enabled = driver::can_access_peer(from.context(), to.context())?
        && driver::enable_peer_access(from.context(), to.context())?;
    links.insert(
        key,
        Link {
            enabled,
            _contexts: [Arc::clone(from.context()), Arc::clone(to.context())],
        },
    );
    Ok(enabled)
}

impl Gpu {
    /// Whether this GPU can reach `peer`'s memory directly (`cuDeviceCanAccessPeer`: NVLink
    /// or PCIe peer-to-peer). A GPU always reaches its own memory (`true` for the same
    /// ordinal).
    pub fn can_access_peer(&self, peer: &Gpu) -> Result<bool, GpuError> {
        if self.ordinal() == peer.ordinal() {
            return Ok(true);
        }
        driver::can_access_peer(self.context(), peer.context())
    }

    /// Enables access from this GPU to `peer`'s memory where the devices allow it
    /// (`cuCtxEnablePeerAccess`), and says whether it is enabled. Asked of the driver once
    /// per ordered pair and process (THC's `p2pAccessEnabled`); later calls answer from the
    /// table. `true` for the same ordinal.
    ///
    /// Copies between GPUs ([`GpuStorage::copy_from_peer_async`], `Tensor::to_device`) call
    /// this for both directions themselves; call it early to keep the one-time cost (the
    /// driver maps every allocation of each device into the other) out of a timed region.
    pub fn enable_peer_access(&self, peer: &Gpu) -> Result<bool, GpuError> {
        if self.ordinal() == peer.ordinal() {
            return Ok(true);
        }
        link(self, peer)
    }
}

// ---------------------------------------------------------------------------------------------
// Ordering streams of two devices
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// One reusable event per context, for [`order_after`].
    static BARRIERS: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}

/// Makes later work on `waiter` wait for the work queued on `target` so far (on the GPU; the
/// host does not block). The streams may belong to different GPUs. Reuses this thread's
/// event of `target`'s context: a wait captures the event's last record when it is queued,
/// so re-recording it later changes nothing that was queued before.
fn order_after(waiter: &Stream, target: &Stream) -> Result<(), GpuError> {
    if waiter == target {
        return Ok(());
    }
    // At thread exit, once `BARRIERS` is destroyed (a copy from a drop in a user's
    // thread-local), a fresh event: `try_with` never panics there.
    let ordered = BARRIERS.try_with(|cell| {
        let Ok(mut events) = cell.try_borrow_mut() else {
            // Not reentered by anything below; a fresh event is always correct.
            return waiter.wait_stream(target);
        };
        let index = match events
            .iter()
            .position(|e| **e.context() == **target.context())
        {
            Some(i) => i,
            None => {
                events.push(Event::create(target.context(), false)?);
                events.len() - 1
            }
        };
        let event = &events[index];
        event.record(target)?;
        waiter.wait_event(event)
    });
    ordered.unwrap_or_else(|_| waiter.wait_stream(target))
}

// ---------------------------------------------------------------------------------------------
// The copy
// ---------------------------------------------------------------------------------------------

/// Checks that `offset..offset + len` lies in a buffer of `storage_len` elements.
fn check_range(
    op: &'static str,
    offset: usize,
    len: usize,
    storage_len: usize,
) -> Result<(), LayoutError> {
    match offset.checked_add(len) {
        Some(end) if end <= storage_len => Ok(()),
        _ => Err(LayoutError::OutOfStorage {
            op,
            shape: vec![len],
            strides: vec![1],
            offset,
            storage_len,
        }),
    }
}

/// The stream `buffer`'s side of a copy runs on: `stream` if it belongs to the buffer's GPU,
/// else the buffer's home stream (its proxy, see the module docs).
fn side<'a, T: Element>(buffer: &'a GpuStorage<T>, stream: &'a Stream) -> &'a Stream {
    if stream.ordinal() == buffer.gpu().ordinal() {
        stream
    } else {
        buffer.stream()
    }
}

/// Queues a copy of `len` elements of `src` from element `src_offset` into `dst` from element
/// `dst_offset`, on `stream` (a stream of either memory's GPU), going as `path` says, and
/// returns once it is queued. Both memories order it (see the module docs): later work on
/// `dst`, on any stream of its GPU, runs after it, and a later write of `src` waits for it.
///
/// # Errors
/// [`GpuError::DeviceMismatch`] for a stream of a third GPU (naming the source's GPU and the
/// stream's); [`LayoutError::OutOfStorage`] for a range outside either memory;
/// [`GpuError::NotCapturable`] inside a CUDA graph capture; driver and allocation errors.
/// On error nothing was queued, or whatever was queued has finished (the streams were
/// synchronised), so the memories stay valid; `dst` may hold part of the copy.
#[allow(clippy::too_many_arguments)] // two (memory, offset) pairs, the length, where and how
pub(crate) fn copy_range<T: Element>(
    op: &'static str,
    dst: &mut GpuStorage<T>,
    dst_offset: usize,
    src: &GpuStorage<T>,
    src_offset: usize,
    len: usize,
    stream: &Stream,
    path: PeerPath,
) -> Result<PeerRoute, Error> {
    let (j, k) = (src.gpu().ordinal(), dst.gpu().ordinal());
    if stream.ordinal() != j && stream.ordinal() != k {
        return Err(GpuError::DeviceMismatch {
            op,
            lhs: j,
            rhs: stream.ordinal(),
        }
        .into());
    }
    check_range(op, src_offset, len, src.len())?;
    check_range(op, dst_offset, len, dst.len())?;
    let (src_s, dst_s) = if j == k && path == PeerPath::Staged {
        // A staged copy on one GPU (a test of the fallback) reads on the source's home
        // stream and writes on `stream`, so that its two streams are ordered by events as
        // between two GPUs whenever the two differ.
        (src.stream().clone(), stream.clone())
    } else {
        (side(src, stream).clone(), side(dst, stream).clone())
    };
    for s in [stream, &src_s, &dst_s] {
        state::check_host_sync(op, s.capture_owner(), state::EVENTS)?;
    }
    let size = size_of::<T>();
    // Cannot overflow: the ranges lie inside live buffers, whose byte sizes were checked.
    let (bytes, src_byte, dst_byte) = (len * size, src_offset * size, dst_offset * size);
    let route = match path {
        PeerPath::Staged => PeerRoute::Staged,
        PeerPath::Auto if j == k => PeerRoute::Local,
        PeerPath::Auto => {
            // Both directions, as NVIDIA's peer-to-peer samples and NCCL do; asked once.
            let forth = link(src.gpu(), dst.gpu())?;
            let back = link(dst.gpu(), src.gpu())?;
            if forth && back {
                PeerRoute::Direct
            } else {
                PeerRoute::Staged
            }
        }
    };
    match route {
        PeerRoute::Local => {
            src.access_read(op, stream)?;
            dst.access_write(op, stream)?;
            if bytes > 0 {
                // SAFETY: both ranges lie inside live blocks of the stream's GPU (same
                // ordinal, checked; ranges checked above) and do not overlap (`&mut dst`
                // and `&src` are distinct storages). `access_read`/`access_write` ordered
                // the copy after the last write of `src` and every pending use of `dst`;
                // both blocks are freed only in stream order after `stream`'s work (an
                // access on another stream than a block's home was recorded with its
                // allocator). The source's elements are initialised `T`s.
                unsafe {
                    driver::memcpy_dtod_async(
                        dst.device_ptr_mut() + dst_byte as u64,
                        src.device_ptr() + src_byte as u64,
                        bytes,
                        stream.cuda(),
                    )
                }?;
            }
        }
        PeerRoute::Direct => direct(
            op, dst, dst_byte, src, src_byte, bytes, stream, &src_s, &dst_s,
        )?,
        PeerRoute::Staged => staged(op, dst, dst_byte, src, src_byte, bytes, &src_s, &dst_s)?,
    }
    Ok(route)
}

/// One `cuMemcpyPeerAsync` on `stream`, with the other GPU's memory ordered through its home
/// stream (module docs, steps 1 to 4). `src_s` and `dst_s` are each buffer's [`side`] of
/// `stream`, as [`copy_range`] chose them.
#[allow(clippy::too_many_arguments)]
fn direct<T: Element>(
    op: &'static str,
    dst: &mut GpuStorage<T>,
    dst_byte: usize,
    src: &GpuStorage<T>,
    src_byte: usize,
    bytes: usize,
    stream: &Stream,
    src_s: &Stream,
    dst_s: &Stream,
) -> Result<(), Error> {
    src.access_read(op, src_s)?;
    dst.access_write(op, dst_s)?;
    if bytes == 0 {
        return Ok(());
    }
    order_after(stream, src_s)?;
    order_after(stream, dst_s)?;
    // SAFETY: `src`'s range lies in its live block on GPU `src.gpu()` and `dst`'s in its
    // live block on `dst.gpu()` (ranges checked by `copy_range`); two GPUs' memories are
    // disjoint. The copy is ordered after the last write of `src` and every pending use of
    // `dst`: each access was asked on a stream of the buffer's own GPU (`stream`, or the
    // buffer's home stream, which `stream` now waits for). Neither block is freed before the
    // copy completes: the block on `stream`'s GPU is freed in order after `stream`'s work
    // (`stream` is its home or was recorded with its allocator), and the other one is freed
    // in order on its home stream, which waits for the copy right below before anything
    // else queued there (or, if that wait cannot be queued, the copy is finished before
    // returning). The source's elements are initialised `T`s.
    unsafe {
        driver::memcpy_peer_async(
            dst.device_ptr_mut() + dst_byte as u64,
            dst.gpu().context(),
            src.device_ptr() + src_byte as u64,
            src.gpu().context(),
            bytes,
            stream.cuda(),
        )
    }?;
    let after = order_after(src_s, stream).and_then(|()| order_after(dst_s, stream));
    if let Err(e) = after {
        // The proxies could not be ordered after the copy: finish it now, so that nothing
        // later can overtake it (if even this fails, the context is broken and runs no
        // more work).
        let _ = driver::stream_synchronize(stream.cuda());
        return Err(e.into());
    }
    Ok(())
}

/// A staging block of the destination GPU's pinned-host allocator, never read or written by
/// the host: device-to-host copies fill it, host-to-device copies drain it.
struct Staging {
    block: Option<Block>,
    gpu: Gpu,
}

impl Staging {
    /// Gives the block back; the allocator reuses it once an event recorded now on its
    /// stream (the destination side's, where the last copy reading it was queued) completes.
    fn release(mut self) -> Result<(), Error> {
        match self.block.take() {
            Some(block) => Ok(self.gpu.host_allocator().free(block)?),
            None => Ok(()),
        }
    }

    /// Leaks the block (a copy may still use it and could not be waited for): it is never
    /// given back, so the allocator never hands its memory out again.
    fn leak(mut self) {
        self.block = None;
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            if let Err(e) = self.gpu.host_allocator().free(block) {
                self.gpu.errors().record(e);
            }
        }
    }
}

/// The copy staged through pinned host memory: for each chunk, device to host on `src_s` (a
/// stream of the source's GPU), then host to device on `dst_s` (of the destination's), with
/// [`STAGE_SLOTS`] chunks in flight.
#[allow(clippy::too_many_arguments)] // the two memories with their byte offsets, two streams
fn staged<T: Element>(
    op: &'static str,
    dst: &mut GpuStorage<T>,
    dst_byte: usize,
    src: &GpuStorage<T>,
    src_byte: usize,
    bytes: usize,
    src_s: &Stream,
    dst_s: &Stream,
) -> Result<(), Error> {
    src.access_read(op, src_s)?;
    dst.access_write(op, dst_s)?;
    if bytes == 0 {
        return Ok(());
    }
    let chunk = STAGE_CHUNK.min(bytes);
    let slots = bytes.div_ceil(chunk).min(STAGE_SLOTS);
    let host = Arc::clone(dst.gpu().host_allocator());
    // Allocated on the destination side's stream: the allocator records an event there when
    // the block is given back and reuses it only after, which is after every copy below
    // (each host-to-device copy is queued there after its device-to-host copy completed).
    let staging = Staging {
        block: Some(host.allocate(chunk * slots, dst_s.id())?),
        gpu: dst.gpu().clone(),
    };
    let base = staging.block.as_ref().map_or(0, Block::addr);
    let queued = queue_staged(
        dst, dst_byte, src, src_byte, bytes, src_s, dst_s, base, chunk, slots,
    );
    match queued {
        Ok(()) => staging.release(),
        Err(e) => {
            // Copies queued before the failure may still use the staging memory: wait for
            // them before giving it back, or leak it if waiting fails.
            let settled = driver::stream_synchronize(src_s.cuda())
                .and_then(|()| driver::stream_synchronize(dst_s.cuda()));
            match settled {
                Ok(()) => staging.release()?,
                Err(_) => staging.leak(),
            }
            Err(e)
        }
    }
}

/// Queues the chunks of a staged copy through the staging memory at host address `base`
/// (`slots` chunks of `chunk` bytes).
#[allow(clippy::too_many_arguments)] // as `staged`, plus the staging memory's shape
fn queue_staged<T: Element>(
    dst: &mut GpuStorage<T>,
    dst_byte: usize,
    src: &GpuStorage<T>,
    src_byte: usize,
    bytes: usize,
    src_s: &Stream,
    dst_s: &Stream,
    base: u64,
    chunk: usize,
    slots: usize,
) -> Result<(), Error> {
    let one_stream = src_s == dst_s;
    // Per slot: "device-to-host copy done" (on the source side) and "host-to-device copy
    // done" (on the destination side). One stream needs none: it runs the chunks in order.
    let mut filled = Vec::new();
    let mut drained = Vec::new();
    if !one_stream {
        for _ in 0..slots {
            filled.push(Event::create(src_s.context(), false)?);
            drained.push(Event::create(dst_s.context(), false)?);
        }
    }
    let (src_addr, dst_addr) = (
        src.device_ptr() + src_byte as u64,
        dst.device_ptr_mut() + dst_byte as u64,
    );
    let mut done = 0usize;
    let mut index = 0usize;
    while done < bytes {
        let n = chunk.min(bytes - done);
        let slot = index % slots;
        let host = usize::try_from(base)
            .ok()
            .map(|a| std::ptr::with_exposed_provenance_mut::<u8>(a).wrapping_add(slot * chunk))
            .ok_or_else(|| GpuError::Driver {
                call: "cuMemHostAlloc",
                message: format!("pinned staging address {base:#x} is not a host address"),
            })?;
        if !one_stream && index >= slots {
            // The slot's previous chunk must have left the staging memory first.
            src_s.wait_event(&drained[slot])?;
        }
        // SAFETY: `host` addresses `n <= chunk` bytes of slot `slot` of the live staging
        // block (page-locked, `slots * chunk` bytes, owned by the caller until every copy
        // here has completed). No host code reads or writes it, and no other copy writes or
        // reads the slot meanwhile: the previous host-to-device copy out of it is complete
        // before this one runs (the wait above, or the same stream). The device range lies
        // in `src`'s live block (checked by `copy_range`), read after its last write
        // (`access_read` on `src_s`); the bytes land in a `u8` buffer, valid for any value.
        unsafe { driver::memcpy_dtoh_async(host, src_addr + done as u64, n, src_s.cuda()) }?;
        if !one_stream {
            filled[slot].record(src_s)?;
            dst_s.wait_event(&filled[slot])?;
        }
        // SAFETY: the host range is the slot just filled, complete before this copy runs
        // (the wait above, or the same stream), and not written again until this copy is
        // complete (the next fill of the slot waits for `drained`, or runs on this stream
        // after it); it stays allocated until an event on `dst_s` after this copy completes
        // (see `staged`). The device range lies in `dst`'s live block, written after its
        // pending uses (`access_write` on `dst_s`); the bytes are `src`'s, valid `T`s, and
        // chunks end on element boundaries (`STAGE_CHUNK` is a multiple of every element
        // size), so every element of `dst` is either old or new.
        unsafe { driver::memcpy_htod_async(dst_addr + done as u64, host, n, dst_s.cuda()) }?;
        if !one_stream {
            drained[slot].record(dst_s)?;
        }
        done += n;
        index += 1;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The public forms on `GpuStorage`
// ---------------------------------------------------------------------------------------------

impl<T: Element> GpuStorage<T> {
    /// Queues a copy of `src`, memory of any GPU, into this memory (same length) on `stream`,
    /// a stream of either GPU, and returns once it is queued. The way it goes is
    /// [`PeerPath::from_env`]'s (see [`copy_from_peer_async_via`](Self::copy_from_peer_async_via)).
    pub fn copy_from_peer_async(
        &mut self,
        src: &GpuStorage<T>,
        stream: &Stream,
    ) -> Result<PeerRoute, Error> {
        self.copy_from_peer_async_via(src, stream, PeerPath::from_env()?)
    }

    /// Queues a copy of `src`, memory of any GPU, into this memory (same length) on `stream`,
    /// a stream of either GPU, going as `path` says, and returns once it is queued, with the
    /// way it went ([`PeerRoute`]).
    ///
    /// Both memories order the copy themselves (docs/STREAMS.md, and the module docs of
    /// `runtime/peer.rs` for the cross-device part): it runs after the last write of `src`
    /// and after every pending read and write of this memory, on whatever streams of either
    /// GPU they were queued; every later use of this memory, on any stream of its GPU, runs
    /// after it; a later write of `src` waits for it; and neither allocator reuses either
    /// block before it has finished. No `Stream::wait_stream` is needed on either side.
    ///
    /// On one GPU with [`PeerPath::Auto`] this is [`copy_from_device_async`](Self::copy_from_device_async).
    /// Between GPUs the copy enables peer access both ways on first use
    /// ([`Gpu::enable_peer_access`]) and is one `cuMemcpyPeerAsync` where that succeeds;
    /// otherwise, and always for [`PeerPath::Staged`], it is staged through pinned host
    /// memory of this memory's GPU ([`Gpu::host_allocator`]) in chunks.
    ///
    /// # Errors
    /// [`LayoutError::LengthMismatch`] for another length; [`GpuError::DeviceMismatch`] for
    /// a stream of a third GPU; [`GpuError::NotCapturable`] inside a CUDA graph capture;
    /// driver and allocation errors (then nothing is left running; this memory may hold
    /// part of the copy).
    pub fn copy_from_peer_async_via(
        &mut self,
        src: &GpuStorage<T>,
        stream: &Stream,
        path: PeerPath,
    ) -> Result<PeerRoute, Error> {
        const OP: &str = "GpuStorage::copy_from_peer";
        if self.len() != src.len() {
            return Err(LayoutError::LengthMismatch {
                op: OP,
                shape: vec![self.len()],
                expected: self.len(),
                got: src.len(),
            }
            .into());
        }
        let len = self.len();
        copy_range(OP, self, 0, src, 0, len, stream, path)
    }

    /// A copy of this memory on `gpu` (any GPU, this one included), made on `stream` (a
    /// stream of either GPU) as `path` says, with the way it went. The new memory's home
    /// stream is `stream` if it belongs to `gpu`, else `gpu`'s default stream; it orders
    /// every use after the copy, and this memory orders its next write after it
    /// ([`copy_from_peer_async_via`](Self::copy_from_peer_async_via)). Returns once the copy
    /// is queued.
    ///
    /// # Errors
    /// As [`copy_from_peer_async_via`](Self::copy_from_peer_async_via), and allocation
    /// errors on `gpu`.
    pub fn peer_copy(
        &self,
        gpu: &Gpu,
        stream: &Stream,
        path: PeerPath,
    ) -> Result<(GpuStorage<T>, PeerRoute), Error> {
        peer_copy_range(
            "GpuStorage::peer_copy",
            self,
            0,
            self.len(),
            gpu,
            stream,
            path,
        )
    }
}

/// New memory on `gpu` holding `len` elements of `src` from element `src_offset`, copied on
/// `stream` (a stream of either GPU) as `path` says; its home stream is `stream` if it
/// belongs to `gpu`, else `gpu`'s default stream. Returns once the copy is queued.
pub(crate) fn peer_copy_range<T: Element>(
    op: &'static str,
    src: &GpuStorage<T>,
    src_offset: usize,
    len: usize,
    gpu: &Gpu,
    stream: &Stream,
    path: PeerPath,
) -> Result<(GpuStorage<T>, PeerRoute), Error> {
    if stream.ordinal() != gpu.ordinal() && stream.ordinal() != src.gpu().ordinal() {
        return Err(GpuError::DeviceMismatch {
            op,
            lhs: src.gpu().ordinal(),
            rhs: stream.ordinal(),
        }
        .into());
    }
    check_range(op, src_offset, len, src.len())?;
    let home = if stream.ordinal() == gpu.ordinal() {
        stream
    } else {
        gpu.default_stream()
    };
    // SAFETY: `copy_range` writes all `len` elements before anything can read them: the
    // copy is recorded as this memory's write, so every later access, on any stream, is
    // ordered after it. If it fails, the memory is dropped here unread.
    let mut out = unsafe { GpuStorage::uninit(gpu, len, home) }?;
    let route = copy_range(op, &mut out, 0, src, src_offset, len, stream, path)?;
    Ok((out, route))
}

/// `to_device` on a host tensor: never callable (it requires [`GpuTensorOnly`], which no type
/// implements), so the mistake is a compile error naming `to_gpu`.
#[doc(hidden)]
impl<T: Element> Tensor<T, Cpu> {
    #[doc(hidden)]
    pub fn to_device<R>(&self, gpu: &Gpu) -> R
    where
        Self: GpuTensorOnly,
    {
        let _ = gpu;
        self.absurd()
    }
}

/// `to_gpu` on a GPU tensor: never callable (it requires [`HostTensorOnly`], which no type
/// implements), so the mistake is a compile error naming `to_device` and `to_cpu`.
#[doc(hidden)]
impl<T: Element> Tensor<T, Gpu> {
    #[doc(hidden)]
    pub fn to_gpu<R>(&self, gpu: &Gpu) -> R
    where
        Self: HostTensorOnly,
    {
        let _ = gpu;
        self.absurd()
    }
}
