//! What every allocator of this module is made of, written once: its memory source and its
//! state behind one mutex ([`Guarded`]), the methods that only read or reset that state's
//! bookkeeping (statistics, the error slot, the segments), and the
//! [`DeviceAllocator`](super::DeviceAllocator) methods that forward to them
//! ([`bookkeeping_methods`]).

use std::sync::{Mutex, MutexGuard};

use super::events::EventGuarded;
use super::locking::{get_mut, lock};
use super::snapshot::SegmentSnapshot;
use super::source::{MemoryLocation, MemorySource};
use super::stats::AllocatorStats;
use crate::error::AllocError;

/// The state behind an allocator's mutex, as the shared methods see it.
pub(crate) trait Books<S: MemorySource> {
    /// The statistics.
    fn stats_mut(&mut self) -> &mut AllocatorStats;

    /// The first error `record_err` kept that `check_err` has not taken yet.
    fn error_mut(&mut self) -> &mut Option<AllocError>;

    /// Every segment with its blocks, in address order.
    fn snapshot(&self) -> Vec<SegmentSnapshot>;

    /// Returns every cached, unused region to `source`, after synchronizing it (nothing
    /// to do for an allocator that caches nothing).
    fn release_cached(&mut self, source: &S) -> Result<(), AllocError>;
}

/// An allocator's memory source and its state behind one mutex: one critical section per
/// operation, so no decision is made on state another thread may change before it acts.
///
/// Dropping it returns every cached region to the source ([`Books::release_cached`]).
/// Regions still handed out stay with the source: their owners hold raw addresses, and
/// freeing memory someone may still use is worse than leaking it.
pub(crate) struct Guarded<S: MemorySource, T: Books<S>> {
    /// Where the memory comes from.
    pub(crate) source: S,
    state: Mutex<T>,
}

impl<S: MemorySource, T: Books<S>> Guarded<S, T> {
    /// `state` over `source`.
    pub(crate) fn new(source: S, state: T) -> Self {
        Self {
            source,
            state: Mutex::new(state),
        }
    }

    /// The state, locked (surviving poisoning: see [`lock`]).
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        lock(&self.state)
    }

    /// Where the source's memory lives.
    pub(crate) fn location(&self) -> MemoryLocation {
        self.source.location()
    }

    /// Every segment with its blocks, in address order.
    pub(crate) fn snapshot(&self) -> Vec<SegmentSnapshot> {
        self.lock().snapshot()
    }

    /// A copy of the statistics.
    pub(crate) fn stats(&self) -> AllocatorStats {
        self.lock().stats_mut().clone()
    }

    /// Sets every peak to its current value.
    pub(crate) fn reset_peak_stats(&self) {
        self.lock().stats_mut().reset_peaks();
    }

    /// Keeps `err` unless an earlier error is kept (later ones are usually its
    /// consequences), until [`check_err`](Self::check_err) takes it (cudarc's pattern).
    pub(crate) fn record_err(&self, err: AllocError) {
        self.lock().error_mut().get_or_insert(err);
    }

    /// Takes the kept error, if any.
    pub(crate) fn check_err(&self) -> Result<(), AllocError> {
        self.lock().error_mut().take().map_or(Ok(()), Err)
    }

    /// Returns every cached, unused region to the source.
    pub(crate) fn release_cached(&self) -> Result<(), AllocError> {
        self.lock().release_cached(&self.source)
    }
}

impl<S: MemorySource, T: Books<S> + EventGuarded<S::Event>> Guarded<S, T> {
    /// Returns blocks whose stream events have completed to their pools now.
    pub(crate) fn process_events(&self) -> Result<(), AllocError> {
        self.lock().process_events(&self.source)
    }
}

impl<S: MemorySource, T: Books<S>> Drop for Guarded<S, T> {
    fn drop(&mut self) {
        // Nowhere to report a failure from here; the source reclaims what it can on its own
        // drop.
        let _ = get_mut(&mut self.state).release_cached(&self.source);
    }
}

/// The `DeviceAllocator` methods `memory_location`, `stats`, `reset_peak_stats`,
/// `record_err`, `check_err` and `segments`, for an allocator whose field `$field` is a
/// [`Guarded`] and whose inherent `snapshot` lists its segments.
macro_rules! bookkeeping_methods {
    ($field:ident) => {
        fn memory_location(&self) -> $crate::storage::source::MemoryLocation {
            self.$field.location()
        }

        fn stats(&self) -> $crate::storage::stats::AllocatorStats {
            self.$field.stats()
        }

        fn reset_peak_stats(&self) {
            self.$field.reset_peak_stats();
        }

        fn record_err(&self, err: $crate::error::AllocError) {
            self.$field.record_err(err);
        }

        fn check_err(&self) -> Result<(), $crate::error::AllocError> {
            self.$field.check_err()
        }

        fn segments(&self) -> Option<Vec<$crate::storage::snapshot::SegmentSnapshot>> {
            Some(self.snapshot())
        }
    };
}

pub(crate) use bookkeeping_methods;
