//! The GPU matmul against an f64 host reference (issue 27): random shapes (0, 1, odd sizes,
//! non-multiples of every tile), random layouts of every operand (transposed, permuted,
//! stepped, flipped, broadcast batch dims), every float type, TF32 on and off, alpha/beta,
//! bias and each activation. Inside the crate because the engine is reached through the
//! sealed `MatmulEngine` until the tensor API calls it.
//!
//! Tolerances, relative to `|alpha|·Σ|a||b| + |beta·c| + |bias|` per element (the size any
//! rounding error scales with): f64 1e-12, f32 1e-5 (f32 accumulation, k ≤ 300), TF32 2e-3
//! (10-bit mantissa inputs), f16 2e-3 and bf16 1.6e-2 (f32 accumulation, one rounding of the
//! result to 11 or 8 bits, and the epilogue in f32 before it), plus 1e-6 absolute.

mod order;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::element::{Element, FloatElement};
use crate::engine_gpu::tests::gpu_or_skip;
use crate::error::{Error, GpuError, LayoutError, Result};
use crate::layout::Layout;
use crate::runtime::{Gpu, GpuStorage};
use crate::tensor::matmul::{Activation, MatmulEngine, MatmulJob};
use crate::tensor::{TensorView, TensorViewMut};
use half::{bf16, f16};

/// A random layout of `shape` over a fresh storage: dims in a random physical order (the last
/// two swapped half the time), some stepped by 2, some flipped, and (for inputs) batch dims
/// broadcast with stride 0. Returns the layout and the storage length it needs.
pub(super) fn random_layout(rng: &mut SmallRng, shape: &[usize], input: bool) -> (Layout, usize) {
    let rank = shape.len();
    let mut order: Vec<usize> = (0..rank).collect();
    if rng.gen_bool(0.5) {
        order.swap(rank - 1, rank - 2);
    }
    if rng.gen_bool(0.15) {
        order.shuffle(rng);
    }
    let mut strides = vec![0isize; rank];
    let mut acc = 1usize;
    for &d in order.iter().rev() {
        if input && d + 2 < rank && rng.gen_bool(0.3) {
            continue; // broadcast batch dim: stride 0
        }
        let step = if rng.gen_bool(0.15) { 2 } else { 1 };
        strides[d] = (acc * step) as isize;
        acc *= shape[d].max(1) * step;
    }
    let mut offset = 0usize;
    for d in 0..rank {
        if strides[d] != 0 && shape[d] > 1 && rng.gen_bool(0.1) {
            offset += (shape[d] - 1) * strides[d] as usize;
            strides[d] = -strides[d];
        }
    }
    // A little slack before the first element: odd offsets test unaligned pointers.
    let pad = if rng.gen_bool(0.2) {
        rng.gen_range(1..4)
    } else {
        0
    };
    let layout = Layout::new(shape, &strides, offset + pad).unwrap();
    (layout, acc + pad)
}

/// The element at `index` of `data` through `layout`.
pub(super) fn at<T: Element>(data: &[T], layout: &Layout, index: &[usize]) -> f64 {
    data[layout.index_to_offset(index).unwrap()].to_f64()
}

/// Every index of `shape`, row-major.
pub(super) fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|p| (0..n).map(move |i| [p.clone(), vec![i]].concat()))
            .collect();
    }
    out
}

pub(super) fn random_data<T: Element>(rng: &mut SmallRng, len: usize) -> Vec<T> {
    (0..len)
        .map(|_| T::from_f64(rng.gen_range(-1.0..1.0)))
        .collect()
}

pub(super) fn act_ref(x: f64, act: Option<Activation>) -> f64 {
    match act {
        None => x,
        Some(Activation::Relu) => x.max(0.0),
        Some(Activation::Gelu) => x / 2.0 * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
        Some(Activation::GeluTanh) => {
            0.5 * x * (1.0 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh())
        }
    }
}

