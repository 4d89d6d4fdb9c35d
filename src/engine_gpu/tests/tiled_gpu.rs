//! The tiled pointwise form (`Form::Tiled`: permutes of any rank whose innermost dim moves)
//! on a real device, against the CPU engine, exactly.
//!
//! Each case permutes a random tensor of rank 2 to 8 (random sizes, 1s, sizes that are not
//! multiples of any tile, one dim flipped or broadcast at random), runs an op of it into an
//! output poisoned element by element with a value different from the expected one (so an
//! element the kernel does not write fails), and compares the whole output with the CPU
//! engine's result bit for bit. Every element type is covered (f32, f64, f16, bf16, i32,
//! i64, u8 through `add`, `bool` through `ne`), zero-size dims, a fused expression with a
//! permuted leaf, and a permute of more than 2^31 `u8` elements (64-bit index math; skipped
//! when the device has too little free memory). The vector accesses of 1- and 2-byte types
//! (`vec` 2 or 4) have their own cases: sizes that are multiples of 4 but not of a tile (edge
//! tiles), sizes that are multiples of 2 only, misaligned bases (a view starting 1 to 3
//! elements into its buffer) and views whose strides are not multiples of 4, each asserting
//! the width the planner picks.
//!
//! Without a GPU every test prints a skip line and passes.

use super::gpu_or_skip;
use crate::engine_gpu::kernel::form::Form;
use crate::engine_gpu::kernel::plan::plan;
use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use typestate_tensor::element::Element;
use typestate_tensor::gpu::Gpu;
use typestate_tensor::layout::{collapse, Layout};
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::Cpu;

/// Random values of an element type, never all zeros.
trait Sample: Element {
    fn sample(rng: &mut SmallRng) -> Self;
}

macro_rules! sample_float {
    ($($t:ty => $from:expr),*) => {$(
        impl Sample for $t {
            fn sample(rng: &mut SmallRng) -> Self {
                let f: fn(f64) -> $t = $from;
                f(rng.gen_range(-100.0..100.0))
            }
        }
    )*};
}
sample_float!(
    f32 => |x| x as f32,
    f64 => |x| x,
    f16 => f16::from_f64,
    bf16 => bf16::from_f64
);
impl Sample for i32 {
    fn sample(rng: &mut SmallRng) -> Self {
        rng.gen()
    }
}
impl Sample for i64 {
    fn sample(rng: &mut SmallRng) -> Self {
        rng.gen()
    }
}
impl Sample for u8 {
    fn sample(rng: &mut SmallRng) -> Self {
        rng.gen()
    }
}
impl Sample for bool {
    fn sample(rng: &mut SmallRng) -> Self {
        rng.gen()
    }
}

/// Equal, NaN equal to NaN.
fn same<T: Element>(a: T, b: T) -> bool {
    #[allow(clippy::eq_op)]
    let both_nan = a != a && b != b;
    a == b || both_nan
}

/// A value different from `expected`.
fn poison<T: Element>(expected: T) -> T {
    [T::from_f64(77.0), T::from_f64(-3.0), T::ZERO, T::ONE]
        .into_iter()
        .find(|&p| !same(p, expected))
        .unwrap_or(T::ONE)
}

/// A device tensor of `expected`'s shape whose every element differs from `expected`'s.
fn poisoned<T: Element>(gpu: &Gpu, expected: &Tensor<T, Cpu>) -> Tensor<T, Gpu> {
    let v: Vec<T> = expected.to_vec().into_iter().map(poison).collect();
    Tensor::from_vec(expected.shape(), v)
        .unwrap()
        .to_gpu(gpu)
        .unwrap()
}

