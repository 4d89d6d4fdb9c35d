//! [`Gpu`]: one CUDA device as a [`Device`](crate::device::Device), with its context, default
//! stream, device allocator and caching pinned-host allocator.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::CudaContext;

use super::driver;
use super::driver_pool::{DriverPoolAllocator, DriverPoolOptions};
use super::error_slot::ErrorSlot;
use super::event::Event;
use super::graph::state;
use super::memory_source::DeviceMemorySource;
use super::peer::PeerPath;
use super::pinned_source::{PinnedHostAllocator, PinnedHostOptions, PinnedHostSource};
use super::stream::Stream;
use crate::error::{Error, GpuError};
use crate::storage::allocator::{AllocatorStats, DeviceAllocator};
use crate::storage::snapshot::MemorySnapshot;
use crate::storage::source::MemoryLocation;
use crate::storage::{
    CachingAllocator, CachingConfig, NaiveAllocator, PooledAllocator, PooledConfig,
};

/// Which device allocator a [`Gpu`] hands out memory from.
///
/// The naive, pooled and caching allocators of [`crate::storage`] run on a
/// [`DeviceMemorySource`] (`cuMemAlloc`/`cuMemFree`); the driver pool is CUDA's own
/// stream-ordered allocator. Any other [`DeviceAllocator`] can be passed to
/// [`Gpu::with_allocator`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AllocatorKind {
    /// `cuMemAlloc`/`cuMemFree` per request ([`NaiveAllocator`]): the debugging baseline.
    Naive,
    /// MXNet's exact-size buckets ([`PooledAllocator`]).
    Pooled(PooledConfig),
    /// PyTorch's best-fit caching allocator ([`CachingAllocator`]), the default.
    Caching(CachingConfig),
    /// The driver's stream-ordered pool ([`DriverPoolAllocator`]).
    DriverPool(DriverPoolOptions),
}

impl Default for AllocatorKind {
    fn default() -> AllocatorKind {
        AllocatorKind::Caching(CachingConfig::default())
    }
}

impl AllocatorKind {
    /// The caching allocator configured by `TYPESTATE_TENSOR_ALLOC_CONF` (PyTorch's
    /// `key:value,key:value` syntax; unset means the defaults).
    pub fn from_env() -> Result<AllocatorKind, GpuError> {
        CachingConfig::from_env()
            .map(AllocatorKind::Caching)
            .map_err(GpuError::AllocatorConfig)
    }

    /// Builds the allocator on `ctx`'s device.
    fn build(self, ctx: &Arc<CudaContext>) -> Result<Arc<dyn DeviceAllocator>, GpuError> {
        let source = || DeviceMemorySource::from_context(Arc::clone(ctx));
        Ok(match self {
            AllocatorKind::Naive => Arc::new(NaiveAllocator::new(source())),
            AllocatorKind::Pooled(config) => {
                Arc::new(PooledAllocator::with_config(source(), config))
            }
            AllocatorKind::Caching(config) => {
                Arc::new(CachingAllocator::with_config(source(), config))
            }
            AllocatorKind::DriverPool(options) => {
                Arc::new(DriverPoolAllocator::from_context(Arc::clone(ctx), options)?)
            }
        })
    }
}

/// How [`Gpu::with_options`] sets a device up.
///
/// Each field is the typed twin of an environment variable, which stays the default where
/// [`Gpu::new`] is used or the field is left unset: `TYPESTATE_TENSOR_ALLOC_CONF`
/// ([`AllocatorKind::from_env`]) and `TYPESTATE_TENSOR_PEER_PATH` ([`PeerPath::from_env`]).
/// The kernel cache folder is one per process, not per device: see
/// [`set_kernel_cache_dir`](super::set_kernel_cache_dir).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuOptions {
    /// The device allocator.
    pub allocator: AllocatorKind,
    /// How pinned host memory (staging buffers) is allocated.
    pub pinned: PinnedHostOptions,
    /// How copies into this GPU's memory from another GPU's go when the call does not say
    /// ([`Gpu::peer_path`]); `None`: as [`PEER_PATH_ENV`](super::PEER_PATH_ENV) says.
    pub peer_path: Option<PeerPath>,
}

