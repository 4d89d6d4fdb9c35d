// The allocator contract is what the crate's memsets, copies and kernels trust, so an
// allocator can only be written with `unsafe impl` (a safe one could hand an address out
// twice).
use typestate_tensor::error::AllocError;
use typestate_tensor::storage::{
    AllocatorStats, Block, DeviceAllocator, MemoryLocation, StreamId,
};

struct Twice;

impl DeviceAllocator for Twice {
    fn name(&self) -> &'static str {
        "twice"
    }
    fn memory_location(&self) -> MemoryLocation {
        MemoryLocation::Device { ordinal: 0 }
    }
    fn allocate(&self, _bytes: usize, _stream: StreamId) -> Result<Block, AllocError> {
        unimplemented!()
    }
    fn free(&self, _block: Block) -> Result<(), AllocError> {
        Ok(())
    }
    fn free_direct(&self, _block: Block) -> Result<(), AllocError> {
        Ok(())
    }
    fn record_stream(&self, _block: &Block, _stream: StreamId) -> Result<(), AllocError> {
        Ok(())
    }
    fn empty_cache(&self) -> Result<(), AllocError> {
        Ok(())
    }
    fn stats(&self) -> AllocatorStats {
        AllocatorStats::default()
    }
    fn reset_peak_stats(&self) {}
}

fn main() {}
