// `prod` of a bool mask (an "all" test): masks have no arithmetic; the message names
// `.cast::<u8>()`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[3]).unwrap();
    let all = x.gt(0.0).unwrap().prod();
    let _ = all;
}
