// `a.add(&b)` on bool masks: the message names `.cast::<u8>()` (masks have no arithmetic).
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[3]).unwrap();
    let m = x.gt(0.0).unwrap();
    let _ = m.add(&m);
}
