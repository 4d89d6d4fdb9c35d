//! Several threads allocating, writing, checking and freeing random sizes on one allocator.

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::error::AllocError;
use typestate_tensor::storage::{Block, StreamId};

use super::{assert_consistent, empty_and_assert_released, pattern, Inspect, SuiteSource, KIB};

/// Blocks up to this size are written and checked in full; larger ones at both ends.
const FULL_CHECK: usize = 64 * KIB;

fn write_all<S: SuiteSource>(source: &S, block: &Block, seed: u64) {
    if block.requested() <= FULL_CHECK {
        source.suite_write(block.addr(), &pattern(seed, block.requested()));
    } else {
        super::fill(source, block, seed);
    }
}

fn check_all<S: SuiteSource>(source: &S, block: &Block, seed: u64) {
    if block.requested() <= FULL_CHECK {
        assert_eq!(
            source.suite_read(block.addr(), block.requested()),
            pattern(seed, block.requested()),
            "block {:#x} of {} bytes was overwritten",
            block.addr(),
            block.requested()
        );
    } else {
        super::check(source, block, seed);
    }
}

/// Runs `threads` threads of `iterations` random steps on `a`, then checks the allocator
/// and that everything returns to the source.
pub fn stress<S, A>(a: Arc<A>, threads: u64, iterations: usize, max_size: usize)
where
    S: SuiteSource,
    A: Inspect<S> + 'static,
{
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let a = Arc::clone(&a);
            std::thread::spawn(move || worker(&*a, t, threads, iterations, max_size))
        })
        .collect();
    let mut allocations = 0;
    for worker in workers {
        allocations += worker.join().expect("worker panicked");
    }
    assert_eq!(a.stats().num_allocs, allocations);
    assert_consistent(&*a, &[]);
    for stream in 0..=threads {
        a.source().suite_complete(StreamId(stream));
    }
    empty_and_assert_released(&*a);
    if let Some(live) = a.source().suite_live() {
        assert_eq!(live, (0, 0));
    }
}

/// One thread's work; returns how many allocations it made.
fn worker<S: SuiteSource, A: Inspect<S>>(
    a: &A,
    t: u64,
    threads: u64,
    iterations: usize,
    max_size: usize,
) -> u64 {
    let mut rng = SmallRng::seed_from_u64(0x5eed ^ t);
    let own = StreamId(t + 1);
    let mut live: Vec<(Block, u64)> = Vec::new();
    let mut allocations = 0;
    for i in 0..iterations {
        let seed = (t << 40) | i as u64;
        if live.is_empty() || (live.len() < 8 && rng.gen_bool(0.55)) {
            let size = match rng.gen_range(0..10) {
                0..=5 => rng.gen_range(1..=4 * KIB),
                6..=8 => rng.gen_range(4 * KIB..=FULL_CHECK),
                _ => rng.gen_range(FULL_CHECK..=max_size),
            };
            let stream = if rng.gen_bool(0.3) { StreamId(0) } else { own };
            match a.allocate(size, stream) {
                Ok(block) => {
                    allocations += 1;
                    write_all(a.source(), &block, seed);
                    live.push((block, seed));
                }
                Err(AllocError::OutOfMemory(_)) => {}
                Err(e) => panic!("thread {t}: {e}"),
            }
        } else {
            let (block, seed) = live.swap_remove(rng.gen_range(0..live.len()));
            check_all(a.source(), &block, seed);
            if rng.gen_bool(0.2) {
                let other = StreamId(rng.gen_range(0..=threads));
                a.record_stream(&block, other).unwrap();
            }
            if rng.gen_bool(0.05) {
                a.free_direct(block).unwrap();
            } else {
                a.free(block).unwrap();
            }
        }
        if i % 16 == 0 {
            a.source()
                .suite_complete(StreamId(rng.gen_range(0..=threads)));
        }
        for (block, seed) in live.iter().take(2) {
            check_all(a.source(), block, *seed);
        }
    }
    for (block, seed) in live {
        check_all(a.source(), &block, seed);
        a.free(block).unwrap();
    }
    allocations
}
