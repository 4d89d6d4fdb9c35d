//! A first tour: tensors, views, broadcasting, pointwise ops, a mask and `where_cond`, and an
//! ndarray round trip. Runs anywhere; the GPU part is added where a GPU exists.
//!
//! `cargo run --example quickstart`

use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;
use typestate_tensor::Result;

fn main() -> Result<()> {
    // A 2x3 matrix and a row vector, both on the CPU.
    let a = Tensor::from_vec(&[2, 3], vec![0.5f32, -1.0, 2.0, 3.0, -0.25, 1.5])?;
    let row = Tensor::from_vec(&[3], vec![10.0f32, 20.0, 30.0])?;
    println!("a =\n{a}");

    // Views never copy: a transposed, flipped view of `a`.
    let at = a.t().flip(0)?;
    println!(
        "a.t().flip(0) (shape {:?}, strides {:?}) =\n{at}",
        at.shape(),
        at.strides()
    );

    // Broadcasting add: the row is added to every row of `a`. Errors are values, not panics.
    let sum = (&a + &row)?;
    println!("a + row =\n{sum}");
    if let Err(e) = &a + &Tensor::<f32>::zeros(&[2])? {
        println!("a + zeros([2]) -> error: {e}");
    }

    // Pointwise math, out of place and in place.
    let e = a.exp()?;
    println!("exp(a) =\n{e}");
    let mut g = a.clone();
    g.gelu_()?;
    println!("gelu(a) in place =\n{g}");

    // A comparison gives a bool mask; `where_cond` selects with it.
    let positive = a.gt(&Tensor::scalar(0.0f32))?;
    let relu_by_hand = Tensor::where_cond(&positive, &a, &Tensor::scalar(0.0f32))?;
    println!("a > 0 =\n{positive}\nwhere(a > 0, a, 0) =\n{relu_by_hand}");
    assert_eq!(relu_by_hand.to_vec(), a.relu()?.to_vec());

    // Explicit conversion is the only way to change element type.
    let counts = a.mul_scalar(4.0)?.cast::<i32>()?;
    println!("(4a) as i32 =\n{counts}");

    #[cfg(feature = "ndarray")]
    ndarray_round_trip(&a)?;
    println!(
        "sum {}, sum of |x| {}, sum of squares {}",
        a.sum()?.item()?,
        a.asum(),
        a.sumsq()
    );

    if !Gpu::available() {
        println!("no GPU: ran on the CPU");
        return Ok(());
    }
    // The same ops on the GPU: upload, compute with NVRTC-compiled strided kernels, download.
    let gpu = Gpu::new(0)?;
    println!("GPU: {}", gpu.device_name());
    let (ga, grow) = (a.to_gpu(&gpu)?, row.to_gpu(&gpu)?);
    let gsum = (&ga + &grow)?.to_cpu()?;
    let gflip = ga.t().flip(0)?.exp()?.to_cpu()?;
    assert_eq!(gsum.to_vec(), sum.to_vec(), "GPU and CPU agree on a + row");
    let cpu_flip = at.exp()?;
    for (g, c) in gflip.to_vec().iter().zip(cpu_flip.to_vec()) {
        assert!(
            (g - c).abs() <= 1e-6 * c.abs().max(1.0),
            "exp: GPU {g} vs CPU {c}"
        );
    }
    println!("on the GPU: a + row =\n{gsum}\nexp(a.t().flip(0)) =\n{gflip}");
    println!(
        "GPU allocator: {} ({} bytes reserved)",
        gpu.allocator().name(),
        gpu.allocator_stats().reserved_bytes.current
    );
    Ok(())
}

/// ndarray round trip (the `ndarray` feature, on by default): borrow an ndarray view (no
/// copy, negative strides kept), compute, and hand the result back as an ndarray.
#[cfg(feature = "ndarray")]
fn ndarray_round_trip(a: &Tensor<f32>) -> typestate_tensor::Result<()> {
    let nd = ndarray::Array2::from_shape_fn((3, 2), |(i, j)| (i * 2 + j) as f32);
    let mut flipped = nd.view();
    flipped.invert_axis(ndarray::Axis(0));
    let borrowed = typestate_tensor::TensorView::from_ndarray(flipped)?;
    println!(
        "borrowed ndarray view: shape {:?}, strides {:?}",
        borrowed.shape(),
        borrowed.strides()
    );
    let back = (&borrowed + &a.t())?.to_ndarray()?;
    println!("flipped ndarray + a.t() =\n{back}");
    Ok(())
}
