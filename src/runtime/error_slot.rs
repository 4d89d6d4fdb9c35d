//! Where `Drop` impls put errors they cannot return (cudarc's `record_err` / `check_err`).

use std::sync::{Mutex, PoisonError};

use crate::error::Error;

/// The first error recorded since the last [`ErrorSlot::take`]. Later errors are usually
/// consequences of the first (a sticky context error fails every later call), so only the
/// first is kept.
#[derive(Debug, Default)]
pub(crate) struct ErrorSlot(Mutex<Option<Error>>);

impl ErrorSlot {
    /// Keeps `error` unless an earlier one is waiting.
    pub(crate) fn record(&self, error: impl Into<Error>) {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(error.into());
        }
    }

    /// Takes the waiting error, leaving the slot empty.
    pub(crate) fn take(&self) -> Option<Error> {
        // Never panics while locked, so poisoning cannot happen; the data is valid anyway.
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::GpuError;

    #[test]
    fn keeps_the_first_error_until_taken() {
        let slot = ErrorSlot::default();
        assert!(slot.take().is_none());
        slot.record(GpuError::NoDriver);
        slot.record(GpuError::NoSuchDevice {
            ordinal: 3,
            count: 1,
        });
        assert!(matches!(slot.take(), Some(Error::Gpu(GpuError::NoDriver))));
        assert!(slot.take().is_none());
        slot.record(GpuError::NoSuchDevice {
            ordinal: 3,
            count: 1,
        });
        assert!(matches!(
            slot.take(),
            Some(Error::Gpu(GpuError::NoSuchDevice {
                ordinal: 3,
                count: 1
            }))
        ));
    }
}
