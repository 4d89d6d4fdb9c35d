// `-mask` to invert a bool mask: the method form names `mask.eq(false)` and `.cast::<f32>()`;
// the operator form gets rustc's E0600 (see the lead's report for why).
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[3]).unwrap();
    let m = x.gt(0.0).unwrap();
    let _ = m.neg();
    let _ = -&m;
}
