// The GPU multiplies floats only (cuBLASLt has no integer GEMM with PyTorch's wrapping
// semantics): an `i32` product on the GPU does not compile, and the message names the
// element types it takes. The CPU multiplies integers.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn product(a: &Tensor<i32, Gpu>, b: &Tensor<i32, Gpu>) {
    let _ = a.matmul(b);
}

fn main() {}
