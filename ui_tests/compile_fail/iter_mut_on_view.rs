// `iter_mut` on a transposed read-only view (`x.t()`): the message names `x.view_mut().t()`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let mut x = Tensor::<f32>::zeros(&[2, 3]).unwrap();
    for v in x.t().iter_mut() {
        *v += 1.0;
    }
    let _ = &mut x;
}
