// `eval_into` a read-only view: the output must be writable; the message names `view_mut()`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let a = Tensor::<f32>::zeros(&[2, 3]).unwrap();
    let out = Tensor::<f32>::zeros(&[3, 2]).unwrap();
    (a.lazy() * 2.0f32).eval_into(&mut out.t()).unwrap();
}
