// A blob's GPU-side gemm takes GPU operands: CPU views do not compile.
use typestate_tensor::synced::blob::Transpose;
use typestate_tensor::synced::{Blob, HeadAtGpu};
use typestate_tensor::tensor::Tensor;

fn backward(w: &mut Blob<f32, HeadAtGpu>, dy: &Tensor<f32>, x: &Tensor<f32>) {
    let _ = w.gpu_gemm_diff(Transpose::Yes, Transpose::No, 4, 8, 16, 1.0, &dy.view(), &x.view(), 0.0);
}

fn main() {}
