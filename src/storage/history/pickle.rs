//! A minimal pickle writer (protocol 2) and the conversion of a [`MemoryHistory`] into the
//! dict `torch.cuda.memory._snapshot()` returns.
//!
//! Why our own encoder rather than `serde-pickle`: the snapshot needs a dozen opcodes
//! (dict, list, tuple, str, int, bool, and the protocol header), about a hundred lines
//! with no `unsafe`, while `serde-pickle` would bring serde and a derive (or a hand-built
//! value tree anyway) into every user's build for one export. The test suite decodes our
//! bytes with `serde-pickle` (a dev-dependency), so the encoder is checked by an independent
//! implementation, and on the device by Python's own `pickle` and `torch.cuda._memory_viz`
//! (`scripts/check_memory_viz.py`).
//!
//! No memo is written (nothing is shared or cyclic), which `pickle.load` accepts.

use std::collections::HashMap;

use super::record::{Frame, TraceAction, TraceEvent};
use super::MemoryHistory;
use crate::storage::snapshot::{BlockState, SegmentPool};

/// A Python value, as far as the snapshot needs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PyValue {
    Bool(bool),
    Int(i128),
    Str(String),
    List(Vec<PyValue>),
    Tuple(Vec<PyValue>),
    /// Keys are strings in every dict of the snapshot; insertion order is kept.
    Dict(Vec<(&'static str, PyValue)>),
}

impl From<&str> for PyValue {
    fn from(s: &str) -> Self {
        PyValue::Str(s.to_owned())
    }
}

impl From<u64> for PyValue {
    fn from(n: u64) -> Self {
        PyValue::Int(i128::from(n))
    }
}

impl From<usize> for PyValue {
    fn from(n: usize) -> Self {
        // usize is at most 64 bits (asserted in `storage`), so this is lossless.
        PyValue::Int(crate::storage::arith::to_u64(n).into())
    }
}

// Protocol 2 opcodes (Python's `pickletools`).
const PROTO: u8 = 0x80;
const STOP: u8 = b'.';
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;
const BININT: u8 = b'J';
const LONG1: u8 = 0x8a;
const BINUNICODE: u8 = b'X';
const EMPTY_LIST: u8 = b']';
const EMPTY_DICT: u8 = b'}';
const MARK: u8 = b'(';
const APPENDS: u8 = b'e';
const SETITEMS: u8 = b'u';
const TUPLE: u8 = b't';

impl MemoryHistory {
    /// The history as the pickle `torch.cuda.memory._dump_snapshot()` writes: a dict with
    /// `segments` (each with its `blocks`) and `device_traces` (the events of this device,
    /// as `alloc`, `free_requested`, `free_completed`, `segment_alloc`, `segment_free`,
    /// `oom` and `empty_cache` entries). Labels appear as the outermost frame of each
    /// event's `frames`, with file name `<label>`.
    pub fn to_torch_pickle(&self) -> Vec<u8> {
        to_pickle(&snapshot_value(self))
    }
}

/// `value` pickled with protocol 2.
pub(crate) fn to_pickle(value: &PyValue) -> Vec<u8> {
    let mut out = vec![PROTO, 2];
    write(&mut out, value);
    out.push(STOP);
    out
}

fn write(out: &mut Vec<u8>, value: &PyValue) {
    match value {
        PyValue::Bool(true) => out.push(NEWTRUE),
        PyValue::Bool(false) => out.push(NEWFALSE),
        PyValue::Int(n) => write_int(out, *n),
        PyValue::Str(s) => write_str(out, s),
        PyValue::List(items) => {
            out.push(EMPTY_LIST);
            if !items.is_empty() {
                out.push(MARK);
                items.iter().for_each(|v| write(out, v));
                out.push(APPENDS);
            }
        }
        PyValue::Tuple(items) => {
            out.push(MARK);
            items.iter().for_each(|v| write(out, v));
            out.push(TUPLE);
        }
        PyValue::Dict(entries) => {
            out.push(EMPTY_DICT);
            if !entries.is_empty() {
                out.push(MARK);
                for (k, v) in entries {
                    write_str(out, k);
                    write(out, v);
                }
                out.push(SETITEMS);
            }
        }
    }
}

fn write_int(out: &mut Vec<u8>, n: i128) {
    if let Ok(small) = i32::try_from(n) {
        out.push(BININT);
        out.extend_from_slice(&small.to_le_bytes());
        return;
    }
    // LONG1: a length byte, then the shortest little-endian two's complement.
    let bytes = n.to_le_bytes();
    let mut len = bytes.len();
    while len > 1 {
        let top = bytes[len - 1];
        let below_sign = bytes[len - 2] & 0x80;
        if (top == 0 && below_sign == 0) || (top == 0xff && below_sign != 0) {
            len -= 1;
        } else {
            break;
        }
    }
    out.push(LONG1);
    // At most 16 bytes.
    out.push(len as u8);
    out.extend_from_slice(&bytes[..len]);
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(BINUNICODE);
    // Strings of the snapshot are names and paths, far below 4 GiB; a longer one is cut at
    // a character boundary rather than written with a wrong length.
    let mut end = s.len().min(u32::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.extend_from_slice(&(end as u32).to_le_bytes());
    out.extend_from_slice(&s.as_bytes()[..end]);
}

/// The frames of an event: its call stack (innermost first), then its label as the
/// outermost frame (file `"<label>"`), so the viewer shows which part of the program it
/// was.
fn frames(event: Option<&TraceEvent>) -> PyValue {
    let Some(event) = event else {
        return PyValue::List(Vec::new());
    };
    let frame = |f: &Frame| {
        PyValue::Dict(vec![
            ("filename", f.filename.as_str().into()),
            ("line", PyValue::Int(f.line.into())),
            ("name", f.name.as_str().into()),
        ])
    };
    let mut list: Vec<PyValue> = event.frames.iter().map(frame).collect();
    if let Some(label) = &event.label {
        list.push(frame(&Frame {
            filename: "<label>".to_owned(),
            line: 0,
            name: label.to_string(),
        }));
    }
    PyValue::List(list)
}

fn trace_entry(e: &TraceEvent) -> PyValue {
    let mut d: Vec<(&'static str, PyValue)> = vec![("action", e.action.torch_name().into())];
    match e.action {
        // PyTorch writes the free bytes of the device instead of an address.
        TraceAction::Oom { device_free } => d.push(("device_free", device_free.into())),
        _ => d.push(("addr", e.addr.into())),
    }
    d.extend([
        ("size", e.size.into()),
        ("stream", e.stream.0.into()),
        ("time_us", e.time_us.into()),
        ("frames", frames(Some(e))),
    ]);
    PyValue::Dict(d)
}

/// The snapshot dict of `h`: `segments` (with blocks) and `device_traces` (one list per
/// device index up to `h`'s, the others empty), as `torch.cuda.memory._snapshot()` gives.
pub(crate) fn snapshot_value(h: &MemoryHistory) -> PyValue {
    let device = h.device_index();
    // The frames of a live block are those of the latest allocation at its address.
    let mut last_alloc: HashMap<u64, &TraceEvent> = HashMap::new();
    for e in &h.events {
        if e.action == TraceAction::Alloc {
            last_alloc.insert(e.addr, e);
        }
    }
    let segments = h
        .segments
        .iter()
        .map(|seg| {
            let sum = |f: &dyn Fn(&crate::storage::snapshot::BlockSnapshot) -> usize| -> usize {
                seg.blocks.iter().map(f).sum()
            };
            let allocated = sum(&|b| {
                if b.state == BlockState::Allocated {
                    b.size
                } else {
                    0
                }
            });
            let active = sum(&|b| {
                if b.state == BlockState::Free {
                    0
                } else {
                    b.size
                }
            });
            let requested = sum(&|b| b.requested);
            let blocks = seg
                .blocks
                .iter()
                .map(|b| {
                    let live = b.state != BlockState::Free;
                    PyValue::Dict(vec![
                        ("address", b.addr.into()),
                        ("size", b.size.into()),
                        ("requested_size", b.requested.into()),
                        (
                            "state",
                            match b.state {
                                BlockState::Allocated => "active_allocated",
                                BlockState::AwaitingEvents => "active_pending_free",
                                BlockState::Free => "inactive",
                            }
                            .into(),
                        ),
                        (
                            "frames",
                            frames(live.then(|| last_alloc.get(&b.addr).copied()).flatten()),
                        ),
                    ])
                })
                .collect();
            PyValue::Dict(vec![
                ("device", device.into()),
                ("address", seg.addr.into()),
                ("total_size", seg.size.into()),
                ("allocated_size", allocated.into()),
                ("active_size", active.into()),
                ("requested_size", requested.into()),
                ("stream", seg.stream.0.into()),
                (
                    "segment_type",
                    match seg.pool {
                        SegmentPool::Small => "small",
                        _ => "large",
                    }
                    .into(),
                ),
                (
                    "segment_pool_id",
                    PyValue::Tuple(vec![PyValue::Int(0), PyValue::Int(0)]),
                ),
                ("is_expandable", PyValue::Bool(false)),
                ("frames", PyValue::List(Vec::new())),
                ("blocks", PyValue::List(blocks)),
            ])
        })
        .collect();
    let mut traces = vec![PyValue::List(Vec::new()); device + 1];
    traces[device] = PyValue::List(h.events.iter().map(trace_entry).collect());
    PyValue::Dict(vec![
        ("segments", PyValue::List(segments)),
        ("device_traces", PyValue::List(traces)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_use_the_shortest_encoding() {
        let enc = |n: i128| to_pickle(&PyValue::Int(n))[2..].to_vec();
        assert_eq!(enc(5), [BININT, 5, 0, 0, 0, STOP]);
        assert_eq!(enc(-1), [BININT, 0xff, 0xff, 0xff, 0xff, STOP]);
        // 2^31 needs a fifth byte for the sign.
        assert_eq!(enc(1 << 31), [LONG1, 5, 0, 0, 0, 0x80, 0, STOP]);
        assert_eq!(
            enc(-(1 << 31) - 1),
            [LONG1, 5, 0xff, 0xff, 0xff, 0x7f, 0xff, STOP]
        );
        assert_eq!(
            enc(u64::MAX.into()),
            [LONG1, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, STOP]
        );
    }

    #[test]
    fn containers_and_scalars() {
        let v = PyValue::Dict(vec![
            (
                "a",
                PyValue::List(vec![PyValue::Bool(false), PyValue::Bool(true)]),
            ),
            ("b", PyValue::Tuple(vec![PyValue::Int(7)])),
            ("c", PyValue::List(Vec::new())),
        ]);
        let mut want = vec![PROTO, 2, EMPTY_DICT, MARK, BINUNICODE, 1, 0, 0, 0, b'a'];
        want.extend([EMPTY_LIST, MARK, NEWFALSE, NEWTRUE, APPENDS]);
        want.extend([
            BINUNICODE, 1, 0, 0, 0, b'b', MARK, BININT, 7, 0, 0, 0, TUPLE,
        ]);
        want.extend([BINUNICODE, 1, 0, 0, 0, b'c', EMPTY_LIST]);
        want.extend([SETITEMS, STOP]);
        assert_eq!(to_pickle(&v), want);
    }
}
