// Softmax and the other normalisations take float tensors (PyTorch raises at run time on an
// integer softmax); here it does not compile, and the message says to cast first.
use typestate_tensor::tensor::Tensor;

fn probabilities(logits: &Tensor<i32>) {
    let _ = logits.softmax(-1);
}

fn main() {}
