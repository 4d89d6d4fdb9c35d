//! Who is capturing: the capturing thread's state and the checks every launch, allocation,
//! copy and synchronisation of the runtime asks before touching the driver.
//!
//! - Each thread has a token (nonzero, never reused). A capture stream and a capture's
//!   [`GraphPool`] carry their capturing thread's token while the capture is open.
//! - The capturing thread's open capture ([`Active`]) lives in a thread-local: its stream,
//!   its pool and the buffers bound to it.
//! - [`OPEN`] counts open captures in the process, so that every check costs one atomic load
//!   while none is open.
//!
//! The rules (docs/GRAPHS.md has the reasons):
//! - On the capturing thread, work may only be queued on the capture stream, and may only
//!   touch buffers bound to the capture (read-only ones only read) or allocated from its
//!   pool; host copies, synchronisations and event work are refused
//!   ([`GpuError::NotCapturable`]).
//! - On any other thread, work on a capture stream, or on a buffer of a pool still being
//!   captured into, is refused ([`GpuError::CaptureInProgress`]): it would be recorded into
//!   the graph, or read memory the capture has not written yet. A buffer of a pool whose
//!   capture failed is refused to everyone, for good ([`GpuError::CaptureFailed`]): the work
//!   that would have written it never ran.
//! - Every check runs from drops too (a buffer's free, a copy's wait), including drops at
//!   thread exit after this thread's own thread-locals were destroyed (a GPU tensor held in a
//!   user's `thread_local!`). A panic there aborts the process, so the thread-locals are
//!   read with `try_with`: once gone, the thread has no capture open (its capture state went
//!   with them) and a fresh token stands for it.
//! - Everything else is untouched: other threads' work on other streams (the legacy default
//!   stream included) runs as usual, and is not captured (the capture is thread-local and
//!   on its own stream).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::pool::{GraphPool, POISONED};
use crate::error::GpuError;
use crate::runtime::driver;
use crate::storage::source::StreamId;

/// Open captures in the process.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// The next thread token.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static TOKEN: u64 = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
}

/// This thread's token (nonzero). At thread exit, once the thread-local is destroyed, a
/// fresh token: it matches no stream or pool, which is right for a thread that can no
/// longer have a capture open.
pub(crate) fn token() -> u64 {
    TOKEN
        .try_with(|t| *t)
        .unwrap_or_else(|_| NEXT_TOKEN.fetch_add(1, Ordering::Relaxed))
}

/// Whether any thread has a capture open (one atomic load).
#[inline]
pub(crate) fn any_open() -> bool {
    OPEN.load(Ordering::Acquire) != 0
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
            if a.is_some() {
                return Err(GpuError::NotCapturable {
                    op: "Gpu::capture",
                    reason: "a capture is already open on this thread (captures do not nest)",
                });
            }
            *a = Some(active);
            OPEN.fetch_add(1, Ordering::AcqRel);
            Ok(())
        })
        .unwrap_or_else(|_| Err(gone()))
}

/// Closes this thread's capture, returning its state (dropped by the caller, outside the
/// thread-local borrow).
pub(crate) fn close() -> Option<Active> {
    let active = ACTIVE.try_with(|a| a.borrow_mut().take()).ok().flatten();
    if active.is_some() {
        OPEN.fetch_sub(1, Ordering::AcqRel);
    }
    active
}

/// Whether this thread has a capture open.
pub(crate) fn capturing_here() -> bool {
    any_open() && active_here()
}

/// Whether this thread's capture state holds an open capture (`false` once it is gone).
fn active_here() -> bool {
    ACTIVE.try_with(|a| a.borrow().is_some()).unwrap_or(false)
}

