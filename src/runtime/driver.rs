//! The one module that talks to the CUDA driver.
//!
//! Like cudarc's `result` layer, every function here is a thin wrapper over one driver call
//! (or one cudarc `safe` call) that returns `Result<_, GpuError>` with the call's name and the
//! driver's error name and string. Functions that are memory-unsafe by nature (freeing,
//! copying through raw addresses) are `unsafe fn` with their contract under `# Safety`; the
//! typed wrappers above (`buffer.rs`, the sources, the driver-pool allocator) uphold it.
//!
//! Context binding: CUDA keeps a "current context" per thread, and every allocation, copy and
//! synchronisation acts on it. Allocators and buffers are used from many threads, so every
//! function that needs a context takes one (or a stream, which knows its context) and binds it
//! first. Binding is a `cuCtxGetCurrent` check, and a `cuCtxSetCurrent` only when it differs.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;

use crate::error::GpuError;

/// Turns a cudarc [`DriverError`] into our error, naming the call that failed.
pub(crate) fn driver_error(call: &'static str, err: DriverError) -> GpuError {
    let name = err
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", err.0));
    let message = match err.error_string() {
        Ok(s) => format!("{name}: {}", s.to_string_lossy()),
        Err(_) => name,
    };
    GpuError::Driver { call, message }
}

/// Adds the call's name to a cudarc result.
trait CallName<T> {
    fn call(self, name: &'static str) -> Result<T, GpuError>;
}

impl<T> CallName<T> for Result<T, DriverError> {
    fn call(self, name: &'static str) -> Result<T, GpuError> {
        self.map_err(|e| driver_error(name, e))
    }
}

/// Why a driver allocation failed. Out-of-memory is kept apart so sources and allocators can
/// report it as such (and free caches and retry) without parsing messages.
#[derive(Debug)]
pub(crate) enum AllocFailure {
    /// `CUDA_ERROR_OUT_OF_MEMORY`.
    OutOfMemory,
    /// Any other failure.
    Driver(GpuError),
}

fn alloc_failure(call: &'static str, err: DriverError) -> AllocFailure {
    if err.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        AllocFailure::OutOfMemory
    } else {
        AllocFailure::Driver(driver_error(call, err))
    }
}

// ---------------------------------------------------------------------------------------------
// Driver library, devices, contexts
// ---------------------------------------------------------------------------------------------

/// Whether libcuda can be loaded. Probed once: cudarc panics on the first driver call when the
/// library is missing, so every path into the driver goes through [`init`] which checks this.
pub(crate) fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: `is_culib_present` is unsafe only because loading a shared library runs its
        // initialisers. It loads the NVIDIA driver library under its standard names, which is
        // exactly what cudarc does on the first driver call anyway; libcuda's initialisers
        // are designed to run in any process that loads it. The library is unloaded again.
        unsafe { sys::is_culib_present() }
    })
}

/// `cuInit`, after checking that the driver library exists. A machine with a driver but no
/// device reports `Ok(false)`.
pub(crate) fn init() -> Result<bool, GpuError> {
    if !driver_present() {
        return Err(GpuError::NoDriver);
    }
    match result::init() {
        Ok(()) => Ok(true),
        Err(DriverError(CUresult::CUDA_ERROR_NO_DEVICE)) => Ok(false),
        Err(e) => Err(driver_error("cuInit", e)),
    }
}

/// `cuDeviceGetCount` (0 when the driver finds no device).
pub(crate) fn device_count() -> Result<usize, GpuError> {
    if !init()? {
        return Ok(0);
    }
    let count = result::device::get_count().call("cuDeviceGetCount")?;
    // A negative count would be a driver bug; treat it as no device rather than wrapping.
    Ok(usize::try_from(count).unwrap_or(0))
}

/// Retains the primary context of device `ordinal` (`cuDevicePrimaryCtxRetain`) and binds it
/// to the calling thread.
pub(crate) fn retain_primary_context(ordinal: usize) -> Result<Arc<CudaContext>, GpuError> {
    let count = device_count()?;
    if ordinal >= count {
        return Err(GpuError::NoSuchDevice { ordinal, count });
    }
    CudaContext::new(ordinal).call("cuDevicePrimaryCtxRetain")
}

/// Makes `ctx` current on the calling thread.
pub(crate) fn bind(ctx: &CudaContext) -> Result<(), GpuError> {
    ctx.bind_to_thread().call("cuCtxSetCurrent")
}

/// `cuDeviceGetAttribute`.
pub(crate) fn device_attribute(
    ctx: &CudaContext,
    attribute: sys::CUdevice_attribute,
) -> Result<i32, GpuError> {
    ctx.attribute(attribute).call("cuDeviceGetAttribute")
}

