//! Tensor transfers between the CPU and a GPU on random shapes and strided layouts, checked
//! element by element against the host tensor. Skips with a printed line without a GPU.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn gpu() -> Option<Gpu> {
    if !Gpu::available() {
        eprintln!("skipping: no CUDA driver");
        return None;
    }
    Some(Gpu::new(0).expect("GPU 0"))
}

fn random_tensor(rng: &mut SmallRng) -> Tensor<f32> {
    let rank = rng.gen_range(0..5);
    let shape: Vec<usize> = (0..rank).map(|_| rng.gen_range(1..9)).collect();
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        &shape,
        (0..n).map(|_| rng.gen_range(-4.0f32..4.0) + 0.1).collect(),
    )
    .unwrap()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn round_trips_of_strided_tensors_keep_every_element() -> typestate_tensor::Result<()> {
    let Some(gpu) = gpu() else { return Ok(()) };
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..50 {
        let t = random_tensor(&mut rng);
        // A strided host view: transposed and, where possible, flipped.
        let mut view = t.t();
        if view.rank() > 0 {
            view = view.flip(0)?;
        }
        let strided = view.contiguous()?; // reference values in logical order
        let on_gpu = t.to_gpu(&gpu)?;
        assert_eq!(on_gpu.shape(), t.shape());
        assert_eq!(on_gpu.to_cpu()?.to_vec(), t.to_vec());
        // A strided GPU view comes back row-major with the same logical elements.
        let mut gview = on_gpu.t();
        if gview.rank() > 0 {
            gview = gview.flip(0)?;
        }
        assert_eq!(gview.contiguous()?.to_cpu()?.to_vec(), strided.to_vec());
        // Device-to-device copy.
        assert_eq!(on_gpu.to_gpu_copy()?.to_cpu()?.to_vec(), t.to_vec());
    }
    gpu.check_err()?;
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn async_transfers_borrow_host_memory_until_done() -> typestate_tensor::Result<()> {
    let Some(gpu) = gpu() else { return Ok(()) };
    let stream = gpu.new_stream()?;
    let mut rng = SmallRng::seed_from_u64(11);
    let t = Tensor::from_vec(
        &[64, 33],
        (0..64 * 33).map(|_| rng.gen_range(0.5f32..9.0)).collect(),
    )?;
    let (on_gpu, upload) = t.to_gpu_async(&gpu, &stream)?;
    upload.wait()?;
    let mut back = Tensor::<f32>::zeros(&[64, 33])?;
    on_gpu.to_cpu_async(&mut back, &stream)?.wait()?;
    assert_eq!(back.to_vec(), t.to_vec());
    // Wrong shapes and non-row-major host tensors are typed errors.
    let mut wrong = Tensor::<f32>::zeros(&[33, 64])?;
    assert!(matches!(
        on_gpu.to_cpu_async(&mut wrong, &stream),
        Err(Error::Layout(LayoutError::ShapeMismatch { .. }))
    ));
    let transposed = t.t().contiguous()?;
    let strided = Tensor::from_parts(
        transposed.storage().clone(),
        transposed.layout().t(),
        typestate_tensor::Cpu,
    )?;
    assert!(matches!(
        strided.to_gpu_async(&gpu, &stream),
        Err(Error::Layout(LayoutError::NotDense { .. }))
    ));
    gpu.check_err()?;
    Ok(())
}

/// Views transfer as owned tensors do, in both directions and on any stream (`Gpu::on`):
/// `host.t().to_gpu(..)`, `g.t().to_cpu()`, a narrowed view, each element checked.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn views_transfer_in_both_directions() -> typestate_tensor::Result<()> {
    let Some(gpu) = gpu() else { return Ok(()) };
    let side = gpu.on(&gpu.new_stream()?)?;
    let mut rng = SmallRng::seed_from_u64(11);
    for _ in 0..20 {
        let t = random_tensor(&mut rng);
        let want_t = t.t().contiguous()?.to_vec();
        for dev in [&gpu, &side] {
            // Up from a host view, down from a GPU view.
            let up = t.t().to_gpu(dev)?;
            assert_eq!(up.to_cpu()?.to_vec(), want_t);
            let g = t.to_gpu(dev)?;
            assert_eq!(g.t().to_cpu()?.to_vec(), want_t);
            assert_eq!(g.view().to_cpu()?.to_vec(), t.to_vec());
            if t.rank() > 0 && t.shape()[0] > 1 {
                let n = t.shape()[0] - 1;
                let want = t.narrow(0, 1, n)?.contiguous()?.to_vec();
                assert_eq!(g.narrow(0, 1, n)?.to_cpu()?.to_vec(), want);
            }
        }
    }
    Ok(())
}
