//! Recording allocator events, and the pickle PyTorch's memory viewer reads: decoded with
//! `serde-pickle` (an independent decoder) and checked against the recorded events and the
//! allocator's own snapshot.

use std::collections::BTreeMap;

use serde_pickle::{DeOptions, HashableValue, Value};
use typestate_tensor::storage::history::{with_alloc_label, HistorySettings, TraceAction};
use typestate_tensor::storage::{
    BlockState, CachingAllocator, CachingConfig, DeviceAllocator, HostMemorySource, StreamId,
};

const MIB: usize = 1 << 20;
const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(7);

fn recording(capacity: usize) -> CachingAllocator<HostMemorySource> {
    let a = CachingAllocator::new(HostMemorySource::new(capacity));
    a.record_history(Some(HistorySettings::new(1000)));
    a
}

fn decode(bytes: &[u8]) -> Value {
    serde_pickle::value_from_slice(bytes, DeOptions::new()).expect("a valid pickle")
}

fn dict(v: &Value) -> &BTreeMap<HashableValue, Value> {
    match v {
        Value::Dict(d) => d,
        other => panic!("not a dict: {other:?}"),
    }
}

fn get<'a>(v: &'a Value, key: &str) -> &'a Value {
    dict(v)
        .get(&HashableValue::String(key.to_owned()))
        .unwrap_or_else(|| panic!("no key {key:?} in {v:?}"))
}

fn keys(v: &Value) -> Vec<String> {
    dict(v)
        .keys()
        .map(|k| match k {
            HashableValue::String(s) => s.clone(),
            other => panic!("non-string key {other:?}"),
        })
        .collect()
}

fn list(v: &Value) -> &[Value] {
    match v {
        Value::List(l) => l,
        other => panic!("not a list: {other:?}"),
    }
}

fn int(v: &Value) -> u64 {
    match v {
        Value::I64(n) => u64::try_from(*n).expect("non-negative"),
        Value::Int(n) => n.to_string().parse().expect("a u64"),
        other => panic!("not an int: {other:?}"),
    }
}

fn string(v: &Value) -> &str {
    match v {
        Value::String(s) => s,
        other => panic!("not a string: {other:?}"),
    }
}

#[test]
fn events_carry_action_address_size_stream_and_label() {
    let a = recording(256 * MIB);
    let x = with_alloc_label("forward", || a.allocate(1000, S0)).unwrap();
    let big = with_alloc_label("adam step", || a.allocate(30 * MIB, S1)).unwrap();
    a.record_stream(&x, S1).unwrap();
    a.free(x).unwrap();
    let h = a.history();
    let got: Vec<(TraceAction, u64, usize, StreamId, Option<&str>)> = h
        .events
        .iter()
        .map(|e| (e.action, e.addr, e.size, e.stream, e.label.as_deref()))
        .collect();
    let seg_small = h.segments.iter().find(|s| s.stream == S0).unwrap();
    let seg_large = h.segments.iter().find(|s| s.stream == S1).unwrap();
    assert_eq!(
        got,
        [
            (
                TraceAction::SegmentAlloc,
                seg_small.addr,
                2 * MIB,
                S0,
                Some("forward")
            ),
            (
                TraceAction::Alloc,
                seg_small.addr,
                1000,
                S0,
                Some("forward")
            ),
            (
                TraceAction::SegmentAlloc,
                seg_large.addr,
                30 * MIB,
                S1,
                Some("adam step")
            ),
            (
                TraceAction::Alloc,
                big.addr(),
                30 * MIB,
                S1,
                Some("adam step")
            ),
            // Used on S1 too: the free waits for an event there, so it is not completed.
            (TraceAction::FreeRequested, seg_small.addr, 1000, S0, None),
        ]
    );
    let times: Vec<u64> = h.events.iter().map(|e| e.time_us).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(times[0] > 1_600_000_000_000_000, "microseconds since 1970");
    // The event completes; the next allocation processes it.
    a.source().complete_all_streams();
    a.process_events().unwrap();
    let last = a.history().events.last().cloned().unwrap();
    assert_eq!(
        (last.action, last.addr, last.size),
        (TraceAction::FreeCompleted, seg_small.addr, 1000)
    );
    a.free(big).unwrap();
}

