// TF32 is an option of `f32` products only: asking for it on an `f16` product (which runs on
// tensor cores in `f16` already) does not compile.
use half::f16;
use typestate_tensor::tensor::Tensor;

fn product(a: &Tensor<f16>, b: &Tensor<f16>) {
    let _ = a.matmul_with(b).allow_tf32().eval();
}

fn main() {}
