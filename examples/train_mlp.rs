//! A two-layer network trained on a synthetic regression task, with Caffe's Blobs as its
//! parameters, on the CPU and (where one exists) on the GPU: forward `h = relu(x·W1ᵀ + b1)`
//! (the bias and the activation fused into the product), `y = h·W2ᵀ + b2`; mean squared error
//! against a fixed random teacher network; backward `dW = dyᵀ·x`, `dx = dy·W` with Caffe's
//! gemm into the Blobs' diffs; SGD through the Blob's fused `sgd_update_in_place`. The loss
//! is printed as it falls, and the run fails unless it falls below a tenth of its start.
//!
//! `cargo run --release --example train_mlp`

use typestate_tensor::gpu::Gpu;
use typestate_tensor::synced::blob::{caffe_gemm, Transpose};
use typestate_tensor::synced::{Blob, HeadAtCpu, HeadAtGpu};
use typestate_tensor::tensor::matmul::MatmulBackend;
use typestate_tensor::tensor::{Backend, Tensor, TensorView, TensorViewMut};
use typestate_tensor::Cpu;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const SAMPLES: usize = 512;
const INPUTS: usize = 32;
const HIDDEN: usize = 64;
const OUTPUTS: usize = 4;
const STEPS: usize = 300;
const LR: f32 = 0.1;

/// Where a network lives: its parameters' Blob state, and how to reach their data and diff
/// as tensor views on this device (the Blob's typed views, which need the side current).
trait Place: Backend + MatmulBackend<f32> {
    /// The state of every parameter's data and diff.
    type Side: typestate_tensor::synced::blob::BlobSide;
    /// A parameter holding `init`, its diff allocated.
    fn param(&self, shape: &[usize], init: Vec<f32>) -> Res<Blob<f32, Self::Side>>;
    fn data(p: &Blob<f32, Self::Side>) -> Res<TensorView<'_, f32, Self>>;
    fn diff_mut(p: &mut Blob<f32, Self::Side>) -> Res<TensorViewMut<'_, f32, Self>>;
    /// `data -= lr · diff` in one fused pass.
    fn sgd(p: &mut Blob<f32, Self::Side>, lr: f32) -> Res<()>;
    fn upload(&self, t: &Tensor<f32, Cpu>) -> Res<Tensor<f32, Self>>;
}

impl Place for Cpu {
    type Side = HeadAtCpu;
    fn param(&self, shape: &[usize], init: Vec<f32>) -> Res<Blob<f32, HeadAtCpu>> {
        Ok(Blob::from_vec(shape, init)?.into_cpu_diff_mut()?)
    }
    fn data(p: &Blob<f32, HeadAtCpu>) -> Res<TensorView<'_, f32, Cpu>> {
        Ok(p.cpu_data_view()?)
    }
    fn diff_mut(p: &mut Blob<f32, HeadAtCpu>) -> Res<TensorViewMut<'_, f32, Cpu>> {
        Ok(p.cpu_diff_view_mut()?)
    }
    fn sgd(p: &mut Blob<f32, HeadAtCpu>, lr: f32) -> Res<()> {
        Ok(p.sgd_update_in_place(lr, 0.0)?)
    }
    fn upload(&self, t: &Tensor<f32, Cpu>) -> Res<Tensor<f32, Cpu>> {
        Ok(t.clone())
    }
}

impl Place for Gpu {
    type Side = HeadAtGpu;
    fn param(&self, shape: &[usize], init: Vec<f32>) -> Res<Blob<f32, HeadAtGpu>> {
        let mut blob = Blob::with_gpu(self, shape)?.into_cpu_data_mut()?;
        blob.cpu_data_mut().copy_from_slice(&init);
        Ok(blob.into_gpu_data_mut()?.into_gpu_diff_mut()?)
    }
    fn data(p: &Blob<f32, HeadAtGpu>) -> Res<TensorView<'_, f32, Gpu>> {
        Ok(p.gpu_data_view()?)
    }
    fn diff_mut(p: &mut Blob<f32, HeadAtGpu>) -> Res<TensorViewMut<'_, f32, Gpu>> {
        Ok(p.gpu_diff_view_mut()?)
    }
    fn sgd(p: &mut Blob<f32, HeadAtGpu>, lr: f32) -> Res<()> {
        Ok(p.sgd_update_in_place(lr, 0.0)?)
    }
    fn upload(&self, t: &Tensor<f32, Cpu>) -> Res<Tensor<f32, Gpu>> {
        Ok(t.to_gpu(self)?)
    }
}

/// Uniform values in `[-scale, scale)` from a seeded generator.
fn uniform(n: usize, seed: u64, scale: f32) -> Res<Vec<f32>> {
    Ok(Tensor::<f32>::rand(&[n], seed)?
        .to_vec()
        .into_iter()
        .map(|u| (2.0 * u - 1.0) * scale)
        .collect())
}

