// Indexing with `i32` entries: indices are `usize`; the message names `i as usize`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[2, 3]).unwrap();
    let (i, j): (i32, i32) = (1, 2);
    let _ = x[[i, j]];
}
