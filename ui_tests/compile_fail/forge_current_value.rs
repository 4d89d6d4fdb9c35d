// Current values come only from an update's closure, branded for that call: there is no
// public constructor to make one for another update.
use typestate_tensor::tensor::expr;

fn main() {
    let _ = expr::current::<f32, typestate_tensor::Cpu, 0>();
}