/// `cuDeviceGetName`.
pub(crate) fn device_name(ctx: &CudaContext) -> Result<String, GpuError> {
    ctx.name().call("cuDeviceGetName")
}

/// `cuDeviceTotalMem`.
pub(crate) fn device_total_memory(ctx: &CudaContext) -> Result<usize, GpuError> {
    ctx.total_mem().call("cuDeviceTotalMem")
}

/// `cuMemGetInfo`: `(free, total)` bytes of the context's device.
pub(crate) fn memory_info(ctx: &CudaContext) -> Result<(usize, usize), GpuError> {
    bind(ctx)?;
    result::mem_get_info().call("cuMemGetInfo")
}

/// `cuCtxSynchronize`: waits for all work in the context.
pub(crate) fn context_synchronize(ctx: &CudaContext) -> Result<(), GpuError> {
    ctx.synchronize().call("cuCtxSynchronize")
}

// ---------------------------------------------------------------------------------------------
// Streams and events
// ---------------------------------------------------------------------------------------------

/// `cuStreamCreate(CU_STREAM_NON_BLOCKING)`: a stream that does not synchronise with the
/// legacy default stream.
pub(crate) fn create_stream(ctx: &Arc<CudaContext>) -> Result<Arc<CudaStream>, GpuError> {
    ctx.new_stream().call("cuStreamCreate")
}

/// The context's legacy default stream (the null `CUstream`).
pub(crate) fn legacy_default_stream(ctx: &Arc<CudaContext>) -> Arc<CudaStream> {
    ctx.default_stream()
}

/// `cuStreamSynchronize`.
pub(crate) fn stream_synchronize(stream: &CudaStream) -> Result<(), GpuError> {
    stream.synchronize().call("cuStreamSynchronize")
}

/// `cuStreamWaitEvent`: later work on `stream` waits until `event` completes (on the GPU; the
/// host does not block).
pub(crate) fn stream_wait_event(stream: &CudaStream, event: &CudaEvent) -> Result<(), GpuError> {
    stream.wait(event).call("cuStreamWaitEvent")
}

/// `cuEventCreate`, with `CU_EVENT_DISABLE_TIMING` unless `timing` (timing-capable events are
/// slower to record and to wait on).
pub(crate) fn create_event(ctx: &Arc<CudaContext>, timing: bool) -> Result<CudaEvent, GpuError> {
    let flags = if timing {
        sys::CUevent_flags::CU_EVENT_DEFAULT
    } else {
        sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
    };
    ctx.new_event(Some(flags)).call("cuEventCreate")
}

/// `cuEventRecord`.
pub(crate) fn event_record(event: &CudaEvent, stream: &CudaStream) -> Result<(), GpuError> {
    event.record(stream).call("cuEventRecord")
}

/// `cuEventQuery`: whether all work captured by the event has completed (an event never
/// recorded counts as completed).
pub(crate) fn event_query(event: &CudaEvent) -> Result<bool, GpuError> {
    bind(event.context())?;
    event.try_is_complete().call("cuEventQuery")
}

/// `cuEventSynchronize`: blocks until the event completes.
pub(crate) fn event_synchronize(event: &CudaEvent) -> Result<(), GpuError> {
    event.synchronize().call("cuEventSynchronize")
}

/// `cuEventElapsedTime` (waits for both events first).
pub(crate) fn event_elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f32, GpuError> {
    start.elapsed_ms(end).call("cuEventElapsedTime")
}

// ---------------------------------------------------------------------------------------------
// Device and pinned host memory
// ---------------------------------------------------------------------------------------------

/// `cuMemAlloc`: `bytes` of device memory, aligned to at least 256 bytes (the driver aligns
/// every allocation for any data type; the CUDA programming guide states 256).
pub(crate) fn mem_alloc(ctx: &CudaContext, bytes: usize) -> Result<u64, AllocFailure> {
    bind(ctx).map_err(AllocFailure::Driver)?;
    // SAFETY: `malloc_sync` is unsafe because the memory it returns is uninitialised; we hand
    // out only its address, and every reader of it upholds initialisation itself.
    unsafe { result::malloc_sync(bytes) }.map_err(|e| alloc_failure("cuMemAlloc", e))
}

