// A `Block` has one owner: it cannot be cloned, so it cannot be freed twice.
use typestate_tensor::storage::{CachingAllocator, DeviceAllocator, HostMemorySource, StreamId};

fn main() {
    let a = CachingAllocator::new(HostMemorySource::new(1 << 20));
    let block = a.allocate(512, StreamId(0)).unwrap();
    let copy = block.clone();
    a.free(block).unwrap();
    a.free(copy).unwrap();
}
