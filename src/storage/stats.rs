//! What an allocator holds and has done ([`AllocatorStats`], PyTorch's `memory_stats`), and
//! the accounting rules every allocator follows.
//!
//! A leaf of `storage/`: the allocator trait, the snapshots, the history and the failure
//! paths all name these types, so they live below all of them.

/// Current and peak value of a statistic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Now.
    pub current: usize,
    /// Highest since creation or the last
    /// [`DeviceAllocator::reset_peak_stats`](super::DeviceAllocator::reset_peak_stats).
    pub peak: usize,
}

impl Stat {
    /// Adds `n` to the current value and raises the peak to match.
    pub fn increase(&mut self, n: usize) {
        self.current = self.current.saturating_add(n);
        self.peak = self.peak.max(self.current);
    }

    /// Subtracts `n` from the current value.
    ///
    /// Saturates at zero rather than panicking: a broken count must not take the program
    /// down (debug builds assert the count stays consistent).
    pub fn decrease(&mut self, n: usize) {
        debug_assert!(self.current >= n, "statistic would go negative");
        self.current = self.current.saturating_sub(n);
    }

    /// Sets the peak to the current value.
    pub fn reset_peak(&mut self) {
        self.peak = self.current;
    }
}

/// What an allocator holds and has done (PyTorch's `memory_stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    /// Bytes in blocks handed out to users (rounded sizes).
    pub allocated_bytes: Stat,
    /// Bytes the allocator holds from its source (segments).
    pub reserved_bytes: Stat,
    /// Bytes in blocks that are handed out or waiting on stream events.
    pub active_bytes: Stat,
    /// Bytes users asked for (before rounding).
    pub requested_bytes: Stat,
    /// Segments held from the source.
    pub segments: Stat,
    /// Blocks handed out.
    pub allocations: Stat,
    /// Allocation requests served since creation.
    pub num_allocs: u64,
    /// Times an allocation freed cached memory and retried.
    pub num_alloc_retries: u64,
    /// Allocations that failed with out-of-memory after every recovery step.
    pub num_ooms: u64,
    /// Segments returned to the source.
    pub num_segment_frees: u64,
}

impl AllocatorStats {
    /// Reserved bytes not handed out to users: the cache (PyTorch's "reserved but
    /// unallocated").
    pub fn cached_bytes(&self) -> usize {
        self.reserved_bytes
            .current
            .saturating_sub(self.allocated_bytes.current)
    }

    /// Sets every peak to its current value.
    pub fn reset_peaks(&mut self) {
        for stat in [
            &mut self.allocated_bytes,
            &mut self.reserved_bytes,
            &mut self.active_bytes,
            &mut self.requested_bytes,
            &mut self.segments,
            &mut self.allocations,
        ] {
            stat.reset_peak();
        }
    }

    /// Zeroes the event counters (`num_allocs`, `num_alloc_retries`, `num_ooms`,
    /// `num_segment_frees`); current values and peaks are untouched (PyTorch's
    /// `reset_accumulated_memory_stats`).
    pub fn reset_counters(&mut self) {
        self.num_allocs = 0;
        self.num_alloc_retries = 0;
        self.num_ooms = 0;
        self.num_segment_frees = 0;
    }

    // The accounting rules every allocator follows, one place each. A block counts as
    // allocated while handed out, as active until it is back in a pool (so also while
    // awaiting events), and a segment as reserved while held from the source.

    /// A segment of `size` bytes was taken from the source.
    #[inline]
    pub(crate) fn segment_added(&mut self, size: usize) {
        self.segments.increase(1);
        self.reserved_bytes.increase(size);
    }

    /// A segment of `size` bytes went back to the source.
    #[inline]
    pub(crate) fn segment_released(&mut self, size: usize) {
        self.segments.decrease(1);
        self.reserved_bytes.decrease(size);
        self.num_segment_frees += 1;
    }

    /// A block of `size` bytes was handed out for a request of `requested` bytes.
    #[inline]
    pub(crate) fn block_handed_out(&mut self, size: usize, requested: usize) {
        self.num_allocs += 1;
        self.allocations.increase(1);
        self.allocated_bytes.increase(size);
        self.active_bytes.increase(size);
        self.requested_bytes.increase(requested);
    }

    /// The user gave a block of `size` bytes back (it may still await events).
    #[inline]
    pub(crate) fn block_given_back(&mut self, size: usize) {
        self.allocations.decrease(1);
        self.allocated_bytes.decrease(size);
    }

    /// A given-back block of `size` bytes, once `requested`, is back in a pool (or gone).
    #[inline]
    pub(crate) fn block_inactive(&mut self, size: usize, requested: usize) {
        self.active_bytes.decrease(size);
        self.requested_bytes.decrease(requested);
    }
}
