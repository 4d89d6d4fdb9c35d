//! Device and page-locked host memory: allocation and freeing, the host-pointer probe, and
//! the stream-ordered memset and copies between host and device.

use std::ffi::c_void;
use std::ptr::NonNull;

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, CudaStream};

use super::context::bind;
use super::{alloc_failure, AllocFailure, CallName};
use crate::error::GpuError;

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
