//! A repeated fused evaluation allocates nothing on the host (issue 9: a cached fused launch
//! costs about what an eager op does). This binary's global allocator counts the heap
//! allocations of the calling thread; each test warms an evaluation up (first calls compile
//! kernels, fill the plan cache and the program buffers), then counts the allocations of
//! many more.
//!
//! - On the CPU engine: the shared front of every evaluation (the shape and broadcast checks,
//!   the current-value checks) and the CPU pass, for one and three outputs, in place, with
//!   broadcast, transposed and flipped leaves.
//! - On the GPU (`gpu-tests`): the whole cached launch, `eval_into` and an in-place Adam
//!   step (3 outputs), including building the program the code generator reads (on every
//!   launch), the plan-cache hit and the driver call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use half::f16;
use typestate_tensor::tensor::{expr, Tensor};

/// Counts the calling thread's allocations, then allocates from the system.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: during thread teardown the counter may be gone; nothing to count then.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract holds exactly as for `System`; counting touches only a
// thread-local `Cell` (const-initialised, no destructor), which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded from this method's contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded from this method's contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded from this method's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded from this method's contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Heap allocations of this thread while `f` runs `times` times (after `f` ran twice, to
/// warm up).
fn allocations(times: usize, mut f: impl FnMut()) -> u64 {
    f();
    f();
    let before = ALLOCATIONS.with(Cell::get);
    for _ in 0..times {
        f();
    }
    ALLOCATIONS.with(Cell::get) - before
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

/// The counter counts: a `Vec` made in `f` is seen.
#[test]
fn the_counter_sees_allocations() {
    let n = allocations(10, || {
        std::hint::black_box(vec![1u8; 64]);
    });
    assert_eq!(n, 10);
}

/// `sigmoid(tanh(exp(-abs(a*b+c))*0.5+a))*c-b` (the benchmark's f16 chain) into an existing
/// output, a broadcast and transposed gelu chain with two outputs, and an in-place Adam step,
/// on the CPU engine.
#[test]
fn cpu_fused_evaluations_allocate_nothing_when_repeated() {
    let n = 300;
    let h = |seed| {
        Tensor::<f16>::from_vec(
            &[n],
            values(n, seed).into_iter().map(f16::from_f32).collect(),
        )
        .unwrap()
    };
    let (a, b, c) = (h(1), h(2), h(3));
    let half = f16::from_f32(0.5);
    let mut out = Tensor::<f16>::zeros(&[n]).unwrap();
    let chain = allocations(50, || {
        (((-(a.lazy() * &b + &c).abs()).exp() * half + &a)
            .tanh()
            .sigmoid()
            * &c
            - &b)
            .eval_into(&mut out)
            .unwrap();
    });
    assert_eq!(chain, 0, "the f16 chain allocated");

    // Broadcast row, transposed and flipped leaves, two outputs.
    let x = Tensor::from_vec(&[24, 17], values(24 * 17, 4)).unwrap();
    let row = Tensor::from_vec(&[17], values(17, 5)).unwrap();
    let xt = Tensor::from_vec(&[17, 24], values(17 * 24, 6)).unwrap();
    let (mut o1, mut o2) = (
        Tensor::<f32>::zeros(&[24, 17]).unwrap(),
        Tensor::<f32>::zeros(&[24, 17]).unwrap(),
    );
    let two = allocations(50, || {
        let t = xt.t();
        let flipped = x.flip(0).unwrap();
        expr::eval_into(
            (
                (x.lazy() * &row + &t).gelu(),
                (flipped.lazy() - &row).maximum(&t),
            ),
            (&mut o1, &mut o2),
        )
        .unwrap();
    });
    assert_eq!(two, 0, "two outputs over strided leaves allocated");

    // Adam, in place: three outputs read as current values.
    let g = Tensor::from_vec(&[n], values(n, 7)).unwrap();
    let mut p = Tensor::from_vec(&[n], values(n, 8)).unwrap();
    let (mut m, mut v) = (
        Tensor::<f32>::zeros(&[n]).unwrap(),
        Tensor::<f32>::zeros(&[n]).unwrap(),
    );
    let adam = allocations(50, || {
        expr::update((&mut p, &mut m, &mut v), |(p, m, v)| {
            let m = m * 0.9f32 + g.lazy() * 0.1f32;
            let v = v * 0.999f32 + g.lazy().square() * 0.001f32;
            (p - m.clone() * 1e-3f32 / (v.clone().sqrt() + 1e-8f32), m, v)
        })
        .unwrap();
    });
    assert_eq!(adam, 0, "the in-place Adam step allocated");
    // And it computed: the moments moved off zero.
    assert!(m.to_vec().iter().any(|&x| x != 0.0));
}

/// The GPU path of `cpu_fused_evaluations_allocate_nothing_when_repeated`: the chain and the
/// in-place Adam step, launched from the plan cache.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn gpu_cached_fused_launches_allocate_nothing() {
    use typestate_tensor::gpu::Gpu;
    if !Gpu::available() {
        println!("gpu_cached_fused_launches_allocate_nothing: skipped, no CUDA driver or GPU");
        return;
    }
    let gpu = Gpu::new(0).unwrap();
    let n = 1024;
    let h = |seed| {
        Tensor::<f16>::from_vec(
            &[n],
            values(n, seed).into_iter().map(f16::from_f32).collect(),
        )
        .unwrap()
        .to_gpu(&gpu)
        .unwrap()
    };
    let (a, b, c) = (h(1), h(2), h(3));
    let half = f16::from_f32(0.5);
    let mut out = Tensor::<f16, typestate_tensor::gpu::Gpu>::zeros_on(&[n], &gpu).unwrap();
    let chain = allocations(100, || {
        (((-(a.lazy() * &b + &c).abs()).exp() * half + &a)
            .tanh()
            .sigmoid()
            * &c
            - &b)
            .eval_into(&mut out)
            .unwrap();
    });
    // The same chain on the CPU: fused on the GPU equals it within the op table's
    // tolerances (tests/it/fused.rs checks bits against eager; here, that it ran).
    let host = out.to_cpu().unwrap().to_vec();
    assert!(host.iter().all(|x| x.is_finite()));
    assert_eq!(chain, 0, "the cached f16 chain allocated on the host");

    let up = |seed| {
        Tensor::from_vec(&[n], values(n, seed))
            .unwrap()
            .to_gpu(&gpu)
            .unwrap()
    };
    let g = up(7);
    let (mut p, mut m, mut v) = (up(8), up(9), up(10));
    let adam = allocations(100, || {
        expr::update((&mut p, &mut m, &mut v), |(p, m, v)| {
            let m = m * 0.9f32 + g.lazy() * 0.1f32;
            let v = v * 0.999f32 + g.lazy().square() * 0.001f32;
            (
                p - m.clone() * 1e-3f32 / (v.clone().abs().sqrt() + 1e-8f32),
                m,
                v,
            )
        })
        .unwrap();
    });
    assert_eq!(
        adam, 0,
        "the cached in-place Adam step allocated on the host"
    );
    gpu.synchronize().unwrap();
}
