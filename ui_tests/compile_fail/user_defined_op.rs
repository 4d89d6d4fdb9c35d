// The op traits are sealed: a user-defined op would be CUDA code pasted into a kernel and
// launched from safe functions. Ops come from the crate's table.
use typestate_tensor::ops::UnaryOp;

#[derive(Clone, Copy)]
struct Evil;

impl UnaryOp<f32> for Evil {
    type Output = f32;
    const NAME: &'static str = "evil\n#include <x>";
    const CUDA: &'static str = "a; asm(\"trap;\")";
    fn cpu(&self, a: f32) -> f32 {
        a
    }
}

fn main() {}
