//! The numbers behind the memory-over-time plot, computed from a [`MemoryHistory`]: the
//! allocated and reserved bytes after each event, and the lifetimes of the largest
//! allocations.

use std::collections::HashMap;

use crate::storage::history::{MemoryHistory, TraceAction};

/// One of the largest allocations: alive over value steps `start..end`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Lifetime {
    /// Its label, or `"(unlabelled)"`.
    pub(crate) label: String,
    /// Bytes asked for.
    pub(crate) size: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// Values after each event: step 0 is before the first recorded event, step `t` after `t`
/// of them.
///
/// Invariant: `times_ms`, `allocated` and `reserved` have one entry per step (events + 1).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Timeline {
    /// Milliseconds since the first recorded event.
    pub(crate) times_ms: Vec<f64>,
    /// Bytes asked for by live allocations (from `alloc` to `free_completed`).
    pub(crate) allocated: Vec<usize>,
    /// Bytes of segments held from the source.
    pub(crate) reserved: Vec<usize>,
    /// The largest allocations whose start was recorded, oldest first.
    pub(crate) largest: Vec<Lifetime>,
}

/// The timeline of `h`, with its `top` largest allocations.
///
/// The ring may have dropped older events, so the values before the first recorded one are
/// worked back from the allocator's statistics at the time of the history (requested and
/// reserved bytes now, minus what the recorded events added).
pub(crate) fn timeline(h: &MemoryHistory, top: usize) -> Timeline {
    let first = h.events.first().map_or(0, |e| e.time_us);
    let mut times_ms = vec![0.0];
    let (mut alloc_delta, mut reserved_delta) = (Vec::new(), Vec::new());
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut lifetimes: Vec<Lifetime> = Vec::new();
    for (i, e) in h.events.iter().enumerate() {
        // Microseconds as a plot coordinate: exact below 2^53.
        times_ms.push(e.time_us.saturating_sub(first) as f64 / 1000.0);
        let size = i128::from(crate::storage::arith::to_u64(e.size));
        let (a, r) = match e.action {
            TraceAction::Alloc => {
                open.insert(e.addr, lifetimes.len());
                lifetimes.push(Lifetime {
                    label: e.label.as_deref().unwrap_or("(unlabelled)").to_owned(),
                    size: e.size,
                    start: i + 1,
                    end: h.events.len() + 1,
                });
                (size, 0)
            }
            TraceAction::FreeCompleted => {
                if let Some(k) = open.remove(&e.addr) {
                    lifetimes[k].end = i + 1;
                }
                (-size, 0)
            }
            TraceAction::SegmentAlloc => (0, size),
            TraceAction::SegmentFree => (0, -size),
            _ => (0, 0),
        };
        alloc_delta.push(a);
        reserved_delta.push(r);
    }
    let walk = |now: usize, deltas: &[i128]| -> Vec<usize> {
        let total: i128 = deltas.iter().sum();
        let mut v = (i128::from(crate::storage::arith::to_u64(now)) - total).max(0);
        let mut out = vec![to_usize(v)];
        for d in deltas {
            v = (v + d).max(0);
            out.push(to_usize(v));
        }
        out
    };
    let allocated = walk(h.stats.requested_bytes.current, &alloc_delta);
    let reserved = walk(h.stats.reserved_bytes.current, &reserved_delta);
    let mut by_size: Vec<usize> = (0..lifetimes.len()).collect();
    by_size.sort_by_key(|&k| (std::cmp::Reverse(lifetimes[k].size), k));
    by_size.truncate(top);
    by_size.sort_unstable();
    let largest = by_size.into_iter().map(|k| lifetimes[k].clone()).collect();
    Timeline {
        times_ms,
        allocated,
        reserved,
        largest,
    }
}

fn to_usize(v: i128) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

impl Lifetime {
    /// Bytes this allocation adds at step `t`.
    pub(crate) fn at(&self, t: usize) -> usize {
        if (self.start..self.end).contains(&t) {
            self.size
        } else {
            0
        }
    }
}
