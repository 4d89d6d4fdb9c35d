// An i32 sum is an i64 tensor (PyTorch's promotion); adding it back to the i32 tensor mixes
// element types: the message names `.cast::<i64>()`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::from_vec(&[2, 2], vec![1i32, 2, 3, 4]).unwrap();
    let rows = x.sum_dim(1, true).unwrap();
    let _ = &rows + &x;
}
