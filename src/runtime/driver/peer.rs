//! Several GPUs: peer access and copies between devices (used by `runtime/peer/`).

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, CudaStream};

use super::context::bind;
use super::{driver_error, CallName};
use crate::error::GpuError;

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
