//! The host reference of a batched matrix product, shared by the matmul tests.

/// Host `act(a·b + bias)` of row-major `[batch, m, k]` and `[batch, k, n]` values in `f64`,
/// with each element's error scale `Σ|a||b| + |bias|` (what a summation in any order can
/// lose is bounded by a multiple of it).
pub fn reference(
    a: &[f64],
    b: &[f64],
    bias: Option<&[f64]>,
    (batch, m, k, n): (usize, usize, usize, usize),
    act: impl Fn(f64) -> f64,
) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(batch * m * n);
    for q in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let (mut s, mut g) = (0.0, 0.0);
                for p in 0..k {
                    let x = a[q * m * k + i * k + p] * b[q * k * n + p * n + j];
                    s += x;
                    g += x.abs();
                }
                let c = bias.map_or(0.0, |v| v[j]);
                out.push((act(s + c), g + c.abs()));
            }
        }
    }
    out
}

/// [`reference`] of a plain product (no bias, no activation).
pub fn product(a: &[f64], b: &[f64], dims: (usize, usize, usize, usize)) -> Vec<(f64, f64)> {
    reference(a, b, None, dims, |x| x)
}
