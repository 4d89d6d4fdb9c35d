// Issue 24, forging path 1: a user `Fused` job with a `WriteBuffer` forged from the address
// of a `Synced` memory's GPU copy wrote through it while the type still said `Synced`. The
// job and buffer traits are the engine's, private: nothing to implement or name.
use typestate_tensor::gpu::fused::handles::{ReadBuffer, WriteBuffer};
use typestate_tensor::tensor::expr::Fused;

fn main() {}
