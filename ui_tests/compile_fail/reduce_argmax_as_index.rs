// Indexing with an `argmax` result (a tensor): the message says to read it with
// `.item()? as usize`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::from_vec(&[3], vec![1.0f32, 5.0, 2.0]).unwrap();
    let i = x.argmax().unwrap();
    let _ = x[i];
}
