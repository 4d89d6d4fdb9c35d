// `update` on a read-only view (`x.t()`; the fix is `x.view_mut().t()`): E0599 names the unmet
// `WriteRepr` bound, not its message, while the bound sits on the impl block in src/tensor/expr.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[2, 3]).unwrap();
    x.t().update(|c| c * 2.0f32).unwrap();
}