fn assert_same<T: Element>(what: &str, got: &Tensor<T, Gpu>, expected: &Tensor<T, Cpu>) {
    let got = got.to_cpu().unwrap().to_vec();
    let expected = expected.to_vec();
    assert_eq!(got.len(), expected.len(), "{what}");
    if let Some(i) = (0..got.len()).find(|&i| !same(got[i], expected[i])) {
        panic!(
            "{what}: element {i} of {}: GPU {:?}, CPU {:?}",
            got.len(),
            got[i],
            expected[i]
        );
    }
}

/// The form a launch over `layouts` (output first) of `elem`-byte elements plans.
fn form_of(layouts: &[&Layout], elem: usize) -> Form {
    match layouts {
        [o, a] => plan(&collapse([*o, *a]), [elem; 2], [0; 2]).form,
        [o, a, b] => plan(&collapse([*o, *a, *b]), [elem; 3], [0; 3]).form,
        _ => unreachable!(),
    }
}

/// A random shape of `rank` dims and at most about `max` elements: sizes from 1 (dropped by
/// the collapse) to 70, most of them not multiples of a tile.
fn random_shape(rng: &mut SmallRng, rank: usize, max: usize) -> Vec<usize> {
    const SIZES: [usize; 14] = [1, 2, 3, 5, 8, 9, 13, 17, 31, 33, 40, 64, 65, 70];
    loop {
        let mut shape: Vec<usize> = (0..rank).map(|_| *SIZES.choose(rng).unwrap()).collect();
        // Most of the time, keep the input's fastest dim and another one large enough to
        // tile.
        if rng.gen_bool(0.8) {
            let d0 = rank - 1;
            let d1 = rng.gen_range(0..rank);
            shape[d0] = shape[d0].max(rng.gen_range(9..=100));
            shape[d1] = shape[d1].max(rng.gen_range(9..=100));
        }
        if shape.iter().product::<usize>() <= max {
            return shape;
        }
    }
}

/// One case: `x` of a random shape, permuted (and at random flipped along one dim, or
/// broadcast from size 1 along one), then `x.permute(p) + y` into a poisoned contiguous
/// output (for `bool`, `!=`), and a copy (`contiguous`).
/// Returns whether the binary launch planned the tiled form.
fn permute_case<T: Sample>(gpu: &Gpu, rng: &mut SmallRng, rank: usize, binary: Binary<T>) -> bool {
    let base = random_shape(rng, rank, 1 << 17);
    let mut perm: Vec<usize> = (0..rank).collect();
    perm.shuffle(rng);
    let broadcast_dim = rng.gen_bool(0.2).then(|| rng.gen_range(0..rank));
    let stored: Vec<usize> = (0..rank)
        .map(|d| if Some(d) == broadcast_dim { 1 } else { base[d] })
        .collect();
    let x = Tensor::<T, Cpu>::from_fn(&stored, |_| T::sample(rng)).unwrap();
    let xg = x.to_gpu(gpu).unwrap();
    let flip = rng.gen_bool(0.3).then(|| rng.gen_range(0..rank) as isize);
    let xc_v = {
        let v = x.broadcast_to(&base).unwrap();
        let v = v.permute(&perm).unwrap();
        match flip {
            Some(d) => v.flip(d).unwrap(),
            None => v,
        }
    };
    let xg_v = {
        let v = xg.broadcast_to(&base).unwrap();
        let v = v.permute(&perm).unwrap();
        match flip {
            Some(d) => v.flip(d).unwrap(),
            None => v,
        }
    };
    let shape = xc_v.shape().to_vec();
    let what = format!(
        "{} base {base:?} perm {perm:?} flip {flip:?} broadcast {broadcast_dim:?}",
        T::NAME
    );
    let y = Tensor::<T, Cpu>::from_fn(&shape, |_| T::sample(rng)).unwrap();
    let yg = y.to_gpu(gpu).unwrap();
    let out_layout = Layout::contiguous(&shape).unwrap();
    let tiled = matches!(
        form_of(
            &[&out_layout, xc_v.layout(), y.layout()],
            T::DTYPE.size_in_bytes()
        ),
        Form::Tiled { .. }
    );
    binary(gpu, &what, &xc_v, &xg_v, &y, &yg);
    // A copy (the eager `copy` kernel, one input).
    let copy = xg_v.contiguous().unwrap();
    assert_same(&format!("copy {what}"), &copy, &xc_v.contiguous().unwrap());
    tiled
}

