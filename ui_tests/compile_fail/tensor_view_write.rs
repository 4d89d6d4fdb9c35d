// Writing through a read-only `TensorView`: take a writable view with `view_mut()`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let a = Tensor::<f32>::zeros(&[2, 2]).unwrap();
    let mut v = a.t();
    let _ = v.exp_();
    let _ = v.fill_(1.0);
    let _ = a.exp_into(&mut a.view());
}