#[test]
fn off_records_nothing_and_the_config_keys_turn_it_on() {
    let off = CachingAllocator::new(HostMemorySource::new(64 * MIB));
    let b = off.allocate(100, S0).unwrap();
    off.free(b).unwrap();
    let h = off.history();
    assert!(h.events.is_empty() && h.settings.is_none());

    let config = CachingConfig::parse("record_history:3,record_backtraces:True").unwrap();
    assert_eq!(
        config.history(),
        Some(HistorySettings::new(3).with_backtraces(true))
    );
    let on = CachingAllocator::with_config(HostMemorySource::new(64 * MIB), config);
    let b = on.allocate(100, S0).unwrap();
    on.free(b).unwrap();
    let h = on.history();
    // Four events happened (segment, alloc, free requested, free completed); the ring keeps 3.
    let actions: Vec<TraceAction> = h.events.iter().map(|e| e.action).collect();
    assert_eq!(
        actions,
        [
            TraceAction::Alloc,
            TraceAction::FreeRequested,
            TraceAction::FreeCompleted
        ]
    );
    assert_eq!(h.dropped_events, 1);
    // Backtraces name this test function, where the binary has symbols to name it with (the
    // stripped release binaries run on the GPU machine have none: there the frames are
    // recorded but unnamed, as this test's own backtrace shows).
    assert!(!h.events[0].frames.is_empty());
    let symbols = std::backtrace::Backtrace::force_capture()
        .to_string()
        .contains("off_records_nothing_and_the_config_keys_turn_it_on");
    if symbols {
        assert!(
            h.events[0].frames.iter().any(|f| f
                .name
                .contains("off_records_nothing_and_the_config_keys_turn_it_on")),
            "{:?}",
            h.events[0].frames
        );
    } else {
        println!("backtrace names not checked: this binary has no symbols");
    }
    assert!(CachingConfig::parse("record_backtraces:True").is_err());
    assert!(CachingConfig::parse("record_history:x").is_err());
    assert_eq!(
        CachingConfig::parse("record_history:0").unwrap().history(),
        None
    );
}

#[test]
fn out_of_memory_and_empty_cache_are_recorded() {
    let a = recording(64 * MIB);
    let x = a.allocate(40 * MIB, S0).unwrap();
    assert!(a.allocate(40 * MIB, S0).is_err());
    a.free(x).unwrap();
    a.empty_cache().unwrap();
    let h = a.history();
    let tail: Vec<(TraceAction, u64, usize)> = h
        .events
        .iter()
        .skip(2)
        .map(|e| (e.action, e.addr, e.size))
        .collect();
    let seg = h.events[0].addr;
    assert_eq!(
        tail,
        [
            // 24 MiB of the 64 were free when the 40 MiB request failed.
            (
                TraceAction::Oom {
                    device_free: 24 * MIB
                },
                0,
                40 * MIB
            ),
            (TraceAction::FreeRequested, seg, 40 * MIB),
            (TraceAction::FreeCompleted, seg, 40 * MIB),
            (TraceAction::EmptyCache, 0, 40 * MIB),
            (TraceAction::SegmentFree, seg, 40 * MIB),
        ]
    );
}

