// A user node type would describe itself to the code generator: `Node` is sealed, so the
// only nodes are the crate's (built by operators and op methods on `Expr`).
use typestate_tensor::tensor::expr::node::Node;
use typestate_tensor::Cpu;

#[derive(Clone)]
struct Planted;

impl Node<Cpu> for Planted {}

fn main() {}