/// What the driver says about the device, read once at creation.
#[derive(Clone, Debug)]
struct DeviceInfo {
    name: String,
    compute_capability: (u32, u32),
    multiprocessors: u32,
    total_memory: usize,
}

impl DeviceInfo {
    fn query(ctx: &CudaContext) -> Result<DeviceInfo, GpuError> {
        let attribute = |attr| -> Result<u32, GpuError> {
            let value = driver::device_attribute(ctx, attr)?;
            u32::try_from(value).map_err(|_| GpuError::Driver {
                call: "cuDeviceGetAttribute",
                message: format!("{attr:?} is negative ({value})"),
            })
        };
        Ok(DeviceInfo {
            name: driver::device_name(ctx)?,
            compute_capability: (
                attribute(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attribute(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            multiprocessors: attribute(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            total_memory: driver::device_total_memory(ctx)?,
        })
    }
}

struct GpuInner {
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    default_stream: Stream,
    allocator: Arc<dyn DeviceAllocator>,
    pinned: Arc<PinnedHostSource>,
    /// [`GpuOptions::peer_path`].
    peer_path: Option<PeerPath>,
    host_allocator: Arc<PinnedHostAllocator>,
    errors: Arc<ErrorSlot>,
    /// The token of the thread capturing a CUDA graph on this handle, 0 if none: on that
    /// thread, [`Gpu::default_stream`] is capture stream number `capture_index`
    /// (docs/GRAPHS.md).
    capture_owner: AtomicU64,
    /// Which of `capture_streams` the open capture uses.
    capture_index: AtomicUsize,
    /// The streams graphs of this handle are captured (and replayed) on; see
    /// [`CaptureStreams`].
    capture_streams: CaptureStreams,
}

/// The capture streams of one [`Gpu`] handle: an append-only list (nodes are never removed
/// before the handle's state drops), so [`Gpu::default_stream`] can lend one for `&self`'s
/// lifetime without a lock.
///
/// Every capture gets a new stream, never captured on again. So no other thread can queue
/// work on a stream while it captures through a handle or reference obtained before the
/// capture began (a graph's outputs name their stream, and a `&Stream` lent by
/// `default_stream` during an earlier capture may still be held): work queued through it
/// could otherwise be recorded into the new graph between a check and the launch. The
/// cost is one stream per capture for the life of the handle. (The legacy default stream
/// cannot be captured at all.)
#[derive(Default)]
struct CaptureStreams {
    head: OnceLock<Box<CaptureNode>>,
}

struct CaptureNode {
    stream: Stream,
    next: OnceLock<Box<CaptureNode>>,
}

impl CaptureStreams {
    /// The stream at `index`, if there is one.
    fn get(&self, index: usize) -> Option<&Stream> {
        let mut node = self.head.get()?;
        for _ in 0..index {
            node = node.next.get()?;
        }
        Some(&node.stream)
    }

    /// Appends a new stream (`make`) and returns its index. Only the capturing thread of the
    /// handle calls this (under its claim), so the list does not change under it.
    fn push(&self, make: impl FnOnce() -> Result<Stream, GpuError>) -> Result<usize, GpuError> {
        let mut slot = &self.head;
        let mut index = 0;
        while let Some(node) = slot.get() {
            slot = &node.next;
            index += 1;
        }
        let node = Box::new(CaptureNode {
            stream: make()?,
            next: OnceLock::new(),
        });
        // Set by this thread only (under the claim), so the slot is still empty.
        let _ = slot.set(node);
        Ok(index)
    }
}

/// One NVIDIA GPU: the device type parameter of GPU tensors (`Tensor<T, Gpu>`).
///
/// A cheap-to-clone handle (one `Arc`); clones share everything below. It holds:
/// - the device's primary context (retained for as long as any clone, stream, buffer or
///   source of it lives);
/// - its legacy default stream ([`Gpu::default_stream`]);
/// - the device allocator every [`GpuStorage`](crate::gpu::GpuStorage) of this handle comes from, chosen at creation
///   ([`GpuOptions`], [`Gpu::with_allocator`]);
/// - the pinned-host source and the caching allocator over it
///   ([`Gpu::host_allocator`]) that staging [`PinnedBuffer`](super::PinnedBuffer)s come
///   from;
/// - a slot for errors raised where none can be returned (drops), read with
///   [`Gpu::check_err`].
///
/// Several `Gpu`s may exist for one ordinal (each with its own allocator); they share the
/// primary context, so their streams and memory work together.
///
/// Without a CUDA driver or a device, [`Gpu::new`] returns an error, never a panic, so code
/// can fall back to the CPU:
///
/// ```
/// use typestate_tensor::gpu::Gpu;
/// use typestate_tensor::Tensor;
///
/// # fn main() -> typestate_tensor::Result<()> {
/// let a = Tensor::from_vec(&[3], vec![1.0f32, 2.0, 3.0])?;
/// match Gpu::new(0) {
///     Ok(gpu) => {
///         let g = a.to_gpu(&gpu)?; // Tensor<f32, Gpu>: the device is in the type
///         let twice = (&g + &g)?.to_cpu()?;
///         assert_eq!(twice.to_vec(), [2.0, 4.0, 6.0]);
///         let reserved = gpu.allocator_stats().reserved_bytes.current;
///         println!("{}: {reserved} bytes reserved", gpu.device_name());
///     }
///     Err(e) => println!("no GPU, staying on the CPU: {e}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<GpuInner>,
    /// The stream this handle queues on ([`Gpu::on`]); `None`: the device's legacy default
    /// stream.
    stream: Option<Stream>,
}

impl Gpu {
    /// GPU `ordinal` with the caching allocator, configured by `TYPESTATE_TENSOR_ALLOC_CONF`
    /// when set, and default pinned-host options.
    ///
    /// Errors: [`GpuError::NoDriver`] without a loadable libcuda (never a panic),
    /// [`GpuError::NoSuchDevice`] for an ordinal past the last device,
    /// [`GpuError::AllocatorConfig`] for an invalid configuration variable.
    pub fn new(ordinal: usize) -> Result<Gpu, GpuError> {
        let options = GpuOptions {
            allocator: AllocatorKind::from_env()?,
            ..GpuOptions::default()
        };
        Gpu::with_options(ordinal, options)
    }

    /// GPU `ordinal` set up as `options` says.
    pub fn with_options(ordinal: usize, options: GpuOptions) -> Result<Gpu, GpuError> {
        let ctx = driver::retain_primary_context(ordinal)?;
        let allocator = options.allocator.build(&ctx)?;
        Gpu::assemble(ctx, allocator, options.pinned, options.peer_path)
    }

    /// GPU `ordinal` with a device allocator built by the caller, for instance one of the
    /// [`crate::storage`] allocators over [`DeviceMemorySource::new(ordinal)`](DeviceMemorySource::new).
    ///
    /// The allocator must hand out memory of this device: its
    /// [`memory_location`](DeviceAllocator::memory_location) must be
    /// [`MemoryLocation::Device`] with this `ordinal`. That is checked first, before the
    /// driver is asked for anything: an allocator on another GPU gives
    /// [`GpuError::AllocatorOfAnotherGpu`], one of host memory [`GpuError::AllocatorNotOnDevice`].
    /// On error the allocator is dropped: keep a clone of the `Arc` to use it again.
    pub fn with_allocator(
        ordinal: usize,
        allocator: Arc<dyn DeviceAllocator>,
    ) -> Result<Gpu, GpuError> {
        match allocator.memory_location() {
            MemoryLocation::Device { ordinal: other } if other == ordinal => {}
            MemoryLocation::Device { ordinal: other } => {
                return Err(GpuError::AllocatorOfAnotherGpu {
                    op: "Gpu::with_allocator",
                    ordinal,
                    allocator_ordinal: other,
                    allocator: allocator.name(),
                })
            }
            location => {
                return Err(GpuError::AllocatorNotOnDevice {
                    op: "Gpu::with_allocator",
                    ordinal,
                    allocator: allocator.name(),
                    location,
                })
            }
        }
        let ctx = driver::retain_primary_context(ordinal)?;
        Gpu::assemble(ctx, allocator, PinnedHostOptions::default(), None)
    }

    fn assemble(
        ctx: Arc<CudaContext>,
        allocator: Arc<dyn DeviceAllocator>,
        pinned: PinnedHostOptions,
        peer_path: Option<PeerPath>,
    ) -> Result<Gpu, GpuError> {
        let errors = Arc::new(ErrorSlot::default());
        let pinned = Arc::new(PinnedHostSource::from_context(Arc::clone(&ctx), pinned));
        Ok(Gpu {
            inner: Arc::new(GpuInner {
                info: DeviceInfo::query(&ctx)?,
                default_stream: Stream::legacy_default(&ctx, Arc::clone(&errors)),
                allocator,
                host_allocator: Arc::new(PinnedHostAllocator::new(Arc::clone(&pinned))),
                pinned,
                peer_path,
                errors,
                ctx,
                capture_owner: AtomicU64::new(0),
                capture_index: AtomicUsize::new(0),
                capture_streams: CaptureStreams::default(),
            }),
            stream: None,
        })
    }

    /// How copies into this GPU's memory from another GPU's go when the call does not say
    /// (`copy_from_peer_async`, `to_device`, ...): [`GpuOptions::peer_path`] if it was set,
    /// else [`PeerPath::from_env`].
    ///
    /// # Errors
    /// [`GpuError::InvalidPeerPath`] when the option is unset and the variable holds a value
    /// it does not know.
    pub fn peer_path(&self) -> Result<PeerPath, GpuError> {
        match self.inner.peer_path {
            Some(path) => Ok(path),
            None => PeerPath::from_env(),
        }
    }

    /// Whether a CUDA driver is installed and sees at least one GPU. Never panics.
    pub fn available() -> bool {
        Gpu::device_count().is_ok_and(|n| n > 0)
    }

    /// The number of GPUs the driver sees ([`GpuError::NoDriver`] without a driver).
    pub fn device_count() -> Result<usize, GpuError> {
        driver::device_count()
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.inner.ctx.ordinal()
    }

    /// The device's marketing name, e.g. `"NVIDIA H100 80GB HBM3"`.
    pub fn device_name(&self) -> &str {
        &self.inner.info.name
    }

    /// `(major, minor)` compute capability, e.g. `(9, 0)` for Hopper.
    pub fn compute_capability(&self) -> (u32, u32) {
        self.inner.info.compute_capability
    }

    /// Number of streaming multiprocessors.
    pub fn multiprocessor_count(&self) -> u32 {
        self.inner.info.multiprocessors
    }

    /// Total device memory in bytes.
    pub fn total_memory(&self) -> usize {
        self.inner.info.total_memory
    }

    /// `(free, total)` device memory in bytes now (`cuMemGetInfo`).
    pub fn memory_info(&self) -> Result<(usize, usize), GpuError> {
        driver::memory_info(&self.inner.ctx)
    }

    /// The stream tensor ops queue on: the stream this handle was made [`on`](Gpu::on), else
    /// the legacy default stream (`CUstream` null,
    /// [`StreamId`](crate::storage::source::StreamId) 0); except on a thread inside
    /// [`Gpu::capture`] on this device, where it is the capture stream (the legacy stream
    /// cannot be captured; docs/GRAPHS.md).
    #[inline]
    pub fn default_stream(&self) -> &Stream {
        let owner = self.inner.capture_owner.load(Ordering::Acquire);
        if owner != 0 && owner == state::token() {
            let index = self.inner.capture_index.load(Ordering::Acquire);
            if let Some(stream) = self.inner.capture_streams.get(index) {
                return stream;
            }
        }
        self.stream.as_ref().unwrap_or(&self.inner.default_stream)
    }

    /// This device, queuing on `stream`: the one way to run work on another stream. Tensors,
    /// views, fused expressions, reductions, transfers and Blob math made or run with the
    /// handle it returns queue their kernels and copies on `stream`, through the same methods
    /// as on the default stream; the same allocator, caches and memory are shared.
    ///
    /// ```no_run
    /// use typestate_tensor::gpu::Gpu;
    /// use typestate_tensor::Tensor;
    ///
    /// # fn main() -> typestate_tensor::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let side = gpu.on(&gpu.new_stream()?)?;
    /// let a = Tensor::<f32>::arange(1024)?.to_gpu(&side)?; // copied on the side stream
    /// let b = a.exp()?; // queued on the side stream
    /// let d = Tensor::<f32>::arange(1024)?.to_gpu(&gpu)?; // on the default stream
    /// let c = (&b + &d)?; // on b's stream, after the upload of `d`: each buffer orders its users
    /// println!("{}", c.sum()?.item()?);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Every buffer remembers the streams that last wrote and read it, and work on another
    /// stream waits for that work first (docs/STREAMS.md), so memory shared between handles on
    /// different streams is never read stale or written under a reader.
    ///
    /// # Errors
    /// [`GpuError::DeviceMismatch`] for a stream of another GPU.
    pub fn on(&self, stream: &Stream) -> Result<Gpu, GpuError> {
        self.check_stream("Gpu::on", stream)?;
        Ok(Gpu {
            inner: Arc::clone(&self.inner),
            stream: Some(stream.clone()),
        })
    }

    /// A new capture stream for the capture this thread has claimed
    /// ([`Gpu::claim_capture`]; see [`CaptureStreams`]). From now until the claim is
    /// released, [`Gpu::default_stream`] returns it on this thread.
    pub(crate) fn take_capture_stream(&self) -> Result<Stream, GpuError> {
        let index = self.inner.capture_streams.push(|| self.new_stream())?;
        self.inner.capture_index.store(index, Ordering::Release);
        self.inner
            .capture_streams
            .get(index)
            .cloned()
            .ok_or(GpuError::Driver {
                call: "cuStreamCreate",
                message: "the capture stream is missing".to_owned(),
            })
    }

    /// Makes this thread the capturing thread of this handle; false if another thread is.
    pub(crate) fn claim_capture(&self, token: u64) -> bool {
        self.inner
            .capture_owner
            .compare_exchange(0, token, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Ends this handle's capture claim.
    pub(crate) fn release_capture(&self) {
        self.inner.capture_owner.store(0, Ordering::Release);
    }

    /// A new non-blocking stream.
    pub fn new_stream(&self) -> Result<Stream, GpuError> {
        Stream::create(self.context(), Arc::clone(&self.inner.errors))
    }

    /// A new event, not recorded yet (no timing).
    pub fn new_event(&self) -> Result<Event, GpuError> {
        Event::create(&self.inner.ctx, false)
    }

    /// A new timing-capable event, not recorded yet.
    pub fn new_timing_event(&self) -> Result<Event, GpuError> {
        Event::create(&self.inner.ctx, true)
    }

    /// Blocks until all work on every stream of the device has finished (`cuCtxSynchronize`).
    ///
    /// Refused inside a capture ([`GpuError::NotCapturable`]).
    pub fn synchronize(&self) -> Result<(), GpuError> {
        state::check_host_sync("Gpu::synchronize", 0, state::SYNC)?;
        driver::context_synchronize(&self.inner.ctx)
    }

    /// The device allocator.
    pub fn allocator(&self) -> &Arc<dyn DeviceAllocator> {
        &self.inner.allocator
    }

    /// The device allocator's statistics.
    pub fn allocator_stats(&self) -> AllocatorStats {
        self.inner.allocator.stats()
    }

    /// The device allocator's statistics and segments now, carrying this GPU's ordinal
    /// ([`MemorySnapshot`]): with several GPUs, one per device, as PyTorch's
    /// `memory_snapshot()` tags each segment with its device.
    pub fn memory_snapshot(&self) -> MemorySnapshot {
        let mut snapshot = self.inner.allocator.memory_snapshot();
        snapshot.ordinal = Some(self.ordinal());
        snapshot
    }

    /// The pinned-host allocator's statistics and blocks now
    /// ([`host_allocator`](Gpu::host_allocator)), tagged with this GPU's ordinal (the memory
    /// is host memory; the allocator is this GPU's).
    pub fn host_memory_snapshot(&self) -> MemorySnapshot {
        let mut snapshot = self.inner.host_allocator.memory_snapshot();
        snapshot.ordinal = Some(self.ordinal());
        snapshot
    }

    /// Returns the allocator's cached, unused memory to the driver.
    pub fn empty_cache(&self) -> Result<(), Error> {
        Ok(self.inner.allocator.empty_cache()?)
    }

    /// A [`DeviceMemorySource`] for this device, to build a [`crate::storage`] allocator on
    /// (then pass it to [`Gpu::with_allocator`]).
    pub fn device_memory_source(&self) -> DeviceMemorySource {
        DeviceMemorySource::from_context(Arc::clone(self.context()))
    }

    /// The pinned-host source under [`host_allocator`](Gpu::host_allocator)
    /// (`cuMemHostAlloc` per call, uncached).
    pub fn pinned_source(&self) -> &Arc<PinnedHostSource> {
        &self.inner.pinned
    }

    /// The caching pinned-host allocator staging [`PinnedBuffer`](super::PinnedBuffer)s come
    /// from (PyTorch's `CachingHostAllocator`): power-of-two blocks, a freed block reused
    /// once events on every stream that used it have completed.
    pub fn host_allocator(&self) -> &Arc<PinnedHostAllocator> {
        &self.inner.host_allocator
    }

    /// The pinned-host allocator's statistics (`segments` counts `cuMemHostAlloc` blocks
    /// held, `num_allocs` the buffers handed out).
    pub fn host_allocator_stats(&self) -> AllocatorStats {
        self.inner.host_allocator.stats()
    }

    /// Returns the pinned-host allocator's cached, unused blocks to the driver (after
    /// synchronizing the device, so blocks waiting for copies are returned too).
    pub fn empty_host_cache(&self) -> Result<(), Error> {
        Ok(self.inner.host_allocator.empty_cache()?)
    }

    /// Returns (and clears) the first error recorded where none could be returned: a drop
    /// that could not free memory or synchronise a stream.
    pub fn check_err(&self) -> Result<(), Error> {
        self.inner.errors.take().map_or(Ok(()), Err)
    }

    /// The primary context, for modules that load and launch kernels through cudarc.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }

    /// The slot drops record their errors in.
    pub(crate) fn errors(&self) -> &Arc<ErrorSlot> {
        &self.inner.errors
    }

    /// Checks that `stream` belongs to this device.
    pub(crate) fn check_stream(&self, op: &'static str, stream: &Stream) -> Result<(), GpuError> {
        if stream.ordinal() == self.ordinal() {
            Ok(())
        } else {
            Err(GpuError::DeviceMismatch {
                op,
                lhs: self.ordinal(),
                rhs: stream.ordinal(),
            })
        }
    }
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.ordinal())
            .field("name", &self.inner.info.name)
            .field("compute_capability", &self.inner.info.compute_capability)
            .field("allocator", &self.inner.allocator.name())
            .finish()
    }
}

static_assertions::assert_impl_all!(Gpu: Send, Sync, Clone);