/// `cuMemFree`.
///
/// # Safety
///
/// `addr` came from [`mem_alloc`] in `ctx`'s device, has not been freed, and no queued or
/// running work uses it any more.
pub(crate) unsafe fn mem_free(ctx: &CudaContext, addr: u64) -> Result<(), GpuError> {
    bind(ctx)?;
    // SAFETY: the caller guarantees `addr` is a live `cuMemAlloc` allocation no work uses.
    unsafe { result::memory_free(addr) }.call("cuMemFree")
}

/// `cuMemHostAlloc`: `bytes` of page-locked host memory, page aligned.
pub(crate) fn mem_host_alloc(
    ctx: &CudaContext,
    bytes: usize,
    flags: u32,
) -> Result<NonNull<u8>, AllocFailure> {
    bind(ctx).map_err(AllocFailure::Driver)?;
    // SAFETY: unsafe only because the returned memory is uninitialised; callers initialise
    // it before creating references to it.
    let ptr = unsafe { result::malloc_host(bytes, flags) }
        .map_err(|e| alloc_failure("cuMemHostAlloc", e))?;
    NonNull::new(ptr.cast::<u8>()).ok_or_else(|| {
        AllocFailure::Driver(GpuError::Driver {
            call: "cuMemHostAlloc",
            message: "the driver returned a null pointer".to_owned(),
        })
    })
}

/// `cuMemFreeHost`.
///
/// # Safety
///
/// `ptr` came from [`mem_host_alloc`], has not been freed, and no queued or running copy and
/// no live reference uses it.
pub(crate) unsafe fn mem_free_host(ctx: &CudaContext, ptr: NonNull<u8>) -> Result<(), GpuError> {
    bind(ctx)?;
    // SAFETY: the caller guarantees `ptr` is a live `cuMemHostAlloc` allocation nobody uses.
    unsafe { result::free_host(ptr.as_ptr().cast::<c_void>()) }.call("cuMemFreeHost")
}

/// Whether `ptr` lies in memory the driver knows (page-locked, registered or managed), as
/// opposed to ordinary pageable memory. Copies from or to such memory are truly
/// asynchronous; copies from or to pageable memory are done with the host range when the
/// call returns. Any doubt (a driver error other than "not a CUDA pointer") answers `true`,
/// the conservative side.
pub(crate) fn is_driver_host_memory(ctx: &CudaContext, ptr: *const u8) -> bool {
    if bind(ctx).is_err() {
        return true;
    }
    let mut memory_type: u32 = 0;
    let mut attribute = sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    let mut data = (&mut memory_type as *mut u32).cast::<c_void>();
    // SAFETY: `cuPointerGetAttributes` with one MEMORY_TYPE attribute writes one
    // `CUmemorytype` (a 32-bit enum) through `data[0]`, which points to a live `u32`; the
    // attribute and data arrays are one live element each. The queried address is only looked
    // up in the driver's tables, never dereferenced. Unlike the singular call, it answers 0
    // ("not a CUDA pointer") for pageable memory instead of failing, so sanitizers see no
    // API error on this routine probe.
    let res = unsafe { sys::cuPointerGetAttributes(1, &mut attribute, &mut data, ptr as u64) };
    res != CUresult::CUDA_SUCCESS || memory_type != 0
}

// ---------------------------------------------------------------------------------------------
// Stream-ordered memset and copies
// ---------------------------------------------------------------------------------------------

/// `cuMemsetD8Async(dst, 0, bytes)` on `stream`.
///
/// # Safety
///
/// `[dst, dst + bytes)` is live device memory that no other work writes or reads
/// concurrently, and stays allocated until the memset completes.
pub(crate) unsafe fn memset_zero_async(
    dst: u64,
    bytes: usize,
    stream: &CudaStream,
) -> Result<(), GpuError> {
    bind(stream.context())?;
    // SAFETY: the caller guarantees the destination range; `stream` is alive (borrowed).
    unsafe { result::memset_d8_async(dst, 0, bytes, stream.cu_stream()) }.call("cuMemsetD8Async")
}

/// `cuMemcpyHtoDAsync(dst, src, bytes)` on `stream`.
///
/// # Safety
///
/// `[src, src + bytes)` is readable host memory and `[dst, dst + bytes)` live device memory.
/// Both stay valid, and the host range unmodified, until the copy is done with them: at
/// return for pageable memory (the driver stages it before returning), when the copy
/// completes on `stream` for page-locked memory.
pub(crate) unsafe fn memcpy_htod_async(
    dst: u64,
    src: *const u8,
    bytes: usize,
    stream: &CudaStream,
) -> Result<(), GpuError> {
    bind(stream.context())?;
    // SAFETY: the caller guarantees both ranges for the copy's duration.
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast::<c_void>(), bytes, stream.cu_stream()) }
        .result()
        .call("cuMemcpyHtoDAsync")
}

