// Issue 24, forging path 3: `Program::op("exp", "a * 2")` in a user job poisoned the kernel
// cache for the real `exp`. Programs are built only from the op table, inside the crate.
use typestate_tensor::tensor::expr::program::Program;

fn main() {
    let _ = Program::<typestate_tensor::Cpu>::default();
}
