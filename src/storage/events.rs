//! Outstanding stream events guarding freed blocks (PyTorch's `cuda_events`), and the one
//! implementation of what every caching allocator does with them.
//!
//! A block freed after `record_stream` may still be read or written by work queued on
//! those streams. The allocator records one event per such stream and keeps the block out
//! of its pools until every event has completed. Events are queued per stream, in record
//! order, so one long-running stream does not hold back blocks freed on the others
//! (PyTorch's head-of-line argument): a queue is polled from its front and polling stops at
//! the first event that has not completed, since later events on the same stream cannot
//! have completed before it.
//!
//! [`StreamEvents`] is the queue; [`EventGuarded`] is implemented by each allocator's state
//! (it says how to find a block's event count and how to put a block back in its pool) and
//! provides recording at free, polling, draining and failure recovery on top.

use std::collections::VecDeque;

use super::failure::source_failure;
use super::source::{MemorySource, SourceError, StreamId};
use crate::error::AllocError;

/// Per-stream FIFO queues of `(event, key)`; `key` names the block waiting on the event.
pub(crate) struct StreamEvents<E, K> {
    /// One queue per stream ever used; emptied queues are kept so their buffers are reused.
    queues: Vec<(StreamId, VecDeque<(E, K)>)>,
    /// Total events across all queues (a zero check keeps the allocation fast path short).
    outstanding: usize,
    /// Keys whose events have completed, between a poll or drain and their processing;
    /// kept empty otherwise so its buffer is reused (no allocation per call).
    completed: Vec<K>,
}

/// What recording one event per stream for a freed block gave.
#[must_use = "pass it to `EventGuarded::hold_until_events`"]
pub(crate) struct Recorded {
    /// Events recorded and queued.
    count: usize,
    /// Why recording stopped early, if it did.
    failure: Option<SourceError>,
}

impl<E, K: Copy> StreamEvents<E, K> {
    /// No events.
    pub(crate) fn new() -> Self {
        Self {
            queues: Vec::new(),
            outstanding: 0,
            completed: Vec::new(),
        }
    }

    /// Whether no event is outstanding.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.outstanding == 0
    }

    /// Queues `event`, recorded on `stream`, guarding `key`.
    fn push(&mut self, stream: StreamId, event: E, key: K) {
        self.outstanding += 1;
        if let Some((_, queue)) = self.queues.iter_mut().find(|(s, _)| *s == stream) {
            queue.push_back((event, key));
        } else {
            self.queues.push((stream, VecDeque::from([(event, key)])));
        }
    }

    /// Records an event guarding `key` on `own` (if given), then on each of `uses`, in
    /// order, stopping at the first failure (PyTorch's `insert_events`). Empties `uses`,
    /// keeping its buffer for the block's next life.
    #[inline]
    pub(crate) fn record<S>(
        &mut self,
        source: &S,
        own: Option<StreamId>,
        uses: &mut Vec<StreamId>,
        key: K,
    ) -> Recorded
    where
        S: MemorySource<Event = E>,
    {
        let mut recorded = Recorded {
            count: 0,
            failure: None,
        };
        for stream in own.into_iter().chain(uses.iter().copied()) {
            match source.record_event(stream) {
                Ok(event) => {
                    self.push(stream, event, key);
                    recorded.count += 1;
                }
                Err(e) => {
                    recorded.failure = Some(e);
                    break;
                }
            }
        }
        uses.clear();
        recorded
    }

    /// Moves every completed event's key to `completed` (each queue from its front, up to its
    /// first pending event).
    fn poll<S>(&mut self, source: &S) -> Result<(), SourceError>
    where
        S: MemorySource<Event = E>,
    {
        for (_, queue) in &mut self.queues {
            while let Some((event, key)) = queue.front() {
                if !source.event_completed(event)? {
                    break;
                }
                self.completed.push(*key);
                queue.pop_front();
                self.outstanding -= 1;
            }
        }
        Ok(())
    }

    /// Moves every event's key to `completed`: for use right after the source synchronized,
    /// when all of them have completed.
    fn drain(&mut self) {
        for (_, queue) in &mut self.queues {
            self.completed.extend(queue.drain(..).map(|(_, key)| key));
        }
        self.outstanding = 0;
    }
}