/// The pickle, decoded by an independent implementation, has PyTorch's keys and says what
/// the allocator recorded.
#[test]
fn the_pickle_has_pytorchs_schema_and_the_recorded_values() {
    let a = recording(256 * MIB);
    let x = with_alloc_label("weights", || a.allocate(3 * MIB, S0)).unwrap();
    let y = a.allocate(700, S1).unwrap();
    let z = a.allocate(5000, S1).unwrap();
    // Out-of-memory recovery synchronizes, so it comes before the pending free.
    assert!(a.allocate(1 << 40, S0).is_err());
    a.record_stream(&z, S0).unwrap();
    a.free(z).unwrap(); // pending: awaits an event on S0
    let h = a.history();
    let v = decode(&h.to_torch_pickle());
    assert_eq!(keys(&v), ["device_traces", "segments"]);

    // Segments: the allocator's snapshot, key for key.
    let segments = list(get(&v, "segments"));
    assert_eq!(segments.len(), h.segments.len());
    for (seg, want) in segments.iter().zip(&h.segments) {
        assert_eq!(
            keys(seg),
            [
                "active_size",
                "address",
                "allocated_size",
                "blocks",
                "device",
                "frames",
                "is_expandable",
                "requested_size",
                "segment_pool_id",
                "segment_type",
                "stream",
                "total_size"
            ]
        );
        assert_eq!(int(get(seg, "address")), want.addr);
        assert_eq!(int(get(seg, "total_size")), want.size as u64);
        assert_eq!(int(get(seg, "stream")), want.stream.0);
        assert_eq!(int(get(seg, "device")), 0);
        let small = want.size == 2 * MIB;
        assert_eq!(
            string(get(seg, "segment_type")),
            if small { "small" } else { "large" }
        );
        assert_eq!(get(seg, "is_expandable"), &Value::Bool(false));
        let blocks = list(get(seg, "blocks"));
        assert_eq!(blocks.len(), want.blocks.len());
        let mut sums = [0u64; 3];
        for (b, wb) in blocks.iter().zip(&want.blocks) {
            assert_eq!(
                keys(b),
                ["address", "frames", "requested_size", "size", "state"]
            );
            assert_eq!(int(get(b, "address")), wb.addr);
            assert_eq!(int(get(b, "size")), wb.size as u64);
            assert_eq!(int(get(b, "requested_size")), wb.requested as u64);
            let state = match wb.state {
                BlockState::Allocated => "active_allocated",
                BlockState::AwaitingEvents => "active_pending_free",
                BlockState::Free => "inactive",
            };
            assert_eq!(string(get(b, "state")), state);
            if wb.state == BlockState::Allocated {
                sums[0] += wb.size as u64;
            }
            if wb.state != BlockState::Free {
                sums[1] += wb.size as u64;
            }
            sums[2] += wb.requested as u64;
        }
        assert_eq!(int(get(seg, "allocated_size")), sums[0]);
        assert_eq!(int(get(seg, "active_size")), sums[1]);
        assert_eq!(int(get(seg, "requested_size")), sums[2]);
    }
    // The labelled block carries its label as a frame.
    let weights = segments
        .iter()
        .flat_map(|s| list(get(s, "blocks")))
        .find(|b| int(get(b, "address")) == x.addr())
        .unwrap();
    let frames = list(get(weights, "frames"));
    assert_eq!(frames.len(), 1);
    assert_eq!(string(get(&frames[0], "name")), "weights");
    assert_eq!(string(get(&frames[0], "filename")), "<label>");
    assert_eq!(int(get(&frames[0], "line")), 0);
    // One of each state is present.
    let states: Vec<&str> = segments
        .iter()
        .flat_map(|s| list(get(s, "blocks")))
        .map(|b| string(get(b, "state")))
        .collect();
    for s in ["active_allocated", "active_pending_free", "inactive"] {
        assert!(states.contains(&s), "{states:?}");
    }

    // Traces: one device, entry for entry the recorded events.
    let traces = list(get(&v, "device_traces"));
    assert_eq!(traces.len(), 1);
    let entries = list(&traces[0]);
    assert_eq!(entries.len(), h.events.len());
    for (entry, e) in entries.iter().zip(&h.events) {
        assert_eq!(string(get(entry, "action")), e.action.torch_name());
        match e.action {
            TraceAction::Oom { device_free } => {
                assert_eq!(
                    keys(entry),
                    [
                        "action",
                        "device_free",
                        "frames",
                        "size",
                        "stream",
                        "time_us"
                    ]
                );
                assert_eq!(int(get(entry, "device_free")), device_free as u64);
            }
            _ => {
                assert_eq!(
                    keys(entry),
                    ["action", "addr", "frames", "size", "stream", "time_us"]
                );
                assert_eq!(int(get(entry, "addr")), e.addr);
            }
        }
        assert_eq!(int(get(entry, "size")), e.size as u64);
        assert_eq!(int(get(entry, "stream")), e.stream.0);
        assert_eq!(int(get(entry, "time_us")), e.time_us);
        assert_eq!(
            list(get(entry, "frames")).len(),
            usize::from(e.label.is_some())
        );
    }
    let actions: Vec<&str> = entries.iter().map(|e| string(get(e, "action"))).collect();
    assert_eq!(
        actions,
        [
            "segment_alloc",
            "alloc",
            "segment_alloc",
            "alloc",
            "alloc",
            "oom",
            "free_requested"
        ]
    );
    a.free(x).unwrap();
    a.free(y).unwrap();
}

#[test]
#[cfg(feature = "plots")]
fn write_svgs_draws_both_plots_with_the_labels_and_segments() {
    let a = recording(256 * MIB);
    let x = with_alloc_label("adam step", || a.allocate(30 * MIB, S0)).unwrap();
    let y = a.allocate(4000, S1).unwrap();
    let dir = std::env::temp_dir().join(format!("tt_svgs_{}", std::process::id()));
    let [timeline, segments] = a.history().write_svgs(&dir).unwrap();
    let t = std::fs::read_to_string(&timeline).unwrap();
    let s = std::fs::read_to_string(&segments).unwrap();
    assert!(t.starts_with("<svg") && s.starts_with("<svg"));
    // The largest allocation is named in the legend with its size.
    assert!(t.contains("adam step (30.00 MiB)"), "{t}");
    assert!(t.contains("reserved (segments)"));
    // One row label per segment, with its size and pool.
    assert!(
        s.contains("30.00 MiB large") && s.contains("2.00 MiB small"),
        "{s}"
    );
    assert!(s.contains("allocated, stream 0x7"));
    std::fs::remove_dir_all(&dir).unwrap();
    a.free(x).unwrap();
    a.free(y).unwrap();
}