/// One random case: shapes, layouts, data, a job; checks the result and that the elements of
/// the destination's storage outside its layout are untouched.
#[allow(clippy::too_many_arguments)]
fn case<T: FloatElement>(
    gpu: &Gpu,
    rng: &mut SmallRng,
    tf32: bool,
    tol: f64,
    what: &str,
) -> Result<()> {
    let sizes = [0usize, 1, 2, 3, 7, 16, 33, 64, 129];
    let pick = |rng: &mut SmallRng| {
        if rng.gen_bool(0.1) {
            sizes[rng.gen_range(0..2)]
        } else {
            sizes[rng.gen_range(1..sizes.len())]
        }
    };
    let (m, k, n) = (pick(rng), pick(rng), pick(rng));
    let batch: Vec<usize> = (0..rng.gen_range(0..3))
        .map(|_| rng.gen_range(1..4))
        .collect();
    let shape = |r: usize, c: usize| [batch.clone(), vec![r, c]].concat();
    let (la, na) = random_layout(rng, &shape(m, k), true);
    let (lb, nb) = random_layout(rng, &shape(k, n), true);
    let (ld, nd) = random_layout(rng, &shape(m, n), false);
    let (ha, hb, hd) = (
        random_data::<T>(rng, na),
        random_data::<T>(rng, nb),
        random_data::<T>(rng, nd),
    );
    let with_bias = rng.gen_bool(0.5);
    let bias_step = if rng.gen_bool(0.3) { 2 } else { 1 };
    let hbias = random_data::<T>(rng, n * bias_step + 1);
    let lbias = Layout::new(&[n], &[bias_step as isize], rng.gen_range(0..2)).unwrap();
    let act = [
        None,
        Some(Activation::Relu),
        Some(Activation::Gelu),
        Some(Activation::GeluTanh),
    ][rng.gen_range(0..4)];
    let alpha = T::from_f64([1.0, 0.5, -2.0][rng.gen_range(0..3)]);
    let beta = T::from_f64([0.0, 0.0, 1.0, -0.5][rng.gen_range(0..4)]);

    let stream = gpu.default_stream();
    let (sa, sb, sbias) = (
        GpuStorage::from_host(gpu, &ha, stream)?,
        GpuStorage::from_host(gpu, &hb, stream)?,
        GpuStorage::from_host(gpu, &hbias, stream)?,
    );
    let mut sd = GpuStorage::from_host(gpu, &hd, stream)?;
    let job = MatmulJob {
        a: TensorView::new(&sa, la.clone(), gpu)?,
        b: TensorView::new(&sb, lb.clone(), gpu)?,
        alpha,
        beta,
        bias: if with_bias {
            Some(TensorView::new(&sbias, lbias.clone(), gpu)?)
        } else {
            None
        },
        activation: act,
        allow_tf32: tf32,
    };
    {
        let mut dst = TensorViewMut::new(&mut sd, ld.clone(), gpu)?;
        <Gpu as MatmulEngine<T>>::matmul(gpu, &job, &mut dst)?;
    }
    let got = sd.to_vec(stream)?;
    let label = format!(
        "{what} {} [{m},{k}]x[{k},{n}] batch {batch:?} a {:?} b {:?} d {:?} bias {with_bias} x{bias_step} {act:?} alpha {} beta {}",
        T::NAME, la.strides(), lb.strides(), ld.strides(), alpha.to_f64(), beta.to_f64()
    );
    let mut inside = vec![false; nd];
    let r = batch.len();
    for idx in indices(&shape(m, n)) {
        let (i, j) = (idx[r], idx[r + 1]);
        let (mut sum, mut mag) = (0.0, 0.0);
        for p in 0..k {
            let ia = [&idx[..r], &[i, p]].concat();
            let ib = [&idx[..r], &[p, j]].concat();
            let prod = at(&ha, &la, &ia) * at(&hb, &lb, &ib);
            sum += prod;
            mag += prod.abs();
        }
        let off = ld.index_to_offset(&idx).unwrap();
        inside[off] = true;
        let c = hd[off].to_f64();
        let bias = if with_bias {
            at(&hbias, &lbias, &[j])
        } else {
            0.0
        };
        let c_term = if beta.to_f64() == 0.0 {
            0.0
        } else {
            beta.to_f64() * c
        };
        let want = act_ref(alpha.to_f64() * sum + c_term + bias, act);
        let scale = alpha.to_f64().abs() * mag + c_term.abs() + bias.abs();
        let g = got[off].to_f64();
        assert!(
            (g - want).abs() <= tol * scale + 1e-6,
            "{label}: at {idx:?} got {g}, want {want} (tolerance {})",
            tol * scale + 1e-6
        );
    }
    for (o, inside) in inside.iter().enumerate() {
        if !inside {
            assert_eq!(
                got[o].to_f64().to_bits(),
                hd[o].to_f64().to_bits(),
                "{label}: element {o} outside the layout changed"
            );
        }
    }
    Ok(())
}

