// Every allocator of the crate trusts its source for fresh, disjoint regions, so a source
// can only be written with `unsafe impl`.
use typestate_tensor::storage::{MemoryLocation, MemorySource, SourceError, StreamId};

struct SameAddress;

impl MemorySource for SameAddress {
    type Event = ();
    fn name(&self) -> String {
        "same".to_owned()
    }
    fn location(&self) -> MemoryLocation {
        MemoryLocation::Host
    }
    fn allocate(&self, _bytes: usize) -> Result<u64, SourceError> {
        Ok(0x1000)
    }
    unsafe fn free(&self, _addr: u64, _bytes: usize) -> Result<(), SourceError> {
        Ok(())
    }
    fn record_event(&self, _stream: StreamId) -> Result<(), SourceError> {
        Ok(())
    }
    fn event_completed(&self, _event: &()) -> Result<bool, SourceError> {
        Ok(true)
    }
    fn synchronize(&self) -> Result<(), SourceError> {
        Ok(())
    }
    fn mem_info(&self) -> Option<(usize, usize)> {
        None
    }
}

fn main() {}
