//! The allocator suites of `tests/it/common` on real memory: the caching and pooled allocators
//! over `cuMemAlloc` device memory, the caching host allocator over pinned host memory, with
//! real CUDA streams and events. Skips with a printed line when no GPU is present.
//!
//! The suites name streams by small numbers; [`RealStreams`] maps each to a CUDA stream it
//! owns, records real events there, and completes a stream by synchronizing it. The suites
//! inspect block states right after a free (before the allocator polls any event), so idle
//! streams, whose events complete at once, check the same rules as the simulated ones.
//! (Blocking streams with host callbacks to hold events was tried and dropped: `cuMemFree`
//! synchronizes the device, and the driver may serialize host callbacks, so gates deadlock.)

use std::sync::Arc;

use crate::common::{SuiteSource, MIB};
use typestate_tensor::gpu::{DeviceMemorySource, Event, Gpu, PinnedHostSource, Stream};
use typestate_tensor::storage::{MemoryLocation, MemorySource, SourceError, StreamId};

/// Test streams per source: the suites name streams 0 to 4.
const STREAMS: usize = 5;

fn gpu_available() -> bool {
    Gpu::available()
}

/// How the suite reaches the memory a source hands out.
#[derive(Clone, Copy)]
enum Access {
    Device,
    Host,
}

/// A real memory source whose stream numbers name real CUDA streams.
struct RealStreams<S> {
    inner: S,
    access: Access,
    streams: Vec<Stream>,
    gpu: Gpu,
}

impl<S: MemorySource<Event = Event>> RealStreams<S> {
    fn new(gpu: &Gpu, inner: S, access: Access) -> RealStreams<S> {
        let streams = (0..STREAMS)
            .map(|_| gpu.new_stream().expect("new stream"))
            .collect();
        RealStreams {
            inner,
            access,
            streams,
            gpu: gpu.clone(),
        }
    }

    fn stream(&self, id: StreamId) -> &Stream {
        &self.streams[usize::try_from(id.0).expect("small stream id") % STREAMS]
    }
}

// SAFETY: regions, their location, event queries and synchronization are the inner
// source's, which upholds the contract; events are recorded on real streams of the same
// context (the inner source records on the stream id given), and `synchronize` waits for
// every stream of the context, these included.
unsafe impl<S: MemorySource<Event = Event>> MemorySource for RealStreams<S> {
    type Event = Event;

    fn name(&self) -> String {
        self.inner.name()
    }

    fn location(&self) -> MemoryLocation {
        self.inner.location()
    }

    fn allocate(&self, bytes: usize) -> Result<u64, SourceError> {
        self.inner.allocate(bytes)
    }

    unsafe fn free(&self, addr: u64, bytes: usize) -> Result<(), SourceError> {
        // SAFETY: forwarded unchanged; the caller upholds `free`'s contract.
        unsafe { self.inner.free(addr, bytes) }
    }

    fn record_event(&self, stream: StreamId) -> Result<Event, SourceError> {
        self.inner.record_event(self.stream(stream).id())
    }

    fn event_completed(&self, event: &Event) -> Result<bool, SourceError> {
        self.inner.event_completed(event)
    }

    fn synchronize(&self) -> Result<(), SourceError> {
        self.inner.synchronize()
    }

    fn mem_info(&self) -> Option<(usize, usize)> {
        self.inner.mem_info()
    }
}

impl<S: MemorySource<Event = Event>> SuiteSource for RealStreams<S> {
    fn suite_write(&self, addr: u64, data: &[u8]) {
        match self.access {
            Access::Device => {
                self.gpu.synchronize().expect("bind and synchronize");
                // SAFETY: `[addr, addr + len)` lies in device memory an allocator handed
                // out from this source and the suite still holds; the copy is synchronous.
                unsafe { cudarc::driver::result::memcpy_htod_sync(addr, data) }
                    .expect("cuMemcpyHtoD");
            }
            // SAFETY: `[addr, addr + len)` lies in a live pinned host region the suite holds,
            // and no copy uses it (pinned host memory is ordinary CPU memory).
            Access::Host => unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len())
            },
        }
    }

    fn suite_read(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        match self.access {
            Access::Device => {
                self.gpu.synchronize().expect("bind and synchronize");
                // SAFETY: as in `suite_write`, reading instead.
                unsafe { cudarc::driver::result::memcpy_dtoh_sync(&mut out, addr) }
                    .expect("cuMemcpyDtoH");
            }
            // SAFETY: as in `suite_write`, reading instead.
            Access::Host => unsafe {
                std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), len)
            },
        }
        out
    }

    fn suite_complete(&self, stream: StreamId) {
        self.stream(stream)
            .synchronize()
            .expect("stream synchronize");
    }

    fn suite_live(&self) -> Option<(usize, usize)> {
        None
    }

    fn suite_clock(&self, _stream: StreamId) -> Option<(u64, u64)> {
        None
    }
}

fn gpu() -> Gpu {
    Gpu::new(0).expect("a GPU is present")
}

fn device_source() -> RealStreams<DeviceMemorySource> {
    let gpu = gpu();
    RealStreams::new(&gpu, gpu.device_memory_source(), Access::Device)
}

fn pinned_source() -> RealStreams<Arc<PinnedHostSource>> {
    let gpu = gpu();
    RealStreams::new(&gpu, Arc::clone(gpu.pinned_source()), Access::Host)
}

mod device_caching {
    use super::*;
    crate::common::caching_suite::caching_suite_tests!(device_source, skip_unless: gpu_available);
}

mod device_pooled {
    use super::*;
    crate::common::pooled_suite::pooled_suite_tests!(device_source, skip_unless: gpu_available);
}

mod pinned_host {
    use super::*;
    crate::common::host_suite::host_suite_tests!(pinned_source, skip_unless: gpu_available);
}

#[test]
fn device_caching_stress_with_contents_checked() {
    if !gpu_available() {
        eprintln!("skipping: no CUDA driver");
        return;
    }
    let a = Arc::new(typestate_tensor::storage::CachingAllocator::new(
        device_source(),
    ));
    crate::common::stress::stress(a, 4, 300, 3 * MIB);
}