/// A binary case: the permuted view (CPU and GPU) and `y` (CPU and GPU).
type Binary<T> = fn(
    &Gpu,
    &str,
    &TensorView<'_, T, Cpu>,
    &TensorView<'_, T, Gpu>,
    &Tensor<T, Cpu>,
    &Tensor<T, Gpu>,
);

fn add_case<T: typestate_tensor::element::Numeric>(
    gpu: &Gpu,
    what: &str,
    xc: &TensorView<'_, T, Cpu>,
    xg: &TensorView<'_, T, Gpu>,
    y: &Tensor<T, Cpu>,
    yg: &Tensor<T, Gpu>,
) {
    let expected = xc.add(y).unwrap();
    let mut out = poisoned(gpu, &expected);
    xg.add_into(yg, &mut out).unwrap();
    assert_same(&format!("add {what}"), &out, &expected);
    // The permuted operand second (the staged input is input 1).
    let expected = y.sub(xc).unwrap();
    let mut out = poisoned(gpu, &expected);
    yg.sub_into(xg, &mut out).unwrap();
    assert_same(&format!("sub {what}"), &out, &expected);
}

fn ne_case<T: Element>(
    gpu: &Gpu,
    what: &str,
    xc: &TensorView<'_, T, Cpu>,
    xg: &TensorView<'_, T, Gpu>,
    y: &Tensor<T, Cpu>,
    yg: &Tensor<T, Gpu>,
) {
    let expected = xc.ne(y).unwrap();
    let mut out = poisoned(gpu, &expected);
    xg.ne_into(yg, &mut out).unwrap();
    assert_same(&format!("ne {what}"), &out, &expected);
}

