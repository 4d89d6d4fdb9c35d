//! The capturing thread's open capture ([`Active`]: its stream, its pool and the buffers bound
//! to it) and the checks of buffer accesses and allocations against it.
//!
//! The rules are `super::state`'s (its module docs): on the capturing thread, work may only be
//! queued on the capture stream and touch buffers bound to the capture (read-only ones only
//! read) or allocated from its pool; a buffer of a pool another thread is still capturing
//! into is refused, and one of a pool whose capture failed is refused for good. Every check
//! runs from drops too, so the thread-local is read with `try_with`.

use std::cell::RefCell;
use std::sync::Arc;

use super::pool::{GraphPool, POISONED};
use super::state::{any_open, check_owner, mark_closed, mark_open};
use crate::error::GpuError;
use crate::storage::source::StreamId;

thread_local! {
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
}

/// A buffer bound to a capture: its device address, and whether the graph may write it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BoundRange {
    pub(crate) addr: u64,
    pub(crate) writable: bool,
}

/// The capturing thread's open capture.
pub(crate) struct Active {
    /// The capture stream.
    pub(crate) stream: StreamId,
    /// The capture's private pool.
    pub(crate) pool: Arc<GraphPool>,
    /// The buffers bound to it.
    pub(crate) bound: Vec<BoundRange>,
}

/// Opens a capture on this thread. Refused if one is open here already (captures do not
/// nest).
pub(crate) fn open(active: Active) -> Result<(), GpuError> {
    let gone = || GpuError::NotCapturable {
        op: "Gpu::capture",
        reason: "this thread is exiting (its thread-local state is gone)",
    };
    ACTIVE
        .try_with(|a| {
            let mut a = a.borrow_mut();
            if a.is_some() || !mark_open() {
                return Err(GpuError::NotCapturable {
                    op: "Gpu::capture",
                    reason: "a capture is already open on this thread (captures do not nest)",
                });
            }
            *a = Some(active);
            Ok(())
        })
        .unwrap_or_else(|_| Err(gone()))
}

/// Closes this thread's capture, returning its state (dropped by the caller, outside the
/// thread-local borrow).
pub(crate) fn close() -> Option<Active> {
    let active = ACTIVE.try_with(|a| a.borrow_mut().take()).ok().flatten();
    if active.is_some() {
        mark_closed();
    }
    active
}

/// Checks an access to a buffer at `addr` (of `pool`, if it came from a capture pool) by work
/// about to be queued on stream `stream` (capture token `stream_owner`).
#[inline]
pub(crate) fn check_access(
    op: &'static str,
    stream: StreamId,
    stream_owner: u64,
    pool: Option<&Arc<GraphPool>>,
    addr: u64,
    write: bool,
) -> Result<(), GpuError> {
    if !any_open() {
        return Ok(());
    }
    check_access_slow(op, stream, stream_owner, pool, addr, write)
}

#[cold]
fn check_access_slow(
    op: &'static str,
    stream: StreamId,
    stream_owner: u64,
    pool: Option<&Arc<GraphPool>>,
    addr: u64,
    write: bool,
) -> Result<(), GpuError> {
    check_owner(op, stream_owner)?;
    ACTIVE
        .try_with(|a| {
            let a = a.borrow();
            let Some(active) = a.as_ref() else {
                return Ok(());
            };
            if stream != active.stream {
                return Err(GpuError::NotCapturable {
                    op,
                    reason: "it queues work on a stream other than the capture's; inside the \
                         closure use the GPU's default stream (the ops' default)",
                });
            }
            if addr == 0 || pool.is_some_and(|p| Arc::ptr_eq(p, &active.pool)) {
                // Empty buffers reach no memory; the pool's own buffers live as long as the graph.
                return Ok(());
            }
            match active.bound.iter().find(|b| b.addr == addr) {
                Some(b) if write && !b.writable => Err(GpuError::NotCapturable {
                    op,
                    reason: "it writes a buffer bound read-only; bind it as `&mut Tensor`",
                }),
                Some(_) => Ok(()),
                None => Err(GpuError::NotCapturable {
                    op,
                    reason: "it uses a buffer that is neither bound to the capture nor allocated \
                         inside it, which the graph could not keep alive; pass it in `bound`",
                }),
            }
        })
        // No capture state: no capture open on this thread.
        .unwrap_or(Ok(()))
}