/// `cuMemcpyDtoHAsync(dst, src, bytes)` on `stream`.
///
/// # Safety
///
/// `[dst, dst + bytes)` is writable host memory that nothing reads or writes until the copy
/// is done with it (at return for pageable memory, when the copy completes on `stream` for
/// page-locked memory), and any bytes the device holds there are a valid value for the
/// host's type. `[src, src + bytes)` is live device memory.
pub(crate) unsafe fn memcpy_dtoh_async(
    dst: *mut u8,
    src: u64,
    bytes: usize,
    stream: &CudaStream,
) -> Result<(), GpuError> {
    bind(stream.context())?;
    // SAFETY: the caller guarantees both ranges for the copy's duration.
    unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast::<c_void>(), src, bytes, stream.cu_stream()) }
        .result()
        .call("cuMemcpyDtoHAsync")
}

/// `cuMemcpyDtoDAsync(dst, src, bytes)` on `stream`.
///
/// # Safety
///
/// Both ranges are live device memory of the stream's device and stay allocated until the
/// copy completes.
pub(crate) unsafe fn memcpy_dtod_async(
    dst: u64,
    src: u64,
    bytes: usize,
    stream: &CudaStream,
) -> Result<(), GpuError> {
    bind(stream.context())?;
    // SAFETY: the caller guarantees both ranges for the copy's duration.
    unsafe { result::memcpy_dtod_async(dst, src, bytes, stream.cu_stream()) }
        .call("cuMemcpyDtoDAsync")
}

// ---------------------------------------------------------------------------------------------
// Modules, functions and kernel launches (used by the GPU engine)
// ---------------------------------------------------------------------------------------------

/// The compute capability `(major, minor)` of `ctx`'s device: two `cuDeviceGetAttribute`
/// calls.
pub(crate) fn compute_capability(ctx: &CudaContext) -> Result<(i32, i32), GpuError> {
    ctx.compute_capability().call("cuDeviceGetAttribute")
}

/// `cuModuleLoadData`: loads a compiled image (PTX or cubin) into `ctx`.
///
/// Runs with the thread's stream-capture mode relaxed ([`relaxed_capture`]): the first use of
/// a kernel may come inside a CUDA graph capture, and loading may allocate device memory,
/// which a capturing thread is otherwise refused. Loading is not recorded into the graph.
pub(crate) fn load_module(ctx: &Arc<CudaContext>, image: Ptx) -> Result<Arc<CudaModule>, GpuError> {
    relaxed_capture(|| ctx.load_module(image).call("cuModuleLoadData"))
}

/// Runs `f` with the calling thread's stream-capture mode relaxed, then restores it (two
/// `cuThreadExchangeStreamCaptureMode` calls, thread-local in the driver; for rare calls such
/// as module loads, which may come inside a capture).
fn relaxed_capture<R>(f: impl FnOnce() -> Result<R, GpuError>) -> Result<R, GpuError> {
    let saved = relax_capture_mode()?;
    let result = f();
    restore_capture_mode(saved)?;
    result
}

