//! [`MemoryLocation`]: where a block of memory lives. A base type (it names places, not
//! allocators) so that [`crate::error`] can carry it without importing `storage`; the public
//! path stays `storage::MemoryLocation`.

/// Where the memory of a [`MemorySource`](crate::storage::MemorySource) or a
/// [`DeviceAllocator`](crate::storage::DeviceAllocator) lives, and so which code may touch
/// it: kernels and copies of one GPU, or the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryLocation {
    /// Device memory of the GPU with this ordinal (`cuMemAlloc`, `cuMemAllocAsync`).
    Device {
        /// The GPU's ordinal.
        ordinal: usize,
    },
    /// Ordinary (pageable) host memory, such as [`HostMemorySource`]'s.
    ///
    /// [`HostMemorySource`]: crate::storage::HostMemorySource
    Host,
    /// Page-locked host memory registered with the CUDA driver (`cuMemHostAlloc`): readable
    /// by the CPU and a legal end of asynchronous copies to or from any GPU.
    PinnedHost,
}

impl std::fmt::Display for MemoryLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemoryLocation::Device { ordinal } => write!(f, "device memory of GPU {ordinal}"),
            MemoryLocation::Host => f.write_str("pageable host memory"),
            MemoryLocation::PinnedHost => f.write_str("pinned host memory"),
        }
    }
}
