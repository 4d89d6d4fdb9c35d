// `max` and `argmax` take numeric tensors; a bool mask counts with `sum` (an i64).
use typestate_tensor::tensor::Tensor;

fn main() {
    let m = Tensor::from_vec(&[3], vec![true, false, true]).unwrap();
    let _ = m.sum();
    let _ = m.argmax();
}
