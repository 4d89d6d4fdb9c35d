use typestate_tensor::tensor::{expr, Tensor};

fn main() {
    let a = Tensor::<f32>::zeros(&[2]).unwrap();
    // The mask of `where_cond` must be bool: a comparison such as `a.lazy().gt(0.0f32)`.
    let _ = expr::where_cond(a.lazy(), &a, 0.0f32);
}