/// Refuses work on a stream or buffer another thread is capturing into. `owner` is the
/// stream's (or pool's) capture token, 0 if none.
fn check_owner(op: &'static str, owner: u64) -> Result<(), GpuError> {
    if owner != 0 && owner != token() {
        Err(GpuError::CaptureInProgress { op })
    } else {
        Ok(())
    }
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

/// Checks a call that makes the host wait for the GPU (or reads or writes host memory):
/// refused while this thread captures, or on a stream another thread captures on
/// (`stream_owner`, 0 if none or no stream).
#[inline]
pub(crate) fn check_host_sync(
    op: &'static str,
    stream_owner: u64,
    reason: &'static str,
) -> Result<(), GpuError> {
    if !any_open() {
        return Ok(());
    }
    check_host_sync_slow(op, stream_owner, reason)
}

#[cold]
fn check_host_sync_slow(
    op: &'static str,
    stream_owner: u64,
    reason: &'static str,
) -> Result<(), GpuError> {
    check_owner(op, stream_owner)?;
    if active_here() {
        return Err(GpuError::NotCapturable { op, reason });
    }
    Ok(())
}

/// Why a synchronisation cannot be captured.
pub(crate) const SYNC: &str = "it makes the host wait for the GPU, and work being captured \
                               does not run; move it out of the closure";

/// Why a host copy cannot be captured.
pub(crate) const HOST_COPY: &str = "it copies between host and device memory, which a graph \
                                    would redo from a host buffer it cannot keep alive; copy \
                                    into a bound buffer before replaying instead";

/// Why event work cannot be captured.
pub(crate) const EVENTS: &str = "it records or waits on events, which would tie the graph to \
                                 other streams; use only the capture stream inside the closure";

/// Runs `f` with this thread's capture mode relaxed if it has a capture open (so that
/// `cuMemAlloc` and event queries are allowed, as PyTorch does around `cudaMalloc`), as is
/// otherwise.
pub(crate) fn relaxed<R, E: From<GpuError>>(f: impl FnOnce() -> Result<R, E>) -> Result<R, E> {
    if !capturing_here() {
        return f();
    }
    let saved = driver::relax_capture_mode()?;
    let result = f();
    driver::restore_capture_mode(saved)?;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_nonzero_and_differ_between_threads() {
        let here = token();
        assert_ne!(here, 0);
        assert_eq!(here, token(), "stable on one thread");
        let there = std::thread::spawn(token).join().expect("thread runs");
        assert_ne!(there, 0);
        assert_ne!(here, there);
        assert_ne!(here, POISONED);
    }

    #[test]
    fn owners_other_than_this_thread_are_refused() {
        assert!(check_owner("op", 0).is_ok());
        assert!(check_owner("op", token()).is_ok());
        assert!(matches!(
            check_owner("op", token() + 1_000_000),
            Err(GpuError::CaptureInProgress { op: "op" })
        ));
    }

    #[test]
    fn without_a_capture_on_this_thread_nothing_is_refused() {
        // Other tests' captures may be open on other threads (then `OPEN` is not 0); this
        // thread has none, so only other threads' streams are refused.
        assert!(!capturing_here());
        assert!(check_host_sync("op", 0, SYNC).is_ok());
        assert!(check_access("op", StreamId(7), 0, None, 0x1000, true).is_ok());
        assert!(matches!(allocation_pool("op", StreamId(7), 0), Ok(None)));
        assert!(close().is_none());
        let r: Result<u8, GpuError> = relaxed(|| Ok(3));
        assert!(matches!(r, Ok(3)));
    }

    /// What [`every_check`] saw, or its panic.
    type Seen = std::thread::Result<(bool, bool, bool, bool, bool)>;

    /// Calls every check that a drop or a synchronisation reaches, with the slow paths
    /// forced (they read the thread-locals whether or not a capture is open), and returns
    /// what it saw: any panic is caught and reported as `Err`.
    fn every_check() -> Seen {
        std::panic::catch_unwind(|| {
            let t = token();
            let closed = close().is_none();
            let here = active_here();
            let sync = check_host_sync_slow("op", 0, SYNC).is_ok();
            let access = check_access_slow("op", StreamId(7), 0, None, 0x1000, true).is_ok();
            let pool = matches!(allocation_pool_slow("op", StreamId(7), 0), Ok(None));
            let own = check_owner("op", t).is_ok();
            let relaxed: Result<u8, GpuError> = relaxed(|| Ok(3));
            (
                t != 0 && closed && !here,
                sync,
                access,
                pool,
                own && relaxed.is_ok(),
            )
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
            // Registered first, so destroyed last (destructors run in reverse order of
            // registration): `LATE` runs its checks after `ACTIVE` and `TOKEN` are gone, as
            // a GPU tensor held in a user's thread-local does.
            LATE.with(|late| *late.borrow_mut() = Some(CheckOnDrop(send)));
            assert_ne!(token(), 0);
            assert!(close().is_none());
        });
        assert!(thread.join().is_ok(), "the thread exits without a panic");
        let seen = receive.recv().expect("the destructor ran");
        assert_eq!(
            seen.expect("no check panics in a thread-local destructor"),
            (true, true, true, true, true)
        );
    }
}
