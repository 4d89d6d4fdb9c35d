//! The lean launch path on a real device: repeated launches take the per-thread plan cache
//! (`engine_gpu::kernel::launch`), and a cached plan must give the results of a fresh
//! one whatever changes between launches that the plan does not depend on (the buffers,
//! their contents, the scalars) and must not be reused when something it does depend on
//! changes (alignment, views, element types, the op).
//!
//! Every case compares the GPU with the CPU engine exactly (the ops are exactly rounded on
//! both), on random data. Each test prints `skipping: no CUDA driver` and returns when
//! `Gpu::available()` is false.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::engine_gpu::kernel::profile::{profile, Stage};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;
use typestate_tensor::Cpu;

fn gpu() -> Option<Gpu> {
    if !Gpu::available() {
        println!("skipping: no CUDA driver");
        return None;
    }
    Some(Gpu::new(0).expect("a GPU is available, so GPU 0 opens"))
}

fn random_f32(rng: &mut SmallRng, shape: &[usize]) -> Tensor<f32, Cpu> {
    let n = shape.iter().product();
    let data = (0..n).map(|_| rng.gen_range(-4.0f32..4.0)).collect();
    Tensor::from_vec(shape, data).unwrap()
}

fn random_i32(rng: &mut SmallRng, shape: &[usize]) -> Tensor<i32, Cpu> {
    let n = shape.iter().product();
    let data = (0..n).map(|_| rng.gen_range(-1000..1000)).collect();
    Tensor::from_vec(shape, data).unwrap()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn repeated_launches_with_new_buffers_views_and_scalars_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = SmallRng::seed_from_u64(0x1a0c);
    // A few signatures, visited in random order many times: most launches hit the cache,
    // with new buffers (fresh allocations), new contents, new scalars and new offsets.
    for round in 0..120 {
        let shape = [[8usize, 33], [33, 8], [4, 64], [16, 16]][rng.gen_range(0..4)];
        let a_host = random_f32(&mut rng, &[shape[0], shape[1] + 3]);
        let b_host = random_f32(&mut rng, &shape);
        let start = rng.gen_range(0..4); // 0 keeps 16-byte alignment, others break it
        let a_view = a_host.narrow(1, start, shape[1]).unwrap();
        let s: f32 = rng.gen_range(-3.0..3.0);
        let a_gpu = a_host.to_gpu(&gpu).unwrap();
        let b_gpu = b_host.to_gpu(&gpu).unwrap();
        let a_gview = a_gpu.narrow(1, start, shape[1]).unwrap();
        let transpose = rng.gen_bool(0.3);
        let (want, got) = if transpose && shape[0] == shape[1] {
            let want = (&a_view.t() + &b_host).unwrap().add_scalar(s).unwrap();
            let got = (&a_gview.t() + &b_gpu).unwrap().add_scalar(s).unwrap();
            (want, got)
        } else {
            let mut out = Tensor::<f32, Gpu>::zeros_on(&shape, &gpu).unwrap();
            out.fill_(f32::NAN).unwrap(); // poisoned: every element must be written
            a_gview.mul_into(&b_gpu, &mut out).unwrap();
            let got = out.add_scalar(s).unwrap();
            let want = a_view.mul(&b_host).unwrap().add_scalar(s).unwrap();
            (want, got)
        };
        assert_eq!(
            got.to_cpu().unwrap().to_vec(),
            want.to_vec(),
            "round {round}, shape {shape:?}, start {start}, transpose {transpose}"
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_cached_plan_is_not_reused_across_element_types_or_ops() {
    let Some(gpu) = gpu() else { return };
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..20 {
        let xf = random_f32(&mut rng, &[300]);
        let yf = random_f32(&mut rng, &[300]);
        let xi = random_i32(&mut rng, &[300]);
        let yi = random_i32(&mut rng, &[300]);
        let (gxf, gyf) = (xf.to_gpu(&gpu).unwrap(), yf.to_gpu(&gpu).unwrap());
        let (gxi, gyi) = (xi.to_gpu(&gpu).unwrap(), yi.to_gpu(&gpu).unwrap());
        // Same layouts and buffers sizes, other types and ops, interleaved.
        assert_eq!(
            gxf.add(&gyf).unwrap().to_cpu().unwrap().to_vec(),
            xf.add(&yf).unwrap().to_vec()
        );
        assert_eq!(
            gxi.add(&gyi).unwrap().to_cpu().unwrap().to_vec(),
            xi.add(&yi).unwrap().to_vec()
        );
        assert_eq!(
            gxf.sub(&gyf).unwrap().to_cpu().unwrap().to_vec(),
            xf.sub(&yf).unwrap().to_vec()
        );
        assert_eq!(
            gxi.mul(&gyi).unwrap().to_cpu().unwrap().to_vec(),
            xi.mul(&yi).unwrap().to_vec()
        );
        assert_eq!(
            gxf.maximum(&gyf).unwrap().to_cpu().unwrap().to_vec(),
            xf.maximum(&yf).unwrap().to_vec()
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn threads_launch_with_their_own_plans() {
    let Some(gpu) = gpu() else { return };
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let gpu = gpu.clone();
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + t);
                for _ in 0..30 {
                    let x = random_f32(&mut rng, &[257]);
                    let y = random_f32(&mut rng, &[257]);
                    let s: f32 = rng.gen_range(-2.0..2.0);
                    let got = x
                        .to_gpu(&gpu)
                        .unwrap()
                        .mul(&y.to_gpu(&gpu).unwrap())
                        .unwrap()
                        .mul_scalar(s)
                        .unwrap();
                    let want = x.mul(&y).unwrap().mul_scalar(s).unwrap();
                    assert_eq!(got.to_cpu().unwrap().to_vec(), want.to_vec());
                }
            });
        }
    });
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn the_profiler_sees_the_cached_path() {
    let Some(gpu) = gpu() else { return };
    let mut rng = SmallRng::seed_from_u64(3);
    let a = random_f32(&mut rng, &[1024]).to_gpu(&gpu).unwrap();
    let b = random_f32(&mut rng, &[1024]).to_gpu(&gpu).unwrap();
    let mut out = Tensor::<f32, Gpu>::zeros_on(&[1024], &gpu).unwrap();
    a.add_into(&b, &mut out).unwrap(); // the plan is cached from here on
    let ((), p) = profile(|| {
        for _ in 0..50 {
            a.add_into(&b, &mut out).unwrap();
        }
    });
    // `scripts/device/perf.sh launch` prints this (per launch, with the stage timers).
    println!("stage breakdown of a cached add_into, 1024 f32:\n{p}");
    assert_eq!(p.launches, 50);
    assert!(p.per_launch_us(Stage::Driver) > 0.0);
    assert!(p.per_launch_us(Stage::CacheHit) > 0.0);
    // Hits skip the miss path's stages.
    assert_eq!(p.per_launch_us(Stage::Collapse), 0.0);
    assert_eq!(p.per_launch_us(Stage::Lookup), 0.0);
    assert_eq!(
        out.to_cpu().unwrap().to_vec(),
        a.to_cpu()
            .unwrap()
            .add(&b.to_cpu().unwrap())
            .unwrap()
            .to_vec()
    );
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn repeated_fused_launches_with_new_buffers_views_and_scalars_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = SmallRng::seed_from_u64(0xf05e);
    for round in 0..80 {
        let shape = [[8usize, 33], [16, 16]][rng.gen_range(0..2)];
        let x_host = random_f32(&mut rng, &[shape[0], shape[1] + 2]);
        let y_host = random_f32(&mut rng, &shape);
        let start = rng.gen_range(0..3);
        let (s, t): (f32, f32) = (rng.gen_range(-2.0..2.0), rng.gen_range(-2.0..2.0));
        let x_view = x_host.narrow(1, start, shape[1]).unwrap();
        let x_gpu = x_host.to_gpu(&gpu).unwrap();
        let y_gpu = y_host.to_gpu(&gpu).unwrap();
        let x_gview = x_gpu.narrow(1, start, shape[1]).unwrap();
        // Out of place: a new output each round.
        let want = ((x_view.lazy() * s + &y_host) * t).eval().unwrap();
        let got = ((x_gview.lazy() * s + &y_gpu) * t).eval().unwrap();
        assert_eq!(
            got.to_cpu().unwrap().to_vec(),
            want.to_vec(),
            "round {round}"
        );
        // In place, into the (permuted when square) output.
        let mut z_host = y_host.clone();
        let mut z_gpu = y_gpu.try_clone().unwrap();
        if shape[0] == shape[1] && rng.gen_bool(0.5) {
            let (xt, xgt) = (x_view.t(), x_gview.t());
            z_host.view_mut().t().update(|z| z * s + &xt).unwrap();
            z_gpu.view_mut().t().update(|z| z * s + &xgt).unwrap();
        } else {
            z_host.update(|z| z * s + &x_view).unwrap();
            z_gpu.update(|z| z * s + &x_gview).unwrap();
        }
        assert_eq!(
            z_gpu.to_cpu().unwrap().to_vec(),
            z_host.to_vec(),
            "round {round}"
        );
    }
}

/// Runs a GPU op, eager and fused, from its `Drop`: held in a thread-local, it drops after
/// the engine's own thread-locals (the plan cache, the fused signature buffer, the
/// profiler's flag) may be gone, and must still launch (uncached) or report, never panic.
struct LaunchOnDrop(Option<(Gpu, std::sync::mpsc::Sender<Option<Vec<f32>>>)>);

impl Drop for LaunchOnDrop {
    fn drop(&mut self) {
        let Some((gpu, send)) = self.0.take() else {
            return;
        };
        let run = || -> typestate_tensor::Result<Vec<f32>> {
            let a = Tensor::from_vec(&[3], vec![1.0f32, -2.0, 3.5])?.to_gpu(&gpu)?;
            let b = Tensor::from_vec(&[3], vec![0.5f32, 4.0, -1.0])?.to_gpu(&gpu)?;
            let mut out = Tensor::<f32, Gpu>::zeros_on(&[3], &gpu)?;
            a.add_into(&b, &mut out)?;
            let fused = (a.lazy() * b.lazy() + out.lazy()).eval()?;
            Ok(fused.to_cpu()?.into_vec())
        };
        let _ = send.send(run().ok());
    }
}

thread_local! {
    static LATE_LAUNCH: std::cell::RefCell<LaunchOnDrop> =
        const { std::cell::RefCell::new(LaunchOnDrop(None)) };
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn launches_from_a_thread_local_destructor_run_without_a_panic() {
    let Some(gpu) = gpu() else { return };
    let (send, receive) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        // Registered before the engine's thread-locals (first use), so destroyed after them.
        LATE_LAUNCH.with(|late| *late.borrow_mut() = LaunchOnDrop(Some((gpu.clone(), send))));
        let x = Tensor::from_vec(&[2], vec![1.0f32, 2.0])
            .unwrap()
            .to_gpu(&gpu)
            .unwrap();
        let y = (x.lazy() + x.lazy()).eval().unwrap(); // the engine's thread-locals in use
        assert_eq!(y.to_cpu().unwrap().to_vec(), [2.0, 4.0]);
        let z = x.add(&x).unwrap();
        assert_eq!(z.to_cpu().unwrap().to_vec(), [2.0, 4.0]);
    });
    assert!(thread.join().is_ok(), "the thread exits without a panic");
    let got = receive.recv().expect("the destructor ran");
    // a + b = [1.5, 2.0, 2.5]; a * b + (a + b) = [0.5, -8.0, -3.5] + [1.5, 2.0, 2.5].
    assert_eq!(got, Some(vec![2.0, -6.0, -1.0]));
}
