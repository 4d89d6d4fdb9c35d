// `mean` takes float tensors (PyTorch refuses integer means too): the message names `cast`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::from_vec(&[3], vec![1i32, 2, 4]).unwrap();
    let _ = x.mean();
}