/// `cuModuleGetFunction`: the entry point `entry` of `module`.
///
/// # Errors
/// [`GpuError::Driver`] when `entry` holds a NUL byte (refused before the call) or the module
/// has no such function.
pub(crate) fn load_function(
    module: &Arc<CudaModule>,
    entry: &str,
) -> Result<CudaFunction, GpuError> {
    if entry.contains('\0') {
        return Err(GpuError::Driver {
            call: "cuModuleGetFunction",
            message: format!("kernel name {entry:?} contains a NUL byte"),
        });
    }
    // Relaxed as in `load_module`: with lazy loading (CUDA's default) this call is what
    // loads the function onto the device.
    relaxed_capture(|| module.load_function(entry).call("cuModuleGetFunction"))
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor` for `function` launched with `block`
/// threads and no dynamic shared memory.
pub(crate) fn max_active_blocks_per_multiprocessor(
    function: &CudaFunction,
    block: u32,
) -> Result<u32, GpuError> {
    function
        .occupancy_max_active_blocks_per_multiprocessor(block, 0, None)
        .call("cuOccupancyMaxActiveBlocksPerMultiprocessor")
}

/// `cuLaunchKernel`: queues `function` on `stream` with a `grid` of `block`-thread blocks
/// and no dynamic shared memory, after binding the stream's context (`cuCtxSetCurrent`).
/// The one place in the crate that launches a kernel.
///
/// # Safety
/// - `params` holds one pointer per parameter of `function`'s entry point, in declaration
///   order, each pointing to a value of that parameter's type and size, valid for the call
///   (the driver copies the values before it returns);
/// - the memory the kernel reaches through those values is valid for every access it makes
///   until the kernel has run on `stream`;
/// - `function` was loaded in `stream`'s context;
/// - `grid` and `block` are within the device's limits and the kernel's launch bounds.
pub(crate) unsafe fn launch_kernel(
    stream: &CudaStream,
    function: &CudaFunction,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    params: &mut [*mut c_void],
) -> Result<(), GpuError> {
    bind(stream.context())?;
    // SAFETY: the caller upholds the parameter list, memory validity, context and size
    // requirements above; `function` and `stream` are live handles for the duration of the
    // call (borrowed).
    unsafe {
        result::launch_kernel(
            function.cu_function(),
            grid,
            block,
            0,
            stream.cu_stream(),
            params,
        )
    }
    .call("cuLaunchKernel")
}

/// `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`: queues
/// `function` like [`launch_kernel`], but lets it start (up to its `griddepcontrol.wait`)
/// before the kernel queued before it on `stream` has finished, once that kernel's blocks
/// have all run `griddepcontrol.launch_dependents` (or exited). Only kernel-to-kernel order
/// on the same stream is relaxed; a copy, a memset, an event wait or another stream before it
/// orders it as usual (docs/GRAPHS.md, "Programmatic dependent launch").
///
/// # Safety
/// As [`launch_kernel`], and: every thread of `function` executes `griddepcontrol.wait`
/// before any access to global memory (read or write) that the previous work on `stream`
/// may also access (the pointwise and fused entry points do so first thing, `ts_pdl_enter`
/// in `kernels/apply.cuh`, in images compiled for `sm_90` and later).
pub(crate) unsafe fn launch_kernel_programmatic(
    stream: &CudaStream,
    function: &CudaFunction,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    params: &mut [*mut c_void],
) -> Result<(), GpuError> {
    bind(stream.context())?;
    let mut value = sys::CUlaunchAttributeValue { pad: [0; 64] };
    value.programmaticStreamSerializationAllowed = 1;
    let mut attr = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    };
    let config = sys::CUlaunchConfig {
        gridDimX: grid.0,
        gridDimY: grid.1,
        gridDimZ: grid.2,
        blockDimX: block.0,
        blockDimY: block.1,
        blockDimZ: block.2,
        sharedMemBytes: 0,
        hStream: stream.cu_stream(),
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: `config` and the one attribute it points to live on this stack frame for the
    // call; the caller upholds the parameter list, memory validity, context, size and wait
    // requirements above; `function` and `stream` are live handles (borrowed). The driver
    // copies the parameter values and the configuration before it returns.
    unsafe {
        sys::cuLaunchKernelEx(
            &config,
            function.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
    .call("cuLaunchKernelEx")
}

// ---------------------------------------------------------------------------------------------
// Stream-ordered memory pools
// ---------------------------------------------------------------------------------------------

/// A device's default memory pool (`cuDeviceGetDefaultMemPool`). Only [`default_mem_pool`]
/// makes one, so the handle is always valid: the default pool lives as long as the device's
/// context, which the holder keeps retained. Pool calls take that context and bind it, like
/// every other call here.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemPool(sys::CUmemoryPool);

// SAFETY: a `CUmemoryPool` is an opaque handle the driver owns; the driver's pool API is
// thread safe, and the handle is never dereferenced on the host.
unsafe impl Send for MemPool {}
// SAFETY: as for `Send`: all access goes through thread-safe driver calls.
unsafe impl Sync for MemPool {}

/// Whether the device supports stream-ordered allocation (`cuMemAllocAsync`).
pub(crate) fn supports_mem_pools(ctx: &CudaContext) -> Result<bool, GpuError> {
    let supported = device_attribute(
        ctx,
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
    )?;
    Ok(supported > 0)
}

/// `cuDeviceGetDefaultMemPool`.
pub(crate) fn default_mem_pool(ctx: &CudaContext) -> Result<MemPool, GpuError> {
    bind(ctx)?;
    // SAFETY: `cu_device` is the device the live context `ctx` was created for.
    let pool = unsafe { result::device::get_default_mem_pool(ctx.cu_device()) }
        .call("cuDeviceGetDefaultMemPool")?;
    Ok(MemPool(pool))
}

/// A 64-bit pool attribute (release threshold, reserved memory and its peak, peak of used
/// memory).
#[derive(Clone, Copy, Debug)]
pub(crate) enum PoolAttribute {
    ReleaseThreshold,
    ReservedCurrent,
    ReservedHigh,
    UsedHigh,
}

impl PoolAttribute {
    fn raw(self) -> sys::CUmemPool_attribute {
        use sys::CUmemPool_attribute as A;
        match self {
            PoolAttribute::ReleaseThreshold => A::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            PoolAttribute::ReservedCurrent => A::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
            PoolAttribute::ReservedHigh => A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
            PoolAttribute::UsedHigh => A::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
        }
    }
}

/// `cuMemPoolGetAttribute` for a 64-bit attribute.
pub(crate) fn pool_get(
    ctx: &CudaContext,
    pool: MemPool,
    attribute: PoolAttribute,
) -> Result<u64, GpuError> {
    bind(ctx)?;
    let mut value: u64 = 0;
    // SAFETY: `pool` is a valid pool (see `MemPool`), and every `PoolAttribute` is a
    // `cuuint64_t` attribute, so the driver writes exactly one `u64` through `value`.
    unsafe {
        result::mem_pool::get_attribute(
            pool.0,
            attribute.raw(),
            (&mut value as *mut u64).cast::<c_void>(),
        )
    }
    .call("cuMemPoolGetAttribute")?;
    Ok(value)
}

/// `cuMemPoolSetAttribute` for a 64-bit attribute. The driver allows setting the release
/// threshold to any value and the two high-water marks to 0 only (a reset).
pub(crate) fn pool_set(
    ctx: &CudaContext,
    pool: MemPool,
    attribute: PoolAttribute,
    value: u64,
) -> Result<(), GpuError> {
    bind(ctx)?;
    let mut value = value;
    // SAFETY: `pool` is valid, and every `PoolAttribute` is a `cuuint64_t` attribute, so the
    // driver reads exactly one `u64` through the pointer.
    unsafe {
        result::mem_pool::set_attribute(
            pool.0,
            attribute.raw(),
            (&mut value as *mut u64).cast::<c_void>(),
        )
    }
    .call("cuMemPoolSetAttribute")
}

/// `cuMemPoolTrimTo`: returns unused pool memory to the driver, keeping at least `keep`
/// bytes reserved. Memory still allocated, or freed by work that has not completed, stays.
pub(crate) fn pool_trim_to(ctx: &CudaContext, pool: MemPool, keep: usize) -> Result<(), GpuError> {
    bind(ctx)?;
    // SAFETY: `pool` is a valid pool (see `MemPool`).
    unsafe { result::mem_pool::trim_to(pool.0, keep) }.call("cuMemPoolTrimTo")
}

/// `cuMemAllocFromPoolAsync`: `bytes` from `pool`, usable on `stream` in stream order (and on
/// other streams once they are ordered after this point).
pub(crate) fn pool_alloc_async(
    pool: MemPool,
    bytes: usize,
    stream: &CudaStream,
) -> Result<u64, AllocFailure> {
    bind(stream.context()).map_err(AllocFailure::Driver)?;
    // SAFETY: `pool` is valid and `stream` alive (borrowed). The call is unsafe only because
    // the memory is uninitialised; readers uphold initialisation themselves.
    unsafe { result::mem_pool::alloc_async(pool.0, bytes, stream.cu_stream()) }
        .map_err(|e| alloc_failure("cuMemAllocFromPoolAsync", e))
}

/// `cuMemFreeAsync`: frees `addr` in stream order on `stream`.
///
/// # Safety
///
/// `addr` came from [`pool_alloc_async`], has not been freed, and all work that uses it is
/// ordered before this point of `stream` (queued earlier on `stream`, or on streams `stream`
/// waits on).
pub(crate) unsafe fn free_async(addr: u64, stream: &CudaStream) -> Result<(), GpuError> {
    bind(stream.context())?;
    // SAFETY: the caller guarantees a live pool allocation whose uses are all ordered before
    // this point of the (alive, borrowed) stream.
    unsafe { result::free_async(addr, stream.cu_stream()) }.call("cuMemFreeAsync")
}

// ---------------------------------------------------------------------------------------------
// CUDA graphs: stream capture, instantiation, replay
// ---------------------------------------------------------------------------------------------

/// `cuStreamBeginCapture` in thread-local mode: work queued on `stream` from now on is
/// recorded into a graph instead of run. Thread-local mode restricts only the calling thread
/// (from calls that could synchronise); other threads go on as usual.
pub(crate) fn begin_capture(stream: &CudaStream) -> Result<(), GpuError> {
    bind(stream.context())?;
    // SAFETY: `stream` is a live stream (borrowed); the call only changes its mode.
    unsafe {
        result::stream::begin_capture(
            stream.cu_stream(),
            sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        )
    }
    .call("cuStreamBeginCapture")
}

/// `cuStreamEndCapture`: ends the capture on `stream` and returns the graph recorded. The
/// stream leaves capture mode whether or not this succeeds (an invalidated capture gives
/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` and no graph).
pub(crate) fn end_capture(stream: &CudaStream) -> Result<CapturedGraph, GpuError> {
    bind(stream.context())?;
    // SAFETY: `stream` is a live stream (borrowed); the returned handle is owned by the
    // caller, which `CapturedGraph` destroys exactly once.
    let graph =
        unsafe { result::stream::end_capture(stream.cu_stream()) }.call("cuStreamEndCapture")?;
    if graph.is_null() {
        return Err(GpuError::Driver {
            call: "cuStreamEndCapture",
            message: "the driver returned no graph".to_owned(),
        });
    }
    Ok(CapturedGraph {
        graph,
        ctx: Arc::clone(stream.context()),
    })
}

