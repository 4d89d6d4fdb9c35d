//! A map whose values are each built once, even when threads race for the same key.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One slot per key. A slot is created under the map lock in the same critical section that
/// looks for it (no check-then-act across two lock acquisitions); the value is then built
/// under the slot's own lock, so threads asking for one key wait for a single build while
/// other keys proceed.
///
/// Unlike `OnceLock<Result<V, E>>`, a failed build leaves the slot empty: a transient error
/// (out of memory while loading a module) is retried by the next caller instead of being
/// cached forever. A build that panics also leaves the slot empty (poisoned locks are
/// recovered: their data is still consistent).
#[derive(Debug)]
pub(crate) struct OnceMap<K, V> {
    slots: Mutex<HashMap<K, Arc<Mutex<Option<V>>>>>,
}

impl<K, V> Default for OnceMap<K, V> {
    fn default() -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<K: Eq + Hash + Clone, V: Clone> OnceMap<K, V> {
    /// The value for `key`, built by `init` if no earlier call succeeded.
    pub(crate) fn get_or_try_init<E>(
        &self,
        key: &K,
        init: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        let slot = {
            let mut slots = lock(&self.slots);
            match slots.get(key) {
                Some(slot) => Arc::clone(slot),
                None => Arc::clone(slots.entry(key.clone()).or_default()),
            }
        };
        let mut value = lock(&slot);
        if let Some(v) = value.as_ref() {
            return Ok(v.clone());
        }
        let v = init()?;
        *value = Some(v.clone());
        Ok(v)
    }

    /// Keys with a slot (built or not).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.slots).len()
    }
}
