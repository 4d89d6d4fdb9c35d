//! The recorded events ([`TraceEvent`]) and the bounded ring that keeps them ([`Recorder`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::backtrace::capture_frames;
pub use super::backtrace::Frame;
use super::label::current_label;
use crate::storage::source::StreamId;

/// What happened, in the words of PyTorch's `TraceEntry` (`torch.cuda.memory._snapshot()`'s
/// `device_traces`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TraceAction {
    /// A block was handed out (`size`: the bytes asked for).
    Alloc,
    /// The user gave a block back (`size`: the bytes it was asked for). It may still wait
    /// for events on streams it was used on.
    FreeRequested,
    /// A given-back block is back in its pool, reusable.
    FreeCompleted,
    /// A segment was taken from the memory source (`cudaMalloc`).
    SegmentAlloc,
    /// A segment went back to the memory source (`cudaFree`).
    SegmentFree,
    /// A request failed with out-of-memory after every recovery step (`size`: the rounded
    /// request; `addr` is 0).
    Oom {
        /// Free bytes the source reported (0 when it reports none): PyTorch's `device_free`.
        device_free: usize,
    },
    /// The cache was emptied (`empty_cache`; `size`: the reserved but unallocated bytes
    /// before it, `addr` is 0).
    EmptyCache,
}

impl TraceAction {
    /// PyTorch's name for the action (`"alloc"`, `"free_requested"`, ...).
    pub fn torch_name(&self) -> &'static str {
        match self {
            TraceAction::Alloc => "alloc",
            TraceAction::FreeRequested => "free_requested",
            TraceAction::FreeCompleted => "free_completed",
            TraceAction::SegmentAlloc => "segment_alloc",
            TraceAction::SegmentFree => "segment_free",
            TraceAction::Oom { .. } => "oom",
            TraceAction::EmptyCache => "empty_cache",
        }
    }
}

/// One allocator event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// What happened.
    pub action: TraceAction,
    /// Block or segment address (0 for [`TraceAction::Oom`] and [`TraceAction::EmptyCache`]).
    pub addr: u64,
    /// Bytes (see each [`TraceAction`] for which).
    pub size: usize,
    /// The block's or segment's stream (for an out-of-memory, the request's).
    pub stream: StreamId,
    /// Microseconds since the Unix epoch (PyTorch's `time_us`).
    pub time_us: u64,
    /// The caller's label ([`with_alloc_label`](super::with_alloc_label)) when it happened.
    pub label: Option<Arc<str>>,
    /// The call stack, innermost first, when backtraces are recorded; empty otherwise.
    pub frames: Arc<[Frame]>,
}

/// How to record: the ring's size and whether to capture call stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistorySettings {
    /// The most events kept; older ones are dropped first (PyTorch's `max_entries`). 0 keeps
    /// none.
    pub max_entries: usize,
    /// Whether each event captures the call stack (`std::backtrace`): slow, microseconds
    /// per event, but the plots and PyTorch's viewer then show where memory was allocated.
    pub backtraces: bool,
}

impl HistorySettings {
    /// The ring size PyTorch uses by default.
    pub const DEFAULT_MAX_ENTRIES: usize = 100_000;

    /// Keep the last `max_entries` events, without call stacks.
    pub fn new(max_entries: usize) -> Self {
        Self {
            max_entries,
            backtraces: false,
        }
    }

    /// The same, with call stacks captured or not.
    pub fn with_backtraces(mut self, backtraces: bool) -> Self {
        self.backtraces = backtraces;
        self
    }
}

impl Default for HistorySettings {
    fn default() -> Self {
        Self::new(Self::DEFAULT_MAX_ENTRIES)
    }
}

/// The bounded ring of events of one allocator, kept under the allocator's lock.
///
/// Invariant: `events.len() <= settings.max_entries`; `dropped` counts the events pushed out.
#[derive(Debug)]
pub(crate) struct Recorder {
    settings: HistorySettings,
    events: VecDeque<TraceEvent>,
    dropped: u64,
    no_frames: Arc<[Frame]>,
}

impl Recorder {
    pub(crate) fn new(settings: HistorySettings) -> Self {
        Self {
            settings,
            // Grown on demand: a large `max_entries` costs nothing until it fills.
            events: VecDeque::new(),
            dropped: 0,
            no_frames: Arc::from(Vec::new()),
        }
    }

    /// Records one event, with the thread's label, the time and (if asked) the call stack.
    pub(crate) fn push(&mut self, action: TraceAction, addr: u64, size: usize, stream: StreamId) {
        if self.settings.max_entries == 0 {
            self.dropped += 1;
            return;
        }
        if self.events.len() >= self.settings.max_entries {
            self.events.pop_front();
            self.dropped += 1;
        }
        let frames = if self.settings.backtraces {
            capture_frames()
        } else {
            Arc::clone(&self.no_frames)
        };
        self.events.push_back(TraceEvent {
            action,
            addr,
            size,
            stream,
            time_us: now_us(),
            label: current_label(),
            frames,
        });
    }

    pub(crate) fn settings(&self) -> HistorySettings {
        self.settings
    }

    /// The events in the order they happened.
    pub(crate) fn events(&self) -> Vec<TraceEvent> {
        self.events.iter().cloned().collect()
    }

    /// Events dropped because the ring was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// Microseconds since the Unix epoch (0 if the clock is before it; saturating far after).
fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Records an event if recording is on: the one branch recording costs when it is off.
#[inline]
pub(crate) fn record(
    recorder: &mut Option<Box<Recorder>>,
    action: TraceAction,
    addr: u64,
    size: usize,
    stream: StreamId,
) {
    if let Some(r) = recorder {
        r.push(action, addr, size, stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_events() {
        let mut r = Recorder::new(HistorySettings::new(3));
        for i in 0..5u64 {
            r.push(TraceAction::Alloc, i, 1, StreamId(0));
        }
        let addrs: Vec<u64> = r.events().iter().map(|e| e.addr).collect();
        assert_eq!(addrs, [2, 3, 4]);
        assert_eq!(r.dropped(), 2);
        let mut none = Recorder::new(HistorySettings::new(0));
        none.push(TraceAction::Alloc, 1, 1, StreamId(0));
        assert!(none.events().is_empty());
        assert_eq!(none.dropped(), 1);
    }
}
