//! Kernel launches (the GPU engine's one way onto a stream).

use std::ffi::c_void;

use cudarc::driver::result;
use cudarc::driver::sys;
use cudarc::driver::{CudaFunction, CudaStream};

use super::context::bind;
use super::CallName;
use crate::error::GpuError;

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
