// Pairing a block with an allocator is `unsafe`: the block must come from that allocator
// and be owned by the caller alone, or dropping the `Allocation` frees memory someone else
// uses.
use std::sync::Arc;

use typestate_tensor::storage::{
    Allocation, CachingAllocator, DeviceAllocator, HostMemorySource, NaiveAllocator, StreamId,
};

fn main() {
    let a: Arc<dyn DeviceAllocator> = Arc::new(CachingAllocator::new(HostMemorySource::new(1 << 20)));
    let b: Arc<dyn DeviceAllocator> = Arc::new(NaiveAllocator::new(HostMemorySource::new(1 << 20)));
    let block = a.allocate(512, StreamId(0)).unwrap();
    let _wrong_owner = Allocation::from_block(block, b);
}
