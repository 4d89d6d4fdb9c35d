// `sum_dim(d)` without `keepdim`: rustc names the missing `bool` argument.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[2, 3]).unwrap();
    let _ = x.sum_dim(1);
}