fn cases<T: FloatElement>(gpu: &Gpu, seed: u64, count: usize, tf32: bool, tol: f64) -> Result<()> {
    let mut rng = SmallRng::seed_from_u64(seed);
    for i in 0..count {
        case::<T>(gpu, &mut rng, tf32, tol, &format!("case {i}"))?;
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn random_layouts_match_the_f64_reference() -> Result<()> {
    let Some(gpu) = gpu_or_skip("random_layouts_match_the_f64_reference") else {
        return Ok(());
    };
    cases::<f64>(&gpu, 1, 60, false, 1e-12)?;
    cases::<f32>(&gpu, 2, 60, false, 1e-5)?;
    cases::<f32>(&gpu, 3, 60, true, 2e-3)?;
    cases::<f16>(&gpu, 4, 60, false, 2e-3)?;
    cases::<bf16>(&gpu, 5, 60, false, 1.6e-2)
}

/// The fallbacks (no fused epilogue: pointwise bias and activation; every operand copied and
/// the destination in a temporary, with and without the epilogue) on the same random cases,
/// reached by making the earlier tries find no algorithm.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn the_fallbacks_match_the_f64_reference() -> Result<()> {
    let Some(gpu) = gpu_or_skip("the_fallbacks_match_the_f64_reference") else {
        return Ok(());
    };
    for fail_below in 1..4 {
        super::run::FAIL_BELOW.with(|f| f.set(fail_below));
        let r = cases::<f32>(&gpu, 10 + fail_below as u64, 25, false, 1e-5)
            .and_then(|()| cases::<f16>(&gpu, 20 + fail_below as u64, 25, false, 2e-3));
        super::run::FAIL_BELOW.with(|f| f.set(0));
        r?;
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn shape_mismatches_are_typed_errors() -> Result<()> {
    let Some(gpu) = gpu_or_skip("shape_mismatches_are_typed_errors") else {
        return Ok(());
    };
    let s = gpu.default_stream();
    let (a, b) = (
        GpuStorage::<f32>::zeros(&gpu, 12, s)?,
        GpuStorage::<f32>::zeros(&gpu, 12, s)?,
    );
    let mut d = GpuStorage::<f32>::zeros(&gpu, 12, s)?;
    let job = MatmulJob {
        a: TensorView::new(&a, Layout::contiguous(&[3, 4])?, &gpu)?,
        b: TensorView::new(&b, Layout::contiguous(&[3, 4])?, &gpu)?,
        alpha: 1.0,
        beta: 0.0,
        bias: None,
        activation: None,
        allow_tf32: false,
    };
    let mut dst = TensorViewMut::new(&mut d, Layout::contiguous(&[3, 4])?, &gpu)?;
    let err = <Gpu as MatmulEngine<f32>>::matmul(&gpu, &job, &mut dst).unwrap_err();
    assert!(
        matches!(&err, Error::Layout(LayoutError::ShapeMismatch { expected, got, .. }) if expected == &[4, 4] && got == &[3, 4]),
        "{err}"
    );
    Ok(())
}

#[test]
fn the_missing_library_error_says_where_to_find_it() {
    let e = GpuError::NoCublasLt {
        tried: vec!["libcublasLt.so".into()],
    };
    let text = e.to_string();
    assert!(
        text.contains("LD_LIBRARY_PATH") && text.contains("nvidia/cu13/lib"),
        "{text}"
    );
    assert!(text.contains("libcublasLt.so"), "{text}");
}

/// Where libcublasLt cannot be loaded (run with it off LD_LIBRARY_PATH), a matmul is
/// [`GpuError::NoCublasLt`], not a panic; where it can, this prints a skip line.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_missing_cublaslt_is_a_typed_error() -> Result<()> {
    let Some(gpu) = gpu_or_skip("a_missing_cublaslt_is_a_typed_error") else {
        return Ok(());
    };
    if super::cublaslt::available() {
        println!("a_missing_cublaslt_is_a_typed_error: skipped, libcublasLt is loadable here");
        return Ok(());
    }
    let s = gpu.default_stream();
    let (a, b) = (
        GpuStorage::<f32>::zeros(&gpu, 4, s)?,
        GpuStorage::<f32>::zeros(&gpu, 4, s)?,
    );
    let mut d = GpuStorage::<f32>::zeros(&gpu, 4, s)?;
    let job = MatmulJob {
        a: TensorView::new(&a, Layout::contiguous(&[2, 2])?, &gpu)?,
        b: TensorView::new(&b, Layout::contiguous(&[2, 2])?, &gpu)?,
        alpha: 1.0,
        beta: 0.0,
        bias: None,
        activation: None,
        allow_tf32: false,
    };
    let mut dst = TensorViewMut::new(&mut d, Layout::contiguous(&[2, 2])?, &gpu)?;
    let err = <Gpu as MatmulEngine<f32>>::matmul(&gpu, &job, &mut dst).unwrap_err();
    assert!(
        matches!(err, Error::Gpu(GpuError::NoCublasLt { .. })),
        "{err}"
    );
    println!("a_missing_cublaslt_is_a_typed_error: {err}");
    Ok(())
}
