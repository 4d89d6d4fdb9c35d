//! Ordering streams of two devices: one stream waits for another's work so far, through a
//! reused event per context and thread.

use std::cell::RefCell;

use crate::error::GpuError;
use crate::runtime::event::Event;
use crate::runtime::stream::Stream;

thread_local! {
    /// One reusable event per context, for [`order_after`].
    static BARRIERS: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}

/// Makes later work on `waiter` wait for the work queued on `target` so far (on the GPU; the
/// host does not block). The streams may belong to different GPUs. Reuses this thread's
/// event of `target`'s context: a wait captures the event's last record when it is queued,
/// so re-recording it later changes nothing that was queued before.
pub(super) fn order_after(waiter: &Stream, target: &Stream) -> Result<(), GpuError> {
    if waiter == target {
        return Ok(());
    }
    // At thread exit, once `BARRIERS` is destroyed (a copy from a drop in a user's
    // thread-local), a fresh event: `try_with` never panics there.
    let ordered = BARRIERS.try_with(|cell| {
        let Ok(mut events) = cell.try_borrow_mut() else {
            // Not reentered by anything below; a fresh event is always correct.
            return waiter.wait_stream(target);
        };
        let index = match events
            .iter()
            .position(|e| **e.context() == **target.context())
        {
            Some(i) => i,
            None => {
                events.push(Event::create(target.context(), false)?);
                events.len() - 1
            }
        };
        let event = &events[index];
        event.record(target)?;
        waiter.wait_event(event)
    });
    ordered.unwrap_or_else(|_| waiter.wait_stream(target))
}