/// Runs `per_rank` cases of every rank 2 to 8 for `T`; asserts that a sixth or more planned
/// tiles (the others cover the strided and vector forms beside them).
fn permutes_of<T: Sample>(gpu: &Gpu, seed: u64, binary: Binary<T>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let per_rank = 6;
    let mut tiled = 0;
    for rank in 2..=8 {
        for _ in 0..per_rank {
            tiled += usize::from(permute_case::<T>(gpu, &mut rng, rank, binary));
        }
    }
    println!("{}: {tiled} of {} cases tiled", T::NAME, 7 * per_rank);
    assert!(tiled >= 7 * per_rank / 6, "{}: only {tiled} tiled", T::NAME);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn random_permutes_of_every_type_match_the_cpu() {
    let Some(gpu) = gpu_or_skip("random_permutes_of_every_type_match_the_cpu") else {
        return;
    };
    permutes_of::<f32>(&gpu, 1, add_case::<f32>);
    permutes_of::<f64>(&gpu, 2, add_case::<f64>);
    permutes_of::<f16>(&gpu, 3, add_case::<f16>);
    permutes_of::<bf16>(&gpu, 4, add_case::<bf16>);
    permutes_of::<i32>(&gpu, 5, add_case::<i32>);
    permutes_of::<i64>(&gpu, 6, add_case::<i64>);
    permutes_of::<u8>(&gpu, 7, add_case::<u8>);
    permutes_of::<bool>(&gpu, 8, ne_case::<bool>);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn common_permutes_plan_tiles_and_match_the_cpu() {
    let Some(gpu) = gpu_or_skip("common_permutes_plan_tiles_and_match_the_cpu") else {
        return;
    };
    let mut rng = SmallRng::seed_from_u64(20);
    // Batched transpose, NCHW -> NHWC, NHWC -> NCHW, a head split, a reversal of rank 8.
    let cases: [(&[usize], &[usize]); 5] = [
        (&[5, 67, 130], &[0, 2, 1]),
        (&[3, 48, 17, 19], &[0, 2, 3, 1]),
        (&[3, 17, 19, 48], &[0, 3, 1, 2]),
        (&[2, 100, 6, 40], &[0, 2, 3, 1]),
        (&[20, 2, 3, 2, 3, 2, 3, 9], &[7, 6, 5, 4, 3, 2, 1, 0]),
    ];
    for (shape, perm) in cases {
        let x = Tensor::<f32, Cpu>::from_fn(shape, |_| f32::sample(&mut rng)).unwrap();
        let xg = x.to_gpu(&gpu).unwrap();
        let (xc, xgv) = (x.permute(perm).unwrap(), xg.permute(perm).unwrap());
        let out_layout = Layout::contiguous(xc.shape()).unwrap();
        let form = form_of(&[&out_layout, xc.layout()], 4);
        assert!(
            matches!(form, Form::Tiled { .. }),
            "{shape:?} {perm:?}: {form}"
        );
        let expected = xc.abs().unwrap();
        let mut out = poisoned(&gpu, &expected);
        xgv.abs_into(&mut out).unwrap();
        assert_same(&format!("abs {shape:?} {perm:?}"), &out, &expected);
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn zero_size_permutes_launch_nothing() {
    let Some(gpu) = gpu_or_skip("zero_size_permutes_launch_nothing") else {
        return;
    };
    let x = Tensor::<f32, Cpu>::zeros(&[4, 0, 64, 33]).unwrap();
    let xg = x.to_gpu(&gpu).unwrap();
    let v = xg.permute(&[0, 3, 2, 1]).unwrap();
    let mut out = Tensor::<f32, Cpu>::zeros(v.shape())
        .unwrap()
        .to_gpu(&gpu)
        .unwrap();
    v.abs_into(&mut out).unwrap();
    assert_eq!(out.to_cpu().unwrap().to_vec().len(), 0);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn fused_expression_with_a_permuted_leaf_matches_eager() {
    let Some(gpu) = gpu_or_skip("fused_expression_with_a_permuted_leaf_matches_eager") else {
        return;
    };
    let mut rng = SmallRng::seed_from_u64(30);
    for (shape, perm) in [
        (vec![6usize, 70, 45], vec![0usize, 2, 1]),
        (vec![4, 33, 9, 50], vec![3, 1, 2, 0]),
    ] {
        let x = Tensor::<f32, Cpu>::from_fn(&shape, |_| f32::sample(&mut rng)).unwrap();
        let xg = x.to_gpu(&gpu).unwrap();
        let (xc, xgv) = (x.permute(&perm).unwrap(), xg.permute(&perm).unwrap());
        let out_shape = xc.shape().to_vec();
        let y = Tensor::<f32, Cpu>::from_fn(&out_shape, |_| f32::sample(&mut rng)).unwrap();
        let yg = y.to_gpu(&gpu).unwrap();
        // (x.permute(p) * y + x.permute(p)).abs(): the leaf read twice, fused in one kernel.
        let expected = xc.mul(&y).unwrap().add(&xc).unwrap().abs().unwrap();
        let mut out = poisoned(&gpu, &expected);
        (xgv.lazy() * &yg + &xgv).abs().eval_into(&mut out).unwrap();
        assert_same(&format!("fused {shape:?} {perm:?}"), &out, &expected);
        // Two outputs in output 0's order.
        let e0 = xc.add(&y).unwrap();
        let e1 = xc.mul(&y).unwrap();
        let mut o0 = poisoned(&gpu, &e0);
        let mut o1 = poisoned(&gpu, &e1);
        typestate_tensor::tensor::expr::eval_into(
            (xgv.lazy() + &yg, xgv.lazy() * &yg),
            (&mut o0, &mut o1),
        )
        .unwrap();
        assert_same("fused output 0", &o0, &e0);
        assert_same("fused output 1", &o1, &e1);
    }
}

/// The planned form of a launch over `views` (output first), at their real alignment: each
/// operand's first element at `offset * elem` bytes into a (256-byte aligned) buffer.
fn form_at(views: &[&Layout], elem: usize) -> Form {
    let addr = |l: &Layout| (l.offset() * elem) as u64;
    match views {
        [o, a] => plan(&collapse([*o, *a]), [elem; 2], [addr(o), addr(a)]).form,
        [o, a, b] => {
            plan(
                &collapse([*o, *a, *b]),
                [elem; 3],
                [addr(o), addr(a), addr(b)],
            )
            .form
        }
        _ => unreachable!(),
    }
}

/// The access width of a tiled form (0 for any other form).
fn vec_of(form: Form) -> u8 {
    match form {
        Form::Tiled { vec, .. } => vec,
        _ => 0,
    }
}

/// One vector case for `T`: `x` of `stored` shape, narrowed to start `skip` elements into
/// its innermost dim (a misaligned base when `skip` is not a multiple of the width) and to
/// `keep` elements there, permuted by `perm`; `x.permute(perm) + y` into a poisoned output,
/// and the copy. Asserts the planned width is `want`.
#[allow(clippy::too_many_arguments)]
fn vector_case<T: Sample>(
    gpu: &Gpu,
    rng: &mut SmallRng,
    stored: &[usize],
    skip: usize,
    keep: usize,
    perm: &[usize],
    want: u8,
    binary: Binary<T>,
) {
    let x = Tensor::<T, Cpu>::from_fn(stored, |_| T::sample(rng)).unwrap();
    let xg = x.to_gpu(gpu).unwrap();
    let last = stored.len() as isize - 1;
    let xc = x.narrow(last, skip, keep).unwrap();
    let xgn = xg.narrow(last, skip, keep).unwrap();
    let (xc, xgv) = (xc.permute(perm).unwrap(), xgn.permute(perm).unwrap());
    let shape = xc.shape().to_vec();
    let what = format!(
        "{} stored {stored:?} skip {skip} keep {keep} perm {perm:?}",
        T::NAME
    );
    let y = Tensor::<T, Cpu>::from_fn(&shape, |_| T::sample(rng)).unwrap();
    let yg = y.to_gpu(gpu).unwrap();
    let out_layout = Layout::contiguous(&shape).unwrap();
    let elem = T::DTYPE.size_in_bytes();
    let form = form_at(&[&out_layout, xc.layout(), y.layout()], elem);
    assert_eq!(vec_of(form), want, "{what}: {form}");
    binary(gpu, &what, &xc, &xgv, &y, &yg);
    let form = form_at(&[&out_layout, xc.layout()], elem);
    assert_eq!(vec_of(form), want, "copy {what}: {form}");
    let copy = xgv.contiguous().unwrap();
    assert_same(&format!("copy {what}"), &copy, &xc.contiguous().unwrap());
}

/// A vector case: stored shape, skipped and kept elements of the innermost dim, permutation,
/// expected width.
type VectorCase = (&'static [usize], usize, usize, &'static [usize], u8);

/// Vector cases of one type of `elem` bytes: the full width `4 / elem` where sizes, strides
/// and bases allow it, 2 or 1 where they do not.
fn vector_cases_of<T: Sample>(gpu: &Gpu, seed: u64, binary: Binary<T>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let full = (4 / T::DTYPE.size_in_bytes()) as u8;
    let half = full.min(2);
    let cases: [VectorCase; 11] = [
        // Transposes with sizes multiples of 4 but not of the tile: edge tiles.
        (&[68, 100], 0, 100, &[1, 0], full),
        (&[4, 36, 132], 0, 132, &[0, 2, 1], full),
        (&[3, 200, 12], 0, 12, &[0, 2, 1], full),
        // NCHW -> NHWC and a head split of rank 4, multiples of 4.
        (&[2, 24, 12, 20], 0, 20, &[0, 2, 3, 1], full),
        (&[2, 44, 4, 16], 0, 16, &[0, 2, 3, 1], full),
        // Rank 5: [A, B, C, D, E] -> [B, E, C, A, D].
        (&[8, 4, 3, 12, 16], 0, 16, &[1, 4, 2, 0, 3], full),
        // Sizes multiples of 2 only: width 2 at most.
        (&[66, 90], 0, 90, &[1, 0], half),
        // A base 1 or 2 elements into the buffer (the other strides stay multiples of 4):
        // the width must divide the base's byte offset.
        (&[64, 100], 1, 96, &[1, 0], 1),
        (&[64, 100], 2, 96, &[1, 0], half),
        // An odd size (a window of 97 of 100): no vectors.
        (&[64, 100], 0, 97, &[1, 0], 1),
        // Even sizes but an odd stride (a window of 100 of 101): no vectors.
        (&[64, 101], 0, 100, &[1, 0], 1),
    ];
    for (stored, skip, keep, perm, want) in cases {
        vector_case::<T>(gpu, &mut rng, stored, skip, keep, perm, want, binary);
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn vector_tiles_of_small_types_match_the_cpu() {
    let Some(gpu) = gpu_or_skip("vector_tiles_of_small_types_match_the_cpu") else {
        return;
    };
    vector_cases_of::<u8>(&gpu, 50, add_case::<u8>);
    vector_cases_of::<bool>(&gpu, 51, ne_case::<bool>);
    vector_cases_of::<f16>(&gpu, 52, add_case::<f16>);
    vector_cases_of::<bf16>(&gpu, 53, add_case::<bf16>);
    // 4-byte types keep one element per access.
    let mut rng = SmallRng::seed_from_u64(54);
    vector_case::<f32>(
        &gpu,
        &mut rng,
        &[68, 100],
        0,
        100,
        &[1, 0],
        1,
        add_case::<f32>,
    );
}

/// `x.permute([1, 0]) + y` with vector tiles, `y` read directly (unstaged) in four ways that
/// the width check does not look at: a window with an odd row stride (rows alternately
/// aligned and misaligned), a window starting 1 element in, a broadcast row (stride 0 across
/// rows) and a broadcast column (stride 0 along the output's contiguous dim).
fn unstaged_inputs_of<T: Sample + typestate_tensor::element::Numeric>(gpu: &Gpu, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let x = Tensor::<T, Cpu>::from_fn(&[68, 100], |_| T::sample(&mut rng)).unwrap();
    let xg = x.to_gpu(gpu).unwrap();
    let (xc, xgv) = (x.permute(&[1, 0]).unwrap(), xg.permute(&[1, 0]).unwrap());
    let out_layout = Layout::contiguous(&[100, 68]).unwrap();
    let full = (4 / T::DTYPE.size_in_bytes()) as u8;
    assert_eq!(
        vec_of(form_at(
            &[&out_layout, xc.layout()],
            T::DTYPE.size_in_bytes()
        )),
        full
    );
    let wide = Tensor::<T, Cpu>::from_fn(&[100, 71], |_| T::sample(&mut rng)).unwrap();
    let wide_g = wide.to_gpu(gpu).unwrap();
    let row = Tensor::<T, Cpu>::from_fn(&[1, 68], |_| T::sample(&mut rng)).unwrap();
    let row_g = row.to_gpu(gpu).unwrap();
    let col = Tensor::<T, Cpu>::from_fn(&[100, 1], |_| T::sample(&mut rng)).unwrap();
    let col_g = col.to_gpu(gpu).unwrap();
    let check = |what: &str, yc: TensorView<'_, T, Cpu>, yg: TensorView<'_, T, Gpu>| {
        let expected = xc.add(&yc).unwrap();
        assert_eq!(expected.shape(), &[100, 68]);
        let mut out = poisoned(gpu, &expected);
        xgv.add_into(&yg, &mut out).unwrap();
        assert_same(&format!("{} unstaged {what}", T::NAME), &out, &expected);
    };
    check(
        "odd row stride",
        wide.narrow(1, 0, 68).unwrap(),
        wide_g.narrow(1, 0, 68).unwrap(),
    );
    check(
        "1 element in",
        wide.narrow(1, 1, 68).unwrap(),
        wide_g.narrow(1, 1, 68).unwrap(),
    );
    check(
        "broadcast row",
        row.broadcast_to(&[100, 68]).unwrap(),
        row_g.broadcast_to(&[100, 68]).unwrap(),
    );
    check(
        "broadcast column",
        col.broadcast_to(&[100, 68]).unwrap(),
        col_g.broadcast_to(&[100, 68]).unwrap(),
    );
    // Read as one vector per access where the planner allows it (`tiled_direct_vec`): a
    // contiguous `y`, a window whose rows stay aligned, a broadcast row; not the others.
    let y = Tensor::<T, Cpu>::from_fn(&[100, 68], |_| T::sample(&mut rng)).unwrap();
    let y_g = y.to_gpu(gpu).unwrap();
    let aligned = Tensor::<T, Cpu>::from_fn(&[100, 72], |_| T::sample(&mut rng)).unwrap();
    let aligned_g = aligned.to_gpu(gpu).unwrap();
    let elem = T::DTYPE.size_in_bytes();
    let direct = |y: &TensorView<'_, T, Cpu>| {
        direct_of(form_at(&[&out_layout, xc.layout(), y.layout()], elem))
    };
    let on = if full > 1 { 0b10 } else { 0 };
    assert_eq!(direct(&y.view()), on, "{} contiguous y", T::NAME);
    assert_eq!(
        direct(&aligned.narrow(1, 0, 68).unwrap()),
        on,
        "{} aligned window",
        T::NAME
    );
    assert_eq!(
        direct(&row.broadcast_to(&[100, 68]).unwrap()),
        on,
        "{} broadcast row",
        T::NAME
    );
    assert_eq!(
        direct(&wide.narrow(1, 1, 68).unwrap()),
        0,
        "{} 1 element in",
        T::NAME
    );
    assert_eq!(
        direct(&col.broadcast_to(&[100, 68]).unwrap()),
        0,
        "{} broadcast column",
        T::NAME
    );
    check("contiguous", y.view(), y_g.view());
    check(
        "aligned window",
        aligned.narrow(1, 0, 68).unwrap(),
        aligned_g.narrow(1, 0, 68).unwrap(),
    );
}

/// The unstaged inputs a tiled form reads as vectors (0 for any other form).
fn direct_of(form: Form) -> u8 {
    match form {
        Form::Tiled { direct, .. } => direct,
        _ => 0,
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn vector_tiles_with_unstaged_inputs_of_any_alignment_match_the_cpu() {
    let Some(gpu) = gpu_or_skip("vector_tiles_with_unstaged_inputs_of_any_alignment_match_the_cpu")
    else {
        return;
    };
    unstaged_inputs_of::<u8>(&gpu, 56);
    unstaged_inputs_of::<f16>(&gpu, 57);
    unstaged_inputs_of::<bf16>(&gpu, 58);
}

/// A fused expression over a permuted `f16` leaf with vector tiles, one and two outputs.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn fused_vector_tiles_match_eager() {
    let Some(gpu) = gpu_or_skip("fused_vector_tiles_match_eager") else {
        return;
    };
    let mut rng = SmallRng::seed_from_u64(55);
    let x = Tensor::<f16, Cpu>::from_fn(&[4, 72, 100], |_| f16::sample(&mut rng)).unwrap();
    let xg = x.to_gpu(&gpu).unwrap();
    let perm = [0usize, 2, 1];
    let (xc, xgv) = (x.permute(&perm).unwrap(), xg.permute(&perm).unwrap());
    let out_layout = Layout::contiguous(xc.shape()).unwrap();
    assert_eq!(vec_of(form_at(&[&out_layout, xc.layout()], 2)), 2);
    let y = Tensor::<f16, Cpu>::from_fn(xc.shape(), |_| f16::sample(&mut rng)).unwrap();
    let yg = y.to_gpu(&gpu).unwrap();
    let expected = xc.mul(&y).unwrap().add(&xc).unwrap().abs().unwrap();
    let mut out = poisoned(&gpu, &expected);
    (xgv.lazy() * &yg + &xgv).abs().eval_into(&mut out).unwrap();
    assert_same("fused f16 vector tiles", &out, &expected);
    let e0 = xc.add(&y).unwrap();
    let e1 = xc.mul(&y).unwrap();
    let mut o0 = poisoned(&gpu, &e0);
    let mut o1 = poisoned(&gpu, &e1);
    typestate_tensor::tensor::expr::eval_into(
        (xgv.lazy() + &yg, xgv.lazy() * &yg),
        (&mut o0, &mut o1),
    )
    .unwrap();
    assert_same("fused f16 vector output 0", &o0, &e0);
    assert_same("fused f16 vector output 1", &o1, &e1);
}

/// A batched transpose of 2 x 32768 x 32772 `u8` (2^31 + 2^18 elements, 64-bit index math,
/// vector tiles of 4 elements) plus a scalar, checked against the formula the input was built from at every element of
/// a few whole rows and columns and at 2^20 random places.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn more_than_2_pow_31_u8_elements_transpose() {
    let Some(gpu) = gpu_or_skip("more_than_2_pow_31_u8_elements_transpose") else {
        return;
    };
    let (b, r, c) = (2usize, 32768usize, 32772usize);
    let n = b * r * c;
    assert!(n > 1 << 31);
    match gpu.memory_info() {
        Ok((free, _)) if free >= 2 * n + (512 << 20) => {}
        other => {
            println!("more_than_2_pow_31_u8_elements_transpose: skipped, free memory {other:?}");
            return;
        }
    }
    let value = |i: usize| (i.wrapping_mul(2_654_435_761) >> 7) as u8;
    let x = Tensor::<u8, Cpu>::from_vec(&[b, r, c], (0..n).map(value).collect()).unwrap();
    let xg = x.to_gpu(&gpu).unwrap();
    drop(x);
    let v = xg.permute(&[0, 2, 1]).unwrap();
    let out_layout = Layout::contiguous(v.shape()).unwrap();
    let form = form_of(&[&out_layout, v.layout()], 1);
    assert_eq!(vec_of(form), 4, "{form}");
    let mut out = Tensor::<u8, Cpu>::from_vec(&[b, c, r], vec![0xA5; n])
        .unwrap()
        .to_gpu(&gpu)
        .unwrap();
    v.add_scalar_into(3, &mut out).unwrap();
    let got = out.to_cpu().unwrap().to_vec();
    // out[bi, ci, ri] = x[bi, ri, ci] + 3 (wrapping).
    let check = |bi: usize, ci: usize, ri: usize| {
        let g = got[(bi * c + ci) * r + ri];
        let e = value((bi * r + ri) * c + ci).wrapping_add(3);
        assert_eq!(g, e, "out[{bi}, {ci}, {ri}]");
    };
    for bi in 0..b {
        for ci in [0, 1, c / 2, c - 1] {
            for ri in 0..r {
                check(bi, ci, ri);
            }
        }
        for ri in [0, 31, r - 1] {
            for ci in 0..c {
                check(bi, ci, ri);
            }
        }
    }
    let mut rng = SmallRng::seed_from_u64(40);
    for _ in 0..1 << 20 {
        check(
            rng.gen_range(0..b),
            rng.gen_range(0..c),
            rng.gen_range(0..r),
        );
    }
}
