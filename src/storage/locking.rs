//! Mutex access that survives poisoning.
//!
//! Allocator state is only changed by code that does not panic while holding the lock, so a
//! poisoned mutex (a panic in a user callback on another thread, or a test assertion) still
//! guards consistent state; recovering it keeps `Drop` and later calls from panicking.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, recovering the guard if another thread panicked while holding it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The value behind `mutex` through `&mut`, recovering it if poisoned (for `Drop`).
pub(crate) fn get_mut<T>(mutex: &mut Mutex<T>) -> &mut T {
    mutex.get_mut().unwrap_or_else(PoisonError::into_inner)
}