/// Checks a use of a buffer of `pool` (any thread, capture open or not): refused while
/// another thread captures into it, and forever once its capture failed.
#[inline]
pub(crate) fn check_pool(op: &'static str, pool: &GraphPool) -> Result<(), GpuError> {
    match pool.owner() {
        0 => Ok(()),
        POISONED => Err(GpuError::CaptureFailed { op }),
        owner => check_owner(op, owner),
    }
}

/// The pool an allocation on `stream` (capture token `stream_owner`) comes from: the
/// capture's pool on the capturing thread, `None` (the GPU's allocator) elsewhere.
#[inline]
pub(crate) fn allocation_pool(
    op: &'static str,
    stream: StreamId,
    stream_owner: u64,
) -> Result<Option<Arc<GraphPool>>, GpuError> {
    if !any_open() {
        return Ok(None);
    }
    allocation_pool_slow(op, stream, stream_owner)
}

#[cold]
fn allocation_pool_slow(
    op: &'static str,
    stream: StreamId,
    stream_owner: u64,
) -> Result<Option<Arc<GraphPool>>, GpuError> {
    check_owner(op, stream_owner)?;
    let pool = ACTIVE.try_with(|a| match a.borrow().as_ref() {
        None => Ok(None),
        Some(active) if active.stream == stream => Ok(Some(Arc::clone(&active.pool))),
        Some(_) => Err(GpuError::NotCapturable {
            op,
            reason: "it allocates on a stream other than the capture's; inside the closure \
                     use the GPU's default stream (the ops' default)",
        }),
    });
    // No capture state: no capture open on this thread, so the GPU's allocator.
    pool.unwrap_or(Ok(None))
}

#[cfg(test)]
mod tests {
    use super::super::state::token;
    use super::*;

    #[test]
    fn no_thread_has_the_poisoned_token() {
        assert_ne!(token(), POISONED);
    }

    #[test]
    fn without_a_capture_on_this_thread_nothing_is_refused() {
        assert!(check_access("op", StreamId(7), 0, None, 0x1000, true).is_ok());
        assert!(matches!(allocation_pool("op", StreamId(7), 0), Ok(None)));
        assert!(close().is_none());
    }

    /// What [`every_check`] saw, or its panic.
    type Seen = std::thread::Result<(bool, bool, bool)>;

    /// Calls every check of this module that a drop reaches, with the slow paths forced (they
    /// read the thread-local whether or not a capture is open), and returns what it saw: any
    /// panic is caught and reported as `Err`.
    fn every_check() -> Seen {
        std::panic::catch_unwind(|| {
            let closed = close().is_none();
            let access = check_access_slow("op", StreamId(7), 0, None, 0x1000, true).is_ok();
            let pool = matches!(allocation_pool_slow("op", StreamId(7), 0), Ok(None));
            (closed, access, pool)
        })
    }

    /// Runs [`every_check`] from its destructor at thread exit and sends the result.
    struct CheckOnDrop(std::sync::mpsc::Sender<Seen>);

    impl Drop for CheckOnDrop {
        fn drop(&mut self) {
            let _ = self.0.send(every_check());
        }
    }

    thread_local! {
        static LATE: std::cell::RefCell<Option<CheckOnDrop>> = const { std::cell::RefCell::new(None) };
    }

    #[test]
    fn checks_run_from_a_destructor_after_the_thread_locals_are_gone() {
        let (send, receive) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            // Registered first, so destroyed last: `LATE` runs its checks after `ACTIVE` is
            // gone, as a GPU tensor held in a user's thread-local does.
            LATE.with(|late| *late.borrow_mut() = Some(CheckOnDrop(send)));
            assert!(close().is_none());
        });
        assert!(thread.join().is_ok(), "the thread exits without a panic");
        let seen = receive.recv().expect("the destructor ran");
        assert_eq!(
            seen.expect("no check panics in a thread-local destructor"),
            (true, true, true)
        );
    }
}
