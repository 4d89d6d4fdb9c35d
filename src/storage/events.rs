//! Outstanding stream events guarding freed blocks (PyTorch's `cuda_events`).
//!
//! A block freed after `record_stream` may still be read or written by work queued on
//! those streams. The allocator records one event per such stream and keeps the block out
//! of its pools until every event has completed. Events are queued per stream, in record
//! order, so one long-running stream does not hold back blocks freed on the others
//! (PyTorch's head-of-line argument): a queue is polled from its front and polling stops at
//! the first event that has not completed, since later events on the same stream cannot
//! have completed before it.

use std::collections::VecDeque;

use super::source::{MemorySource, SourceError, StreamId};

/// Per-stream FIFO queues of `(event, key)`; `key` names the block waiting on the event.
pub(crate) struct StreamEvents<E, K> {
    /// One queue per stream ever used; emptied queues are kept so their buffers are reused.
    queues: Vec<(StreamId, VecDeque<(E, K)>)>,
    /// Total events across all queues (a zero check keeps the allocation fast path short).
    outstanding: usize,
}

impl<E, K: Copy> StreamEvents<E, K> {
    /// No events.
    pub(crate) fn new() -> Self {
        Self {
            queues: Vec::new(),
            outstanding: 0,
        }
    }

    /// Whether no event is outstanding.
    pub(crate) fn is_empty(&self) -> bool {
        self.outstanding == 0
    }

    /// Queues `event`, recorded on `stream`, guarding `key`.
    pub(crate) fn push(&mut self, stream: StreamId, event: E, key: K) {
        self.outstanding += 1;
        if let Some((_, queue)) = self.queues.iter_mut().find(|(s, _)| *s == stream) {
            queue.push_back((event, key));
        } else {
            self.queues.push((stream, VecDeque::from([(event, key)])));
        }
    }

    /// Removes every completed event (each queue from its front, up to its first pending
    /// event) and appends its key to `done`.
    pub(crate) fn poll<S>(&mut self, source: &S, done: &mut Vec<K>) -> Result<(), SourceError>
    where
        S: MemorySource<Event = E>,
    {
        if self.outstanding == 0 {
            return Ok(());
        }
        for (_, queue) in &mut self.queues {
            while let Some((event, key)) = queue.front() {
                if !source.event_completed(event)? {
                    break;
                }
                done.push(*key);
                queue.pop_front();
                self.outstanding -= 1;
            }
        }
        Ok(())
    }

    /// Removes every event, appending its key to `done`: for use right after the source
    /// synchronized, when all of them have completed.
    pub(crate) fn drain(&mut self, done: &mut Vec<K>) {
        for (_, queue) in &mut self.queues {
            done.extend(queue.drain(..).map(|(_, key)| key));
        }
        self.outstanding = 0;
    }
}
