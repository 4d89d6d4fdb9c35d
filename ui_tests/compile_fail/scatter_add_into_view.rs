// `scatter_add_` writes in place, so it needs a writable tensor: a read-only view (here a
// transposed `TensorView`) is refused at compile time, not at run time.
use typestate_tensor::tensor::Tensor;

fn add(x: &Tensor<f32>, index: &Tensor<i64>, src: &Tensor<f32>) {
    let mut view = x.t();
    let _ = view.scatter_add_(0, index, src);
}

fn main() {}
