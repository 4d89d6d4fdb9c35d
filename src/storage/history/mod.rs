//! What memory did: a bounded history of allocator events, exported for PyTorch's memory
//! viewer and drawn as SVG plots.
//!
//! PyTorch users debug memory with `torch.cuda.memory._record_memory_history()`, `_snapshot()`
//! and the viewer at <https://pytorch.org/memory_viz>. The [`CachingAllocator`] does the
//! same here:
//!
//! 1. **Record.** [`CachingAllocator::record_history`] (or
//!    [`DeviceAllocator::record_history`] through `gpu.allocator()`), or the keys
//!    `record_history:<max entries>` and `record_backtraces:True` of
//!    `TYPESTATE_TENSOR_ALLOC_CONF`, start a ring of the last `max_entries` events:
//!    allocations, frees (requested and completed), segments taken from and returned to the
//!    source, out-of-memory failures and cache flushes, each with its time, address, size,
//!    stream, the caller's label ([`with_alloc_label`], [`AllocLabel`]) and, when asked, the
//!    call stack. Off, it costs one branch per event.
//! 2. **Take the history.** [`CachingAllocator::history`] returns a [`MemoryHistory`]: the
//!    segments and blocks now (the snapshot) plus the events.
//! 3. **Look.** [`MemoryHistory::write_torch_pickle`] writes the pickle PyTorch's
//!    `torch.cuda.memory._dump_snapshot` writes, which `torch/cuda/_memory_viz.py` and the
//!    web viewer open; `MemoryHistory::write_svgs` (the `plots` feature, on by default) draws
//!    memory over time and the segment map.
//!
//! ```
//! use typestate_tensor::storage::history::{with_alloc_label, HistorySettings, TraceAction};
//! use typestate_tensor::storage::{CachingAllocator, DeviceAllocator, HostMemorySource, StreamId};
//!
//! let allocator = CachingAllocator::new(HostMemorySource::new(64 << 20));
//! allocator.record_history(Some(HistorySettings::new(1000)));
//! let block = with_alloc_label("adam step", || allocator.allocate(1000, StreamId(0)))?;
//! allocator.free(block)?;
//! let history = allocator.history();
//! let actions: Vec<_> = history.events.iter().map(|e| e.action).collect();
//! assert_eq!(
//!     actions,
//!     [
//!         TraceAction::SegmentAlloc,
//!         TraceAction::Alloc,
//!         TraceAction::FreeRequested,
//!         TraceAction::FreeCompleted,
//!     ]
//! );
//! assert_eq!(history.events[1].label.as_deref(), Some("adam step"));
//! let pickle = history.to_torch_pickle(); // for torch.cuda._memory_viz
//! assert_eq!(&pickle[..2], b"\x80\x02");
//! # Ok::<(), typestate_tensor::error::AllocError>(())
//! ```
//!
//! [`CachingAllocator`]: super::CachingAllocator
//! [`CachingAllocator::record_history`]: super::CachingAllocator::record_history
//! [`CachingAllocator::history`]: super::CachingAllocator::history
//! [`DeviceAllocator::record_history`]: super::DeviceAllocator::record_history

mod backtrace;
mod label;
mod pickle;
#[cfg(feature = "plots")]
pub mod plot;
pub(crate) mod record;

pub use label::{current_alloc_label, with_alloc_label, AllocLabel};
pub use record::{Frame, HistorySettings, TraceAction, TraceEvent};

use super::snapshot::SegmentSnapshot;
use super::stats::AllocatorStats;
use crate::memory_location::MemoryLocation;

/// An allocator's segments and blocks now, plus its recorded events: what
/// `torch.cuda.memory._snapshot()` returns, typed.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryHistory {
    /// The allocator's name (`"caching"`).
    pub allocator: &'static str,
    /// Where its memory lives (the GPU's ordinal becomes the pickle's device index; host
    /// memory is device 0).
    pub location: MemoryLocation,
    /// `(free, total)` bytes of the source, if it reports them.
    pub mem_info: Option<(usize, usize)>,
    /// The statistics at the time of the history.
    pub stats: AllocatorStats,
    /// Every segment with its blocks, in address order.
    pub segments: Vec<SegmentSnapshot>,
    /// The recorded events, oldest first (empty when recording is off).
    pub events: Vec<TraceEvent>,
    /// Events pushed out of the ring because it was full.
    pub dropped_events: u64,
    /// The recording settings, `None` when recording is off.
    pub settings: Option<HistorySettings>,
}

// `to_torch_pickle` is written in `pickle.rs`, beside the encoder it drives, so that the
// encoder needs this type and this file does not need the encoder.
impl MemoryHistory {
    /// The device index of the pickle (the GPU's ordinal; 0 for host memory).
    pub fn device_index(&self) -> usize {
        match self.location {
            MemoryLocation::Device { ordinal } => ordinal,
            _ => 0,
        }
    }

    /// Writes [`to_torch_pickle`](Self::to_torch_pickle) to `path` (open it with
    /// `python -m torch.cuda._memory_viz trace_plot PATH -o out.html` or drag it into
    /// <https://pytorch.org/memory_viz>).
    pub fn write_torch_pickle(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.to_torch_pickle())
    }
}
