//! Stream order owned by the memory: each device buffer knows which streams' queued work it
//! must be ordered after, and orders every new use itself.
//!
//! The model (docs/STREAMS.md has the long form):
//! - A buffer remembers the stream of its last write and the streams that read it since.
//! - Before work on stream `S` reads the buffer, `S` waits (on the GPU, `cuStreamWaitEvent`)
//!   for the last writer's stream, unless that is `S`. `S` is then remembered as a reader.
//! - Before work on `S` writes the buffer, `S` waits for the last writer and for every reader
//!   since, except itself. `S` becomes the writer and the readers are forgotten: everything
//!   they did is now ordered before `S`'s write, and anything later that waits for `S` waits
//!   for them too.
//! - Waits capture a stream's queue *at the time of the wait*, which includes the access
//!   being ordered after (a write needs `&mut`, so it was queued before anyone can start a
//!   new access; a read recorded under `&` is only ever waited for by a later write, which
//!   again needs `&mut`). Waiting on more work than needed is conservative, never wrong, and
//!   cannot deadlock: an event only captures work already queued.
//!
//! The common case costs nothing: while every use is on the buffer's home stream (the one it
//! was allocated on), an atomic flag says so and no lock is taken, no event made. The first
//! use on another stream switches the buffer to the tracked path; a write on the home stream
//! that has waited for everything switches it back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::stream::Stream;
use crate::error::GpuError;
use crate::storage::source::StreamId;

/// Whether an access reads or writes the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// The work only reads the buffer.
    Read,
    /// The work writes the buffer (and may read it).
    Write,
}

/// What later work on a buffer must be ordered after.
#[derive(Debug, Default)]
struct Pending {
    /// The stream of the last write; `None` means the home stream.
    writer: Option<Stream>,
    /// Streams that read since the last write, other than the writer's.
    readers: Vec<Stream>,
    /// Every stream other than the home stream ever used, by id: told to the allocator once
    /// each (`record_stream`), so the memory is reused only after their work.
    recorded: Vec<StreamId>,
}

/// The stream-order state of one buffer (see the module docs).
///
/// Invariants:
/// - When `tracked` is false, the last write and every read since were queued on the home
///   stream (so work on the home stream needs no wait), and `pending` holds no writer and
///   no reader.
/// - When `tracked` is true, `pending.writer` (or the home stream) is the stream of the last
///   write, and `pending.readers` holds every other stream that read since; each of them
///   waited for that write before its first read.
#[derive(Debug)]
pub(crate) struct StreamOrder {
    tracked: AtomicBool,
    pending: Mutex<Pending>,
}

impl StreamOrder {
    /// A buffer whose only work so far is on its home stream.
    pub(crate) fn new() -> Self {
        StreamOrder {
            tracked: AtomicBool::new(false),
            pending: Mutex::new(Pending::default()),
        }
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        // Nothing panics while the lock is held and `Pending` is valid at every step.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Orders `stream` for an access of kind `access`: makes it wait for what it must and
    /// records the access. `home` is the buffer's home stream. The first time a stream other
    /// than the home stream is used, `record_stream` is called with its id (under the lock,
    /// so the stream counts as told only once the allocator has accepted it).
    ///
    /// `access == Write` must only be asked through an exclusive borrow of the buffer (see
    /// the module docs: the write is queued before anyone else can order after it).
    #[inline]
    pub(crate) fn order<E: From<GpuError>>(
        &self,
        home: &Stream,
        stream: &Stream,
        access: Access,
        record_stream: impl FnOnce(StreamId) -> Result<(), E>,
    ) -> Result<(), E> {
        // Acquire pairs with the Release stores under the lock: a reader that sees `false`
        // sees the state in which the home stream needs no wait.
        if !self.tracked.load(Ordering::Acquire) && stream.id() == home.id() {
            return Ok(());
        }
        self.order_tracked(home, stream, access, record_stream)
    }

    #[cold]
    fn order_tracked<E: From<GpuError>>(
        &self,
        home: &Stream,
        stream: &Stream,
        access: Access,
        record_stream: impl FnOnce(StreamId) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut p = self.pending();
        self.tracked.store(true, Ordering::Release);
        // A reader since the last write has waited for that write already, and nothing has
        // written since (a write forgets the readers), so it need not wait again: repeated
        // use on one side stream costs no event either.
        let writer = p.writer.as_ref().unwrap_or(home);
        let is_reader = p.readers.contains(stream);
        if writer != stream && !is_reader {
            stream.wait_stream(writer)?;
        }
        match access {
            Access::Read => {
                if writer != stream && !is_reader {
                    p.readers.push(stream.clone());
                }
            }
            Access::Write => {
                for reader in &p.readers {
                    if reader != stream {
                        stream.wait_stream(reader)?;
                    }
                }
                p.readers.clear();
                if stream == home {
                    // Everything is ordered before this write on the home stream: back to
                    // the untracked state (invariant: no writer, no reader).
                    p.writer = None;
                    self.tracked.store(false, Ordering::Release);
                } else {
                    p.writer = Some(stream.clone());
                }
            }
        }
        let id = stream.id();
        if id == home.id() || p.recorded.contains(&id) {
            return Ok(());
        }
        record_stream(id)?;
        p.recorded.push(id);
        Ok(())
    }

    /// The streams with work that a new access might have to wait for: the writer first,
    /// then the readers (for diagnostics and tests).
    pub(crate) fn pending_streams(&self, home: &Stream) -> Vec<Stream> {
        if !self.tracked.load(Ordering::Acquire) {
            return vec![home.clone()];
        }
        let p = self.pending();
        let mut all = vec![p.writer.clone().unwrap_or_else(|| home.clone())];
        all.extend(p.readers.iter().cloned());
        all
    }
}
