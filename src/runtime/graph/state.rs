//! Who is capturing: thread tokens, the open captures, and the checks every synchronisation,
//! host copy and event call of the runtime asks before touching the driver.
//!
//! A leaf of the runtime: streams and events ask it, and it names neither them nor the
//! capture's pool. What a capture holds (its stream, its pool, its bound buffers) and the
//! checks of buffer accesses against it are in `super::active`, which opens and closes
//! captures through [`mark_open`] and [`mark_closed`].
//!
//! - Each thread has a token (nonzero, never reused). A capture stream and a capture's
//!   pool carry their capturing thread's token while the capture is open.
//! - Whether this thread has a capture open is a thread-local flag, set and cleared with
//!   `super::active`'s record of the capture (`super::active::open` and `close`, the only
//!   callers of [`mark_open`] and [`mark_closed`]).
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

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::error::GpuError;
use crate::runtime::driver;

/// Open captures in the process.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// The next thread token.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static TOKEN: u64 = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    /// Whether this thread has a capture open. A `Cell<bool>` needs no destructor, so it
    /// stays readable in other thread-locals' destructors at thread exit.
    static OPEN_HERE: Cell<bool> = const { Cell::new(false) };
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

/// Records that this thread opened a capture (`super::active::open`, once its record is in
/// place). `false` when one is open here already (captures do not nest); nothing changes then.
pub(super) fn mark_open() -> bool {
    let opened = OPEN_HERE
        .try_with(|open| !open.replace(true))
        .unwrap_or(false);
    if opened {
        OPEN.fetch_add(1, Ordering::AcqRel);
    }
    opened
}

/// Records that this thread's capture is closed (`super::active::close`, once it took the
/// record out). Nothing changes when none was open.
pub(super) fn mark_closed() {
    if OPEN_HERE.try_with(|open| open.replace(false)) == Ok(true) {
        OPEN.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether this thread has a capture open.
pub(crate) fn capturing_here() -> bool {
    any_open() && open_here()
}

/// Whether this thread's flag says a capture is open.
fn open_here() -> bool {
    OPEN_HERE.try_with(Cell::get).unwrap_or(false)
}

/// Refuses work on a stream or buffer another thread is capturing into. `owner` is the
/// stream's (or pool's) capture token, 0 if none.
pub(super) fn check_owner(op: &'static str, owner: u64) -> Result<(), GpuError> {
    if owner != 0 && owner != token() {
        Err(GpuError::CaptureInProgress { op })
    } else {
        Ok(())
    }
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
    if open_here() {
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
    fn marks_open_once_and_close_once() {
        // On a thread of its own: other tests may open captures on theirs.
        std::thread::spawn(|| {
            assert!(!open_here());
            assert!(mark_open());
            assert!(open_here() && capturing_here());
            assert!(!mark_open(), "captures do not nest");
            assert!(matches!(
                check_host_sync("op", 0, SYNC),
                Err(GpuError::NotCapturable { op: "op", .. })
            ));
            mark_closed();
            assert!(!open_here());
            mark_closed();
            assert!(check_host_sync("op", 0, SYNC).is_ok());
        })
        .join()
        .expect("thread runs");
    }

    #[test]
    fn without_a_capture_on_this_thread_nothing_is_refused() {
        // Other tests' captures may be open on other threads (then `OPEN` is not 0); this
        // thread has none, so only other threads' streams are refused.
        assert!(!capturing_here());
        assert!(check_host_sync("op", 0, SYNC).is_ok());
        let r: Result<u8, GpuError> = relaxed(|| Ok(3));
        assert!(matches!(r, Ok(3)));
    }

    /// What [`every_check`] saw, or its panic.
    type Seen = std::thread::Result<(bool, bool, bool)>;

    /// Calls every check of this module that a drop or a synchronisation reaches, with the
    /// slow paths forced (they read the thread-locals whether or not a capture is open), and
    /// returns what it saw: any panic is caught and reported as `Err`.
    fn every_check() -> Seen {
        std::panic::catch_unwind(|| {
            let t = token();
            mark_closed();
            let here = open_here();
            let sync = check_host_sync_slow("op", 0, SYNC).is_ok();
            let own = check_owner("op", t).is_ok();
            let relaxed: Result<u8, GpuError> = relaxed(|| Ok(3));
            (t != 0 && !here, sync, own && relaxed.is_ok())
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
            // registration): `LATE` runs its checks after `TOKEN` is gone, as a GPU tensor
            // held in a user's thread-local does.
            LATE.with(|late| *late.borrow_mut() = Some(CheckOnDrop(send)));
            assert_ne!(token(), 0);
        });
        assert!(thread.join().is_ok(), "the thread exits without a panic");
        let seen = receive.recv().expect("the destructor ran");
        assert_eq!(
            seen.expect("no check panics in a thread-local destructor"),
            (true, true, true)
        );
    }
}
