//! The allocator suites of `tests/common` on real memory: the caching and pooled allocators
//! over `cuMemAlloc` device memory, the caching host allocator over pinned host memory, with
//! real CUDA streams and events. Skips with a printed line when no GPU is present.
//!
//! The suites expect an event to stay incomplete until the test says its stream is done
//! (`suite_complete`), as `HostMemorySource` does. Idle CUDA streams would complete every
//! event at once, so each test stream is *gated*: a host function queued on it
//! (`cuLaunchHostFunc`) blocks until the gate opens, and every event recorded behind it stays
//! incomplete until then. `suite_complete` opens the gate, waits for the stream and queues a
//! new gate; `synchronize` (which the allocators call before returning memory to the driver)
//! opens every gate first, so nothing can deadlock.

mod common;

use std::ffi::c_void;
use std::sync::{Arc, Condvar, Mutex};

use common::{SuiteSource, MIB};
use typestate_tensor::gpu::{DeviceMemorySource, Event, Gpu, PinnedHostSource, Stream};
use typestate_tensor::storage::{MemorySource, SourceError, StreamId};

/// Test streams per source: the suites name streams 0 to 4.
const STREAMS: usize = 5;

fn gpu_available() -> bool {
    Gpu::available()
}

/// Opens once its generation reaches the number a blocker waits for.
#[derive(Default)]
struct Gate {
    opened: Mutex<u64>,
    changed: Condvar,
}

/// What a queued blocker owns: its gate and the generation it waits for.
struct Blocker {
    gate: Arc<Gate>,
    until: u64,
}

unsafe extern "C" fn wait_for_gate(arg: *mut c_void) {
    // SAFETY: `arg` is the `Box<Blocker>` leaked by `Gated::arm`, handed to exactly one
    // callback, which takes it back here once.
    let blocker = unsafe { Box::from_raw(arg.cast::<Blocker>()) };
    let mut opened = blocker
        .gate
        .opened
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    while *opened < blocker.until {
        opened = blocker
            .gate
            .changed
            .wait(opened)
            .unwrap_or_else(|e| e.into_inner());
    }
}

/// How the suite reaches the memory a source hands out.
#[derive(Clone, Copy)]
enum Access {
    Device,
    Host,
}

/// A real memory source whose test streams hold their events until the suite completes them.
struct Gated<S> {
    inner: S,
    access: Access,
    streams: Vec<(Stream, Arc<Gate>)>,
    gpu: Gpu,
}

impl<S: MemorySource<Event = Event>> Gated<S> {
    fn new(gpu: &Gpu, inner: S, access: Access) -> Gated<S> {
        let streams = (0..STREAMS)
            .map(|_| (gpu.new_stream().expect("new stream"), Arc::default()))
            .collect();
        let gated = Gated {
            inner,
            access,
            streams,
            gpu: gpu.clone(),
        };
        for k in 0..STREAMS {
            gated.arm(k);
        }
        gated
    }

    fn stream(&self, id: StreamId) -> &(Stream, Arc<Gate>) {
        &self.streams[usize::try_from(id.0).expect("small stream id") % STREAMS]
    }

    /// Queues a blocker on stream `k` that waits for the gate's next generation.
    fn arm(&self, k: usize) {
        let (stream, gate) = &self.streams[k];
        let until = *gate.opened.lock().unwrap() + 1;
        let blocker = Box::into_raw(Box::new(Blocker {
            gate: Arc::clone(gate),
            until,
        }));
        // SAFETY: the stream handle is live (owned by `self.streams`); the callback only
        // waits on a condvar (it calls no CUDA API, as cuLaunchHostFunc requires) and owns
        // the leaked box it receives.
        let result = unsafe {
            cudarc::driver::result::stream::launch_host_function(
                stream.id().0 as cudarc::driver::sys::CUstream,
                wait_for_gate,
                blocker.cast::<c_void>(),
            )
        };
        result.expect("cuLaunchHostFunc");
    }

    fn open(&self, k: usize) {
        let (stream, gate) = &self.streams[k];
        *gate.opened.lock().unwrap() += 1;
        gate.changed.notify_all();
        stream.synchronize().expect("stream synchronize");
    }
}

impl<S> Drop for Gated<S> {
    fn drop(&mut self) {
        for (stream, gate) in &self.streams {
            *gate.opened.lock().unwrap_or_else(|e| e.into_inner()) = u64::MAX;
            gate.changed.notify_all();
            let _ = stream.synchronize();
        }
    }
}

impl<S: MemorySource<Event = Event>> MemorySource for Gated<S> {
    type Event = Event;

    fn name(&self) -> String {
        self.inner.name()
    }

    fn allocate(&self, bytes: usize) -> Result<u64, SourceError> {
        self.inner.allocate(bytes)
    }

    unsafe fn free(&self, addr: u64, bytes: usize) -> Result<(), SourceError> {
        // SAFETY: forwarded unchanged; the caller upholds `free`'s contract.
        unsafe { self.inner.free(addr, bytes) }
    }

    fn record_event(&self, stream: StreamId) -> Result<Event, SourceError> {
        self.inner.record_event(self.stream(stream).0.id())
    }

    fn event_completed(&self, event: &Event) -> Result<bool, SourceError> {
        self.inner.event_completed(event)
    }

    fn synchronize(&self) -> Result<(), SourceError> {
        for k in 0..STREAMS {
            self.open(k);
        }
        let done = self.inner.synchronize();
        for k in 0..STREAMS {
            self.arm(k);
        }
        done
    }

    fn mem_info(&self) -> Option<(usize, usize)> {
        self.inner.mem_info()
    }
}

impl<S: MemorySource<Event = Event>> SuiteSource for Gated<S> {
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
        let k = usize::try_from(stream.0).expect("small stream id") % STREAMS;
        self.open(k);
        self.arm(k);
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

fn device_source() -> Gated<DeviceMemorySource> {
    let gpu = gpu();
    Gated::new(&gpu, gpu.device_memory_source(), Access::Device)
}

fn pinned_source() -> Gated<Arc<PinnedHostSource>> {
    let gpu = gpu();
    Gated::new(&gpu, Arc::clone(gpu.pinned_source()), Access::Host)
}

mod device_caching {
    use super::*;
    common::caching_suite::caching_suite_tests!(device_source, skip_unless: gpu_available);
}

mod device_pooled {
    use super::*;
    common::pooled_suite::pooled_suite_tests!(device_source, skip_unless: gpu_available);
}

mod pinned_host {
    use super::*;
    common::host_suite::host_suite_tests!(pinned_source, skip_unless: gpu_available);
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
    common::stress::stress(a, 4, 300, 3 * MIB);
}
