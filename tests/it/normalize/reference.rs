//! The `f64` host reference of the normalisations (issue 28), over plain row-major vectors:
//! independent of the crate's code (no tensor op is used), written from PyTorch's formulas.

/// For each kept index (row-major over the dims not in `chosen`, in their order), the flat
/// row-major indices of its elements over the `chosen` dims.
pub fn lines(shape: &[usize], chosen: &[usize]) -> Vec<Vec<usize>> {
    let rank = shape.len();
    let strides: Vec<usize> = (0..rank).map(|d| shape[d + 1..].iter().product()).collect();
    let kept: Vec<usize> = (0..rank).filter(|d| !chosen.contains(d)).collect();
    let count = |dims: &[usize]| dims.iter().map(|&d| shape[d]).product::<usize>();
    let offsets = |dims: &[usize]| -> Vec<usize> {
        (0..count(dims))
            .map(|mut i| {
                let mut off = 0;
                for &d in dims.iter().rev() {
                    off += (i % shape[d]) * strides[d];
                    i /= shape[d];
                }
                off
            })
            .collect()
    };
    let inner = offsets(chosen);
    offsets(&kept)
        .into_iter()
        .map(|base| inner.iter().map(|o| base + o).collect())
        .collect()
}

fn max_nan(x: &[f64]) -> f64 {
    x.iter().fold(
        f64::NEG_INFINITY,
        |m, &v| if v.is_nan() || v > m { v } else { m },
    )
}

/// Softmax (or log-softmax) of one line, as PyTorch defines it.
pub fn softmax(x: &[f64], log: bool) -> Vec<f64> {
    let m = max_nan(x);
    let s: f64 = x.iter().map(|v| (v - m).exp()).sum();
    x.iter()
        .map(|v| {
            if log {
                v - m - s.ln()
            } else {
                (v - m).exp() / s
            }
        })
        .collect()
}

/// `(value, mean)` of a statistic of one line: `"lse"`, `"var"`, `"std"`, `"l1"`, `"l2"`,
/// `"inf"`.
pub fn stat(kind: &str, x: &[f64], correction: f64) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - correction).max(0.0);
    let v = match kind {
        "lse" => {
            let m = max_nan(x);
            let m = if m.is_infinite() { 0.0 } else { m };
            x.iter().map(|v| (v - m).exp()).sum::<f64>().ln() + m
        }
        "var" => var,
        "std" => var.sqrt(),
        "l1" => x.iter().map(|v| v.abs()).sum(),
        "l2" => x.iter().map(|v| v * v).sum::<f64>().sqrt(),
        "inf" => x.iter().fold(0.0, |m: f64, v| {
            if v.is_nan() || v.abs() > m {
                v.abs()
            } else {
                m
            }
        }),
        _ => unreachable!("{kind}"),
    };
    (v, mean)
}

/// Layer norm (`rms = false`) or RMS norm of one line, with an optional weight and bias.
pub fn norm_line(x: &[f64], w: Option<&[f64]>, b: Option<&[f64]>, eps: f64, rms: bool) -> Vec<f64> {
    let n = x.len() as f64;
    let mean = if rms { 0.0 } else { x.iter().sum::<f64>() / n };
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let r = 1.0 / (var + eps).sqrt();
    x.iter()
        .enumerate()
        .map(|(j, v)| {
            let y = (v - mean) * r * w.map_or(1.0, |w| w[j]);
            y + b.map_or(0.0, |b| b[j])
        })
        .collect()
}
