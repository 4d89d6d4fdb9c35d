//! CPU pointwise benchmarks (being written).
fn main() {}
