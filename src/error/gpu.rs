//! [`GpuError`]: the errors of the CUDA driver, NVRTC, streams, graph capture and the kernel
//! cache (the GPU runtime and the GPU engine), which `?` turns into
//! [`Error::Gpu`](super::Error::Gpu).

use super::alloc::AllocError;

/// Errors from the CUDA driver, NVRTC, or a missing GPU.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// No CUDA driver library (libcuda) could be loaded on this machine.
    #[error(
        "no CUDA driver found (libcuda could not be loaded): this machine has no usable NVIDIA GPU"
    )]
    NoDriver,
    /// NVRTC (libnvrtc) could not be loaded.
    #[error("NVRTC (libnvrtc) could not be loaded: install the CUDA toolkit's runtime compiler")]
    NoNvrtc,
    /// The device ordinal does not exist.
    #[error("GPU {ordinal} does not exist ({count} device(s) present)")]
    NoSuchDevice {
        /// Ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver call {call} failed: {message}")]
    Driver {
        /// The driver call.
        call: &'static str,
        /// The driver's error name and string.
        message: String,
    },
    /// NVRTC failed to compile a kernel.
    #[error("NVRTC failed to compile kernel {kernel} (options {options:?}):\n{log}")]
    Compile {
        /// The kernel's name.
        kernel: String,
        /// Options passed to NVRTC.
        options: Vec<String>,
        /// NVRTC's log.
        log: String,
    },
    /// The device allocator's configuration (`TYPESTATE_TENSOR_ALLOC_CONF` or
    /// `TYPESTATE_TENSOR_POOL_CONF`) is invalid.
    #[error("invalid GPU allocator configuration: {0}")]
    AllocatorConfig(AllocError),
    /// Two tensors in one op live on different GPUs.
    #[error("{op}: operands live on GPU {lhs} and GPU {rhs}")]
    DeviceMismatch {
        /// The operation.
        op: &'static str,
        /// One ordinal.
        lhs: usize,
        /// The other.
        rhs: usize,
    },
    /// A device allocator of one GPU was given to build a [`Gpu`](crate::gpu::Gpu) of
    /// another ([`Gpu::with_allocator`](crate::gpu::Gpu::with_allocator)).
    #[error("{op}: the {allocator} allocator belongs to GPU {allocator_ordinal}, not GPU {ordinal}; build one over `DeviceMemorySource::new({ordinal})` (or `gpu.device_memory_source()`)")]
    AllocatorOfAnotherGpu {
        /// The operation.
        op: &'static str,
        /// The GPU being built.
        ordinal: usize,
        /// The GPU whose memory the allocator hands out.
        allocator_ordinal: usize,
        /// The allocator's [`name`](crate::storage::DeviceAllocator::name).
        allocator: &'static str,
    },
    /// A device allocator whose memory is not device memory (pageable or pinned host
    /// memory) was given where a GPU's allocator was expected.
    #[error("{op}: the {allocator} allocator hands out {location}, not device memory of GPU {ordinal}; build it over `DeviceMemorySource::new({ordinal})` (or `gpu.device_memory_source()`)")]
    AllocatorNotOnDevice {
        /// The operation.
        op: &'static str,
        /// The GPU the allocator was meant for.
        ordinal: usize,
        /// The allocator's [`name`](crate::storage::DeviceAllocator::name).
        allocator: &'static str,
        /// Where its memory lives, as it reports.
        location: crate::memory_location::MemoryLocation,
    },
    /// An op's name or CUDA expression is not one the kernel generator accepts (see
    /// `check_op_source`); nothing was compiled.
    #[error(
        "op `{op}` cannot be compiled: {reason}; pointwise ops come from the crate's op table"
    )]
    UntrustedOp {
        /// The op's name, escaped.
        op: String,
        /// What is wrong.
        reason: String,
    },
    /// A call that cannot be recorded into a CUDA graph was made while the calling thread
    /// captures one ([`Gpu::capture`](crate::gpu::Gpu::capture)): a host copy, a
    /// synchronisation, another stream, or a buffer the graph would reach without holding
    /// it. Nothing was queued; the capture fails with this error, ends and is discarded, and
    /// the stream stays usable.
    #[error("{op} cannot be captured into a CUDA graph: {reason}")]
    NotCapturable {
        /// The operation.
        op: &'static str,
        /// Why, and what to do instead.
        reason: &'static str,
    },
    /// Another thread is capturing a CUDA graph on this stream (or owns the buffer's
    /// capture): the call would be recorded into that graph. Nothing was queued.
    #[error("{op}: another thread is capturing a CUDA graph on this stream or buffer; wait until its `Gpu::capture` returns")]
    CaptureInProgress {
        /// The operation.
        op: &'static str,
    },
    /// The buffer was allocated inside a CUDA graph capture that failed (the closure's
    /// error, a refused call, a driver error): the work that would have written it never
    /// ran, so it cannot be read or written. Drop it.
    #[error("{op}: this buffer was allocated inside a CUDA graph capture that failed, so its contents were never computed; drop it")]
    CaptureFailed {
        /// The operation.
        op: &'static str,
    },
    /// Tensors allocated during a capture are alive outside its outputs (sent away or
    /// stashed by the closure): replays would overwrite them, so the graph was discarded.
    #[error("{escaped} buffer(s) allocated during the CUDA graph capture outlive it outside the closure's outputs; return them as outputs or drop them inside the closure")]
    CaptureEscape {
        /// Buffers of the capture's private pool alive besides the outputs.
        escaped: usize,
    },
    /// An environment variable that picks how copies between GPUs go
    /// (`TYPESTATE_TENSOR_PEER_PATH`) holds a value it does not know.
    #[error("invalid {var}={value:?}: expected `auto` (peer-to-peer where the GPUs allow it) or `staged` (always through pinned host memory)")]
    InvalidPeerPath {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// A kernel key names another compute capability than the device it is loaded on (the
    /// kernel cache's load step): the image built for the key would not run there. Nothing
    /// was loaded.
    #[error("kernel {kernel} is keyed for compute capability {}.{} but GPU {ordinal} has {}.{}", key.0, key.1, device.0, device.1)]
    ArchMismatch {
        /// The kernel's entry point.
        kernel: String,
        /// The GPU it was to be loaded on.
        ordinal: usize,
        /// `(major, minor)` in the key.
        key: (u32, u32),
        /// `(major, minor)` of the device.
        device: (u32, u32),
    },
    /// cuBLASLt (libcublasLt), which the GPU matmul calls, could not be loaded (issue 27).
    /// Nothing was queued.
    #[error("cuBLASLt (libcublasLt) could not be loaded: none of {tried:?} is on the library path; put the folder holding it on LD_LIBRARY_PATH (PyTorch's CUDA 13 wheels ship it as `nvidia/cu13/lib/libcublasLt.so.13`, older ones in `nvidia/cublas/lib/`; `bash scripts/cublaslt-lib.sh` prints the folder)")]
    NoCublasLt {
        /// The file names looked for, in order.
        tried: Vec<String>,
    },
    /// A cuBLASLt call failed (issue 27).
    #[error("cuBLASLt call {call} failed: {message}")]
    Cublas {
        /// The cuBLASLt call.
        call: &'static str,
        /// The status name, and what was asked.
        message: String,
    },
}
