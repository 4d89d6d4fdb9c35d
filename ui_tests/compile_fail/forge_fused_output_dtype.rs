// Issue 24, forging path 2: a `FusedOutput` whose `dtype` said `F64` over an `f32` storage
// overwrote the next allocation. Outputs are built only by the crate's evaluators.
use typestate_tensor::tensor::expr::FusedOutput;

fn main() {}
