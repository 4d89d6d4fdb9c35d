// A scalar operand has the tensor's element type: `0.0f32` (or `0.0`), not `0.0f64`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[3]).unwrap();
    let _ = x.gt(0.0f64);
}