/// `cuStreamIsCapturing`: whether `stream` is capturing now.
pub(crate) fn is_capturing(stream: &CudaStream) -> Result<bool, GpuError> {
    bind(stream.context())?;
    // SAFETY: `stream` is a live stream (borrowed); the call only reads its status.
    let status =
        unsafe { result::stream::is_capturing(stream.cu_stream()) }.call("cuStreamIsCapturing")?;
    Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// The calling thread's stream-capture mode before [`relax_capture_mode`], for
/// [`restore_capture_mode`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct CaptureMode(sys::CUstreamCaptureMode);

/// `cuThreadExchangeStreamCaptureMode(RELAXED)`: lets the calling thread make calls that are
/// refused while it captures (`cuMemAlloc`), as PyTorch does around `cudaMalloc`. Returns the
/// mode to restore.
pub(crate) fn relax_capture_mode() -> Result<CaptureMode, GpuError> {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: `mode` is a valid, writable `CUstreamCaptureMode` for the duration of the call;
    // the driver swaps the thread's mode with it.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
        .result()
        .call("cuThreadExchangeStreamCaptureMode")?;
    Ok(CaptureMode(mode))
}

/// Restores the thread's capture mode saved by [`relax_capture_mode`].
pub(crate) fn restore_capture_mode(saved: CaptureMode) -> Result<(), GpuError> {
    let mut mode = saved.0;
    // SAFETY: as in `relax_capture_mode`.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
        .result()
        .call("cuThreadExchangeStreamCaptureMode")
}

/// A graph recorded by [`end_capture`] (`CUgraph`), destroyed on drop (`cuGraphDestroy`).
pub(crate) struct CapturedGraph {
    graph: sys::CUgraph,
    ctx: Arc<CudaContext>,
}

// SAFETY: a `CUgraph` is an opaque driver handle, never dereferenced on the host. The driver
// requires that one graph not be used by two threads at once: every use here (`instantiate`,
// drop) takes the owning value or `&mut`, and there is no `&self` method.
unsafe impl Send for CapturedGraph {}

impl CapturedGraph {
    /// `cuGraphInstantiateWithFlags(0)`: an executable graph. The recorded graph may be
    /// dropped afterwards; the executable one does not depend on it.
    pub(crate) fn instantiate(&mut self) -> Result<GraphExec, GpuError> {
        bind(&self.ctx)?;
        // SAFETY: `self.graph` is the live graph this value owns (destroyed only in drop).
        let exec =
            unsafe { result::graph::instantiate(self.graph, sys::CUgraphInstantiate_flags(0)) }
                .call("cuGraphInstantiate")?;
        Ok(GraphExec {
            exec,
            ctx: Arc::clone(&self.ctx),
        })
    }
}

impl Drop for CapturedGraph {
    fn drop(&mut self) {
        // Errors cannot be returned from a drop and would only mean the handle is already
        // gone with its context; nothing is left to clean.
        if bind(&self.ctx).is_ok() {
            // SAFETY: `self.graph` is live and owned by this value; it is destroyed once.
            let _ = unsafe { result::graph::destroy(self.graph) };
        }
    }
}

/// An executable graph (`CUgraphExec`), destroyed on drop (`cuGraphExecDestroy`: a launch
/// still running completes first; the driver frees the graph after it).
pub(crate) struct GraphExec {
    exec: sys::CUgraphExec,
    ctx: Arc<CudaContext>,
}

// SAFETY: a `CUgraphExec` is an opaque driver handle, never dereferenced on the host. The
// driver forbids using one executable graph from two threads at once: `launch` takes
// `&mut self` and drop the value, and no method takes `&self`, so shared references allow no
// driver call at all (hence also `Sync`).
unsafe impl Send for GraphExec {}
// SAFETY: see `Send`: `&GraphExec` gives access to nothing.
unsafe impl Sync for GraphExec {}

impl GraphExec {
    /// `cuGraphLaunch`: queues one run of the graph on `stream`.
    ///
    /// # Safety
    ///
    /// Every address the graph's nodes read or write must be valid for those accesses, and
    /// hold what the nodes expect (initialised elements where they read), until the launch
    /// has run on `stream`; and the launch must be ordered after all other work on that
    /// memory that it must follow.
    pub(crate) unsafe fn launch(&mut self, stream: &CudaStream) -> Result<(), GpuError> {
        bind(&self.ctx)?;
        // SAFETY: `self.exec` is live (destroyed only in drop) and `stream` is alive
        // (borrowed); the memory contract is the caller's.
        unsafe { result::graph::launch(self.exec, stream.cu_stream()) }.call("cuGraphLaunch")
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        // As for `CapturedGraph`: nothing useful can be done with an error here.
        if bind(&self.ctx).is_ok() {
            // SAFETY: `self.exec` is live and owned by this value; it is destroyed once.
            // A launch in flight completes before the driver releases it.
            let _ = unsafe { result::graph::exec_destroy(self.exec) };
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Several GPUs: peer access and copies between devices (used by `runtime/peer.rs`)
// ---------------------------------------------------------------------------------------------

/// `cuDeviceCanAccessPeer`: whether `ctx`'s device can map memory of `peer`'s device, so that
/// peer access may be enabled between them.
pub(crate) fn can_access_peer(ctx: &CudaContext, peer: &CudaContext) -> Result<bool, GpuError> {
    let mut can: std::ffi::c_int = 0;
    // SAFETY: `can` is a live, writable `c_int` for the call; both device handles belong to
    // live contexts (borrowed), so the driver is initialised and they name real devices.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, ctx.cu_device(), peer.cu_device()) }
        .result()
        .call("cuDeviceCanAccessPeer")?;
    Ok(can != 0)
}

/// `cuCtxEnablePeerAccess(peer, 0)` with `ctx` bound: lets work in `ctx` reach memory of
/// `peer`'s device directly (NVLink or PCIe peer-to-peer). Access that is already enabled
/// counts as enabled; `CUDA_ERROR_PEER_ACCESS_UNSUPPORTED` and `CUDA_ERROR_TOO_MANY_PEERS`
/// answer `Ok(false)` (the caller copies another way); any other failure is an error.
pub(crate) fn enable_peer_access(ctx: &CudaContext, peer: &CudaContext) -> Result<bool, GpuError> {
    bind(ctx)?;
    // SAFETY: `peer.cu_ctx()` is a live context (retained by `peer`, borrowed for the call);
    // the call only adds mappings to the current context, `ctx`.
    match unsafe { sys::cuCtxEnablePeerAccess(peer.cu_ctx(), 0) }.result() {
        Ok(()) | Err(DriverError(CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)) => Ok(true),
        Err(DriverError(
            CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED | CUresult::CUDA_ERROR_TOO_MANY_PEERS,
        )) => Ok(false),
        Err(e) => Err(driver_error("cuCtxEnablePeerAccess", e)),
    }
}

/// `cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, bytes)` on `stream` (a stream of either
/// context): copies between the memory of two devices, directly when peer access is
/// enabled.
///
/// # Safety
///
/// `[src, src + bytes)` is live device memory of `src_ctx`'s device and
/// `[dst, dst + bytes)` live device memory of `dst_ctx`'s device, disjoint; both stay
/// allocated until the copy completes on `stream`, no other work writes `src` or reads or
/// writes `dst` while it runs, and the bytes of `src` are valid values of the type `dst`
/// holds.
pub(crate) unsafe fn memcpy_peer_async(
    dst: u64,
    dst_ctx: &CudaContext,
    src: u64,
    src_ctx: &CudaContext,
    bytes: usize,
    stream: &CudaStream,
) -> Result<(), GpuError> {
    bind(stream.context())?;
    // SAFETY: the caller guarantees both ranges for the copy's duration; the contexts and
    // the stream are live (borrowed).
    unsafe {
        result::memcpy_peer_async(
            dst_ctx.cu_ctx(),
            dst,
            src_ctx.cu_ctx(),
            src,
            bytes,
            stream.cu_stream(),
        )
    }
    .call("cuMemcpyPeerAsync")
}
