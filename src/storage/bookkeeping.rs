//! The statistics and error-slot methods of [`DeviceAllocator`](super::DeviceAllocator),
//! written once for every allocator of this module.

/// The `DeviceAllocator` methods `stats`, `reset_peak_stats`, `record_err` and `check_err`,
/// for an allocator whose `state: Mutex<_>` field holds `stats: AllocatorStats` and
/// `error: Option<AllocError>`: `record_err` keeps the first error (later ones are usually
/// its consequences) until `check_err` takes it (cudarc's pattern).
macro_rules! stats_and_error_methods {
    () => {
        fn stats(&self) -> $crate::storage::allocator::AllocatorStats {
            $crate::storage::locking::lock(&self.state).stats.clone()
        }

        fn reset_peak_stats(&self) {
            $crate::storage::locking::lock(&self.state)
                .stats
                .reset_peaks();
        }

        fn record_err(&self, err: $crate::error::AllocError) {
            $crate::storage::locking::lock(&self.state)
                .error
                .get_or_insert(err);
        }

        fn check_err(&self) -> Result<(), $crate::error::AllocError> {
            $crate::storage::locking::lock(&self.state)
                .error
                .take()
                .map_or(Ok(()), Err)
        }
    };
}

pub(crate) use stats_and_error_methods;