/// Adds `stream` to the streams a block allocated on `own` was used on (PyTorch's
/// `recordStream`): uses on its own stream need no event, and each stream is kept once.
#[inline]
pub(crate) fn add_stream_use(uses: &mut Vec<StreamId>, own: StreamId, stream: StreamId) {
    if stream != own && !uses.contains(&stream) {
        uses.push(stream);
    }
}

/// Allocator state whose freed blocks wait for stream events before reuse.
///
/// Implementors say where the queue is, where a block's count of outstanding events is, and
/// how a block goes back to its pool; the provided methods are the event handling shared by
/// every allocator. Invariant they keep: a freed block waiting for events has as many
/// queued events naming it as its count says (plus one phantom that never completes if it
/// had to be leaked), and goes back to its pool exactly when the count reaches zero.
pub(crate) trait EventGuarded<E> {
    /// How queued events name a block (its address or arena id).
    type Key: Copy;

    /// The event queue.
    fn events_mut(&mut self) -> &mut StreamEvents<E, Self::Key>;

    /// The number of events freed block `key` still waits for (`None` if no such block,
    /// which the invariants rule out).
    fn event_count_mut(&mut self, key: Self::Key) -> Option<&mut usize>;

    /// Puts freed block `key`, which waits for no event, back in its pool.
    fn reuse(&mut self, key: Self::Key);

    /// Holds freed block `key` until the events `recorded` for it complete, or puts it back
    /// in its pool at once if there are none. If recording failed, synchronizes instead
    /// (there is no telling when the block is safe to reuse otherwise), which completes
    /// every event, and reports the failure; if even that fails the block is leaked (one
    /// phantom event that never completes) rather than handed out while possibly in use.
    #[inline]
    fn hold_until_events<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        key: Self::Key,
        recorded: Recorded,
    ) -> Result<(), AllocError> {
        let Recorded { count, failure } = recorded;
        if count == 0 && failure.is_none() {
            self.reuse(key);
            return Ok(());
        }
        if let Some(outstanding) = self.event_count_mut(key) {
            *outstanding = count;
        }
        let Some(error) = failure else {
            return Ok(());
        };
        if source.synchronize().is_ok() {
            if count == 0 {
                self.reuse(key);
            }
            self.drain_events();
        } else if let Some(outstanding) = self.event_count_mut(key) {
            *outstanding += 1;
        }
        Err(source_failure(source, error))
    }

    /// Returns blocks whose events have all completed to their pools (PyTorch's
    /// `process_events`).
    #[inline]
    fn process_events<S: MemorySource<Event = E>>(&mut self, source: &S) -> Result<(), AllocError> {
        if self.events_mut().is_empty() {
            return Ok(());
        }
        let polled = self.events_mut().poll(source);
        self.finish_completed();
        polled.map_err(|e| source_failure(source, e))
    }

    /// Treats every outstanding event as completed: only right after the source
    /// synchronized.
    fn drain_events(&mut self) {
        self.events_mut().drain();
        self.finish_completed();
    }

    /// Synchronizes the source, then returns every block awaiting events to its pool.
    fn synchronize_and_drain<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
    ) -> Result<(), AllocError> {
        source
            .synchronize()
            .map_err(|e| source_failure(source, e))?;
        self.drain_events();
        Ok(())
    }

    /// Counts one completed event for each key in the queue's `completed` list and returns
    /// blocks left waiting for none to their pools.
    fn finish_completed(&mut self) {
        let mut done = std::mem::take(&mut self.events_mut().completed);
        for key in done.drain(..) {
            if let Some(outstanding) = self.event_count_mut(key) {
                *outstanding -= 1;
                if *outstanding == 0 {
                    self.reuse(key);
                }
            }
        }
        self.events_mut().completed = done;
    }
}
