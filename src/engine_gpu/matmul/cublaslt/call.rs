//! The heuristic's choice for a [`Problem`] and the `cublasLtMatmul` call.

use std::ffi::c_void;

use cudarc::cublaslt::sys as lt;
use cudarc::driver::{CudaContext, CudaStream};

use super::desc::{desc_attr, Descriptors};
use super::handle::with_handle;
use super::{Algo, Call, Pointers, Problem, Scale};
use crate::error::GpuError;

/// The largest workspace a plan may ask for: 32 MiB, PyTorch's default cuBLAS workspace on
/// Hopper (`CUBLAS_WORKSPACE_CONFIG` unset). Only what the chosen algorithm needs is
/// allocated per call.
pub(crate) const MAX_WORKSPACE: usize = 32 << 20;

/// cuBLASLt's fastest algorithm for `p` on the device of `ctx`, or `None` when it has none
/// (a layout, alignment or epilogue it does not support).
///
/// # Errors
/// [`GpuError::NoCublasLt`]; [`GpuError::Cublas`] when a call fails otherwise.
pub(crate) fn heuristic(ctx: &CudaContext, p: &Problem) -> Result<Option<Algo>, GpuError> {
    use lt::cublasLtMatmulPreferenceAttributes_t as P;
    with_handle(ctx, |handle| {
        let desc = Descriptors::new(p)?;
        struct Pref(lt::cublasLtMatmulPreference_t);
        impl Drop for Pref {
            fn drop(&mut self) {
                if !self.0.is_null() {
                    // SAFETY: made by `cublasLtMatmulPreferenceCreate`, destroyed once.
                    let _ = unsafe { lt::cublasLtMatmulPreferenceDestroy(self.0) };
                }
            }
        }
        let mut pref = Pref(std::ptr::null_mut());
        // SAFETY: the library is present; `pref.0` is a live slot.
        unsafe { lt::cublasLtMatmulPreferenceCreate(&mut pref.0) }
            .call("cublasLtMatmulPreferenceCreate")?;
        let workspace = MAX_WORKSPACE as u64;
        for (attr, bytes, size) in [
            (
                P::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &workspace as *const u64 as *const c_void,
                size_of::<u64>(),
            ),
            (
                P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                &p.align_a as *const u32 as *const c_void,
                size_of::<u32>(),
            ),
            (
                P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                &p.align_b as *const u32 as *const c_void,
                size_of::<u32>(),
            ),
            (
                P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                &p.align_d as *const u32 as *const c_void,
                size_of::<u32>(),
            ),
            (
                P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                &p.align_d as *const u32 as *const c_void,
                size_of::<u32>(),
            ),
        ] {
            // SAFETY: `pref.0` is live; the workspace limit is a uint64 and the alignments
            // uint32 (cuBLASLt's documented types), all live for the call.
            unsafe { lt::cublasLtMatmulPreferenceSetAttribute(pref.0, attr, bytes, size) }
                .call("cublasLtMatmulPreferenceSetAttribute")?;
        }
        let mut result = std::mem::MaybeUninit::<lt::cublasLtMatmulHeuristicResult_t>::zeroed();
        let mut found: i32 = 0;
        // SAFETY: every descriptor is live; `result` has room for the one result asked for
        // and `found` is a live local.
        let status = unsafe {
            lt::cublasLtMatmulAlgoGetHeuristic(
                handle,
                desc.matmul,
                desc.a,
                desc.b,
                desc.d,
                desc.d,
                pref.0,
                1,
                result.as_mut_ptr(),
                &mut found,
            )
        };
        // Not supported, or a layout this library version refuses: the caller falls back
        // (copies, or no fused epilogue).
        if matches!(
            status,
            lt::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED
                | lt::cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE
        ) || (status == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS && found < 1)
        {
            return Ok(None);
        }
        status.call("cublasLtMatmulAlgoGetHeuristic")?;
        // SAFETY: the call succeeded and wrote one result (`found >= 1`); the struct is
        // plain data, zeroed before.
        let result = unsafe { result.assume_init() };
        if result.state != lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Ok(None);
        }
        Ok(Some(Algo {
            algo: result.algo,
            workspace: result.workspaceSize,
        }))
    })
}

/// Queues `D = epilogue(alpha·op(A)·op(B) + beta·D)` on `stream` with `algo` (chosen for
/// `p` by [`heuristic`] on this device).
///
/// # Safety
/// - `ptrs.a`, `ptrs.b` address matrices laid out as `p.a`, `p.b` (every element the layouts
///   reach, batches included) in live device memory of `stream`'s device that stays
///   allocated, and unwritten by other streams, until the call has run on `stream`;
/// - `ptrs.d` likewise for `p.d`, memory nothing else reads or writes meanwhile; holding
///   valid values when `beta` is not zero (cuBLASLt reads C only then);
/// - `ptrs.bias` addresses `p.d.rows` contiguous elements when `p.epilogue.has_bias()`;
/// - `ptrs.workspace` addresses `algo.workspace` bytes no other work uses meanwhile;
/// - every pointer is aligned to the problem's alignments; `alpha` and `beta` are of the
///   problem's scale type.
pub(crate) unsafe fn matmul(
    ctx: &CudaContext,
    stream: &CudaStream,
    p: &Problem,
    algo: &Algo,
    ptrs: Pointers,
    alpha: Scale,
    beta: Scale,
) -> Result<(), GpuError> {
    use lt::cublasLtMatmulDescAttributes_t as A;
    with_handle(ctx, |handle| {
        let desc = Descriptors::new(p)?;
        if p.epilogue.has_bias() {
            let bias = ptrs.bias as *const c_void;
            // SAFETY: `desc.matmul` is live; the bias pointer attribute is a device pointer
            // (`const void*`), a live local.
            unsafe { desc_attr(desc.matmul, A::CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias)? };
        }
        // SAFETY: the descriptors are live and describe `p`, for which `algo` was chosen on
        // this device; the memory behind every pointer is as this function's contract
        // requires until the call has run on `stream`; `alpha` and `beta` point to host
        // values of the scale type (host pointer mode, read before the call returns, also
        // when a graph captures it). C is D (one layout, in place), which cuBLASLt allows.
        unsafe {
            lt::cublasLtMatmul(
                handle,
                desc.matmul,
                alpha.ptr(),
                ptrs.a as *const c_void,
                desc.a,
                ptrs.b as *const c_void,
                desc.b,
                beta.ptr(),
                ptrs.d as *const c_void,
                desc.d,
                ptrs.d as *mut c_void,
                desc.d,
                &algo.algo,
                ptrs.workspace as *mut c_void,
                algo.workspace,
                stream.cu_stream() as lt::cudaStream_t,
            )
        }
        .call("cublasLtMatmul")
    })
}