/// The data set: inputs and the targets a random teacher network gives them (computed on
/// the host, so both runs learn the same task).
fn data_set() -> Res<(Tensor<f32>, Tensor<f32>)> {
    let x = Tensor::from_vec(&[SAMPLES, INPUTS], uniform(SAMPLES * INPUTS, 1, 1.0)?)?;
    let w1 = Tensor::from_vec(&[HIDDEN, INPUTS], uniform(HIDDEN * INPUTS, 2, 0.5)?)?;
    let w2 = Tensor::from_vec(&[OUTPUTS, HIDDEN], uniform(OUTPUTS * HIDDEN, 3, 0.5)?)?;
    let h = x.matmul(&w1.t())?.tanh()?;
    let t = h.matmul(&w2.t())?;
    Ok((x, t))
}

/// Trains a fresh network on `dev`; returns the first and last loss.
fn train<P: Place>(dev: &P, name: &str) -> Res<(f32, f32)> {
    let (hx, ht) = data_set()?;
    let (x, t) = (dev.upload(&hx)?, dev.upload(&ht)?);
    let bound1 = 1.0 / (INPUTS as f32).sqrt();
    let bound2 = 1.0 / (HIDDEN as f32).sqrt();
    let mut w1 = dev.param(&[HIDDEN, INPUTS], uniform(HIDDEN * INPUTS, 10, bound1)?)?;
    let mut b1 = dev.param(&[HIDDEN], vec![0.0; HIDDEN])?;
    let mut w2 = dev.param(&[OUTPUTS, HIDDEN], uniform(OUTPUTS * HIDDEN, 11, bound2)?)?;
    let mut b2 = dev.param(&[OUTPUTS], vec![0.0; OUTPUTS])?;
    let (mut first, mut last) = (f32::NAN, f32::NAN);
    for step in 0..STEPS {
        // Forward: one call per layer, the bias (and the relu) fused into the product.
        let h = x
            .matmul_with(&P::data(&w1)?.t())
            .bias(&P::data(&b1)?)
            .relu()
            .eval()?;
        let y = h
            .matmul_with(&P::data(&w2)?.t())
            .bias(&P::data(&b2)?)
            .eval()?;
        let err = (&y - &t)?;
        let loss = err.sum_sq()?.item()? / (SAMPLES * OUTPUTS) as f32;
        if step == 0 {
            first = loss;
        }
        last = loss;
        if step % 50 == 0 || step == STEPS - 1 {
            println!("{name}: step {step:>3}  loss {loss:.6}");
        }
        // Backward. dL/dy = 2·err / (SAMPLES·OUTPUTS).
        let dy = err.mul_scalar(2.0 / (SAMPLES * OUTPUTS) as f32)?;
        // dW2 = dyᵀ·h ([OUTPUTS, SAMPLES]·[SAMPLES, HIDDEN]), Caffe's gemm into the diff.
        caffe_gemm(
            Transpose::Yes,
            Transpose::No,
            OUTPUTS,
            HIDDEN,
            SAMPLES,
            1.0,
            &dy.view(),
            &h.view(),
            0.0,
            &mut P::diff_mut(&mut w2)?,
        )?;
        P::diff_mut(&mut b2)?.copy_from(&dy.sum_dim(0, false)?)?;
        // dh = dy·W2, through the relu: zero where h is.
        let dh = dy.matmul(&P::data(&w2)?)?;
        let dh = dh.mul(&h.gt(0.0)?.cast::<f32>()?)?;
        caffe_gemm(
            Transpose::Yes,
            Transpose::No,
            HIDDEN,
            INPUTS,
            SAMPLES,
            1.0,
            &dh.view(),
            &x.view(),
            0.0,
            &mut P::diff_mut(&mut w1)?,
        )?;
        P::diff_mut(&mut b1)?.copy_from(&dh.sum_dim(0, false)?)?;
        // SGD: data -= lr · diff, one fused pass per parameter.
        for p in [&mut w1, &mut b1, &mut w2, &mut b2] {
            P::sgd(p, LR)?;
        }
    }
    Ok((first, last))
}

fn main() -> Res<()> {
    let mut runs = vec![("cpu", train(&Cpu, "cpu")?)];
    if Gpu::available() {
        let gpu = Gpu::new(0)?;
        runs.push(("gpu", train(&gpu, "gpu")?));
    } else {
        println!("no GPU: trained on the CPU only");
    }
    for (name, (first, last)) in runs {
        println!(
            "{name}: loss {first:.6} -> {last:.6} ({:.1}x lower)",
            first / last
        );
        if last.is_nan() || last >= first / 10.0 {
            return Err(format!("{name}: the loss did not fall below a tenth of its start").into());
        }
    }
    Ok(())
}
