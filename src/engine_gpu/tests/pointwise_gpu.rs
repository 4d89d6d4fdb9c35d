//! The pointwise GPU kernels (`gpu::pointwise`) against the op table's CPU closures, on a real
//! device, in the forms and at the edges only the GPU has: every op at every type in the
//! vector forms (contiguous, row broadcast) with special values mixed in, the tiled transposed
//! form, misaligned views, fills, in-place launches, bad layouts, 64-bit index math and more
//! than 2^31 elements.
//!
//! Every op at every type on random strided views, out of place, into poisoned strided views
//! and in place, against independent `f64`/`i128` references, is `tests/it/pointwise.rs` (its
//! `*_gpu` tests, written once for both devices); tensors on the GPU are covered there and in
//! `tests/it/tensor.rs`.
//!
//! Every test prints `skipping: no CUDA driver` and returns when `Gpu::available()` is false.
//! With a GPU, each case:
//! - makes random (seeded) inputs, in the layouts the test names, and an output view into a
//!   storage (larger than the view where the test says so);
//! - poisons the output storage: every element of the view gets a value different from the
//!   one expected there (so an element the kernel does not write fails), every other element
//!   a sentinel (so a write outside the view fails);
//! - runs the op on the GPU and compares the whole storage with the CPU result: exactly,
//!   except for transcendental functions (CUDA's are within a few ulps of Rust's; see
//!   [`Tol`]).

use std::sync::OnceLock;

use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::engine_gpu::kernel::form::{Form, IndexWidth};
use crate::engine_gpu::kernel::plan::plan;
use crate::engine_gpu::pointwise::{self as pw};
use typestate_tensor::element::Element;
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::gpu::{Gpu, GpuStorage, Stream};
use typestate_tensor::layout::{collapse, Layout};
use typestate_tensor::ops::table::*;
use typestate_tensor::ops::{BinaryOp, Cast, TernaryOp, UnaryOp};

struct Ctx {
    gpu: Gpu,
    stream: Stream,
}

/// GPU 0 and a stream on it, or `None` (after saying so) without a usable GPU.
fn ctx() -> Option<&'static Ctx> {
    static CTX: OnceLock<Option<Ctx>> = OnceLock::new();
    let ctx = CTX.get_or_init(|| {
        if !Gpu::available() {
            return None;
        }
        let gpu = Gpu::new(0).expect("a GPU is available, so GPU 0 opens");
        let stream = gpu.new_stream().expect("a stream");
        Some(Ctx { gpu, stream })
    });
    if ctx.is_none() {
        println!("skipping: no CUDA driver");
    }
    ctx.as_ref()
}

// ---- elements --------------------------------------------------------------------------

/// Random values of each element type, with the special values mixed in that exercise the
/// total semantics (NaN, infinities, signed zeros, integer bounds, out-of-range floats).
trait TestElem: Element {
    fn sample(rng: &mut SmallRng) -> Self;
    /// The unit roundoff of the type (0 for integers).
    const EPS: f64;
}

fn float_sample(rng: &mut SmallRng) -> f64 {
    if rng.gen_bool(0.04) {
        *[
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            2.5,
            -2.5,
            1e30,
            -3e9,
            3e9,
            255.9,
            300.0,
            1e-40,
        ]
        .choose(rng)
        .unwrap()
    } else {
        rng.gen_range(-4.0..4.0)
    }
}

impl TestElem for f32 {
    fn sample(rng: &mut SmallRng) -> Self {
        float_sample(rng) as f32
    }
    const EPS: f64 = f32::EPSILON as f64;
}
impl TestElem for f64 {
    fn sample(rng: &mut SmallRng) -> Self {
        float_sample(rng)
    }
    const EPS: f64 = f64::EPSILON;
}
impl TestElem for f16 {
    fn sample(rng: &mut SmallRng) -> Self {
        f16::from_f64(float_sample(rng))
    }
    const EPS: f64 = 9.765625e-4;
}
impl TestElem for bf16 {
    fn sample(rng: &mut SmallRng) -> Self {
        bf16::from_f64(float_sample(rng))
    }
    const EPS: f64 = 7.8125e-3;
}
impl TestElem for i32 {
    fn sample(rng: &mut SmallRng) -> Self {
        if rng.gen_bool(0.1) {
            *[0, 1, -1, 2, i32::MIN, i32::MAX].choose(rng).unwrap()
        } else if rng.gen_bool(0.5) {
            rng.gen_range(-40..40)
        } else {
            rng.gen()
        }
    }
    const EPS: f64 = 0.0;
}
impl TestElem for i64 {
    fn sample(rng: &mut SmallRng) -> Self {
        if rng.gen_bool(0.1) {
            *[0, 1, -1, 2, i64::MIN, i64::MAX].choose(rng).unwrap()
        } else if rng.gen_bool(0.5) {
            rng.gen_range(-40..40)
        } else {
            rng.gen()
        }
    }
    const EPS: f64 = 0.0;
}
impl TestElem for u8 {
    fn sample(rng: &mut SmallRng) -> Self {
        if rng.gen_bool(0.1) {
            0
        } else {
            rng.gen()
        }
    }
    const EPS: f64 = 0.0;
}
impl TestElem for bool {
    fn sample(rng: &mut SmallRng) -> Self {
        rng.gen()
    }
    const EPS: f64 = 0.0;
}

/// Equal, counting NaN equal to NaN.
fn same<T: Element>(a: T, b: T) -> bool {
    #[allow(clippy::eq_op)]
    let both_nan = a != a && b != b;
    a == b || both_nan
}

/// A value different from `expected` (so that an unwritten element cannot pass).
fn poison<T: Element>(expected: T) -> T {
    [T::from_f64(12345.0), T::from_f64(-7.0), T::ZERO, T::ONE]
        .into_iter()
        .find(|&p| !same(p, expected))
        .unwrap_or(T::ONE)
}

/// How closely the GPU must match the CPU.
#[derive(Clone, Copy, Debug)]
enum Tol {
    /// Bit for bit (NaN equal to NaN).
    Exact,
    /// Transcendental functions: within `n` units of the output type's roundoff, relative to
    /// the larger magnitude or 1 (absolute near zero, where CUDA's and Rust's errors are
    /// absolute).
    Ulps(f64),
}

fn close<T: TestElem>(gpu: T, cpu: T, tol: Tol) -> bool {
    if same(gpu, cpu) {
        return true;
    }
    let (g, c) = (gpu.to_f64(), cpu.to_f64());
    let ulps = match tol {
        Tol::Exact => return false,
        Tol::Ulps(n) => n,
    };
    if g.is_nan() || c.is_nan() || g.is_infinite() || c.is_infinite() {
        return false;
    }
    (g - c).abs() <= ulps * T::EPS * g.abs().max(c.abs()).max(1.0)
}

// ---- layouts ---------------------------------------------------------------------------

/// Storage offsets of `layout`'s elements, in row-major order of its shape.
fn offsets(layout: &Layout) -> Vec<usize> {
    let shape = layout.shape();
    let n = layout.numel();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        out.push(layout.index_to_offset(&idx).unwrap());
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// A random view of `shape` into storage of the returned length: its dims permuted in memory,
/// stepped, some flipped, offset from the storage start, and (if `broadcast`) some dims
/// broadcast from size 1.
fn random_view(rng: &mut SmallRng, shape: &[usize], broadcast: bool) -> (Layout, usize) {
    let rank = shape.len();
    let src: Vec<usize> = shape
        .iter()
        .map(|&n| {
            if broadcast && n > 1 && rng.gen_bool(0.25) {
                1
            } else {
                n
            }
        })
        .collect();
    let steps: Vec<usize> = (0..rank)
        .map(|_| {
            if rng.gen_bool(0.3) {
                rng.gen_range(2..4)
            } else {
                1
            }
        })
        .collect();
    let pads: Vec<usize> = (0..rank)
        .map(|_| {
            if rng.gen_bool(0.3) {
                rng.gen_range(1..3)
            } else {
                0
            }
        })
        .collect();
    let extents: Vec<usize> = (0..rank)
        .map(|d| (src[d].max(1) - 1) * steps[d] + 1 + pads[d])
        .collect();
    let mut perm: Vec<usize> = (0..rank).collect();
    perm.shuffle(rng);
    let permuted: Vec<usize> = perm.iter().map(|&d| extents[d]).collect();
    let base = Layout::contiguous(&permuted).unwrap();
    let mut inverse = vec![0; rank];
    for (i, &d) in perm.iter().enumerate() {
        inverse[d] = i;
    }
    let mut view = base.permute(&inverse).unwrap();
    for d in 0..rank {
        let start = rng.gen_range(0..=pads[d]);
        let end = start + (src[d].max(1) - 1) * steps[d] + 1;
        view = view
            .slice(d as isize, start, end, steps[d] as isize)
            .unwrap();
        if rng.gen_bool(0.3) {
            view = view.flip(d as isize).unwrap();
        }
    }
    let lead = rng.gen_range(0..5);
    let view = Layout::new(view.shape(), view.strides(), view.offset() + lead).unwrap();
    let view = view.broadcast_to(shape).unwrap();
    let len = base.numel() + lead + rng.gen_range(0..3);
    (view, len)
}

fn random_shape(rng: &mut SmallRng, max_numel: usize) -> Vec<usize> {
    loop {
        let rank = rng.gen_range(1..=4);
        let shape: Vec<usize> = (0..rank).map(|_| rng.gen_range(1..=12)).collect();
        if shape.iter().product::<usize>() <= max_numel {
            return shape;
        }
    }
}

/// A case's layouts: the output and `n_inputs` inputs, each with its storage length.
struct Case {
    out: (Layout, usize),
    inputs: Vec<(Layout, usize)>,
}

/// The vector forms: a contiguous case large enough for vector loads, and a row broadcast.
/// (Random strided views of every op at every type, against independent references, are
/// `tests/it/pointwise.rs`'s `*_gpu` tests.)
fn cases(n_inputs: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    let dense = Layout::contiguous(&[37, 301]).unwrap();
    cases.push(Case {
        out: (dense.clone(), dense.numel()),
        inputs: (0..n_inputs)
            .map(|_| (dense.clone(), dense.numel()))
            .collect(),
    });
    let row = Layout::contiguous(&[1, 256])
        .unwrap()
        .broadcast_to(&[40, 256])
        .unwrap();
    let full = Layout::contiguous(&[40, 256]).unwrap();
    cases.push(Case {
        out: (full.clone(), full.numel()),
        inputs: (0..n_inputs)
            .map(|k| {
                if k == n_inputs - 1 {
                    (row.clone(), 256)
                } else {
                    (full.clone(), full.numel())
                }
            })
            .collect(),
    });
    cases
}

// ---- running ---------------------------------------------------------------------------

fn random_vec<T: TestElem>(rng: &mut SmallRng, len: usize) -> Vec<T> {
    (0..len).map(|_| T::sample(rng)).collect()
}

/// The output storage before the launch, and the one expected after it.
fn poisoned_and_expected<O: TestElem>(
    rng: &mut SmallRng,
    out: &(Layout, usize),
    values: &[O],
) -> (Vec<O>, Vec<O>) {
    let sentinel = O::sample(rng);
    let mut before = vec![sentinel; out.1];
    let mut after = before.clone();
    for (&off, &v) in offsets(&out.0).iter().zip(values) {
        before[off] = poison(v);
        after[off] = v;
    }
    (before, after)
}

fn check_storage<O: TestElem>(what: &str, got: &[O], expected: &[O], view: &Layout, tol: Tol) {
    let in_view: std::collections::HashSet<usize> = offsets(view).into_iter().collect();
    let mut bad = Vec::new();
    for (i, (&g, &e)) in got.iter().zip(expected).enumerate() {
        let ok = if in_view.contains(&i) {
            close(g, e, tol)
        } else {
            same(g, e)
        };
        if !ok {
            bad.push((i, g, e));
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: {} of {} elements differ (view {:?}), first (storage index, gpu, cpu): {:?}",
        bad.len(),
        got.len(),
        view,
        &bad[..bad.len().min(8)]
    );
}

fn upload<T: Element>(ctx: &Ctx, data: &[T]) -> GpuStorage<T> {
    GpuStorage::from_host(&ctx.gpu, data, &ctx.stream).unwrap()
}

fn check_unary<T: TestElem, O: UnaryOp<T>>(ctx: &Ctx, op: O, tol: Tol)
where
    O::Output: TestElem,
{
    let mut rng = SmallRng::seed_from_u64(0x5eed ^ O::NAME.len() as u64 ^ T::DTYPE as u64);
    for case in cases(1) {
        let (a_layout, a_len) = &case.inputs[0];
        let a: Vec<T> = random_vec(&mut rng, *a_len);
        let values: Vec<O::Output> = offsets(a_layout).iter().map(|&i| op.cpu(a[i])).collect();
        let (before, after) = poisoned_and_expected(&mut rng, &case.out, &values);
        let a_dev = upload(ctx, &a);
        let mut out_dev = upload(ctx, &before);
        pw::launch::unary(
            &ctx.stream,
            &op,
            &a_dev,
            a_layout,
            &mut out_dev,
            &case.out.0,
        )
        .unwrap();
        let got = out_dev.to_vec(&ctx.stream).unwrap();
        let what = format!("{} {} -> {}", O::NAME, T::NAME, O::Output::NAME);
        check_storage(&what, &got, &after, &case.out.0, tol);
    }
}

fn check_binary<T: TestElem, O: BinaryOp<T>>(ctx: &Ctx, op: O, tol: Tol)
where
    O::Output: TestElem,
{
    let mut rng = SmallRng::seed_from_u64(0xb1 ^ O::NAME.len() as u64 ^ T::DTYPE as u64);
    for case in cases(2) {
        run_binary::<T, O>(
            ctx,
            op,
            &mut rng,
            &case.out,
            &case.inputs[0],
            &case.inputs[1],
            tol,
        );
    }
}

fn check_ternary<A: TestElem, T: TestElem, O: TernaryOp<A, T>>(ctx: &Ctx, op: O, tol: Tol)
where
    O::Output: TestElem,
{
    let mut rng = SmallRng::seed_from_u64(0x7e ^ O::NAME.len() as u64 ^ T::DTYPE as u64);
    for case in cases(3) {
        let [(al, alen), (bl, blen), (cl, clen)] =
            [&case.inputs[0], &case.inputs[1], &case.inputs[2]];
        let a: Vec<A> = random_vec(&mut rng, *alen);
        let b: Vec<T> = random_vec(&mut rng, *blen);
        let c: Vec<T> = random_vec(&mut rng, *clen);
        let (ao, bo, co) = (offsets(al), offsets(bl), offsets(cl));
        let values: Vec<O::Output> = (0..ao.len())
            .map(|i| op.cpu(a[ao[i]], b[bo[i]], c[co[i]]))
            .collect();
        let (before, after) = poisoned_and_expected(&mut rng, &case.out, &values);
        let (a_dev, b_dev, c_dev) = (upload(ctx, &a), upload(ctx, &b), upload(ctx, &c));
        let mut out_dev = upload(ctx, &before);
        pw::launch::ternary(
            &ctx.stream,
            &op,
            (&a_dev, al),
            (&b_dev, bl),
            (&c_dev, cl),
            &mut out_dev,
            &case.out.0,
        )
        .unwrap();
        let got = out_dev.to_vec(&ctx.stream).unwrap();
        let what = format!("{} {} -> {}", O::NAME, T::NAME, O::Output::NAME);
        check_storage(&what, &got, &after, &case.out.0, tol);
    }
}

// ---- every op at every type ------------------------------------------------------------

/// `$check::<T, _>(ctx, $op, $tol)` for each listed type.
macro_rules! each {
    ($check:ident, $ctx:expr, $op:expr, $tol:expr; $($t:ty),+) => {
        $( $check::<$t, _>($ctx, $op, $tol); )+
    };
}
macro_rules! numeric {
    ($check:ident, $ctx:expr, $op:expr, $tol:expr) => {
        each!($check, $ctx, $op, $tol; f32, f64, f16, bf16, i32, i64, u8)
    };
}
macro_rules! floats {
    ($check:ident, $ctx:expr, $op:expr, $tol:expr) => {
        each!($check, $ctx, $op, $tol; f32, f64, f16, bf16)
    };
}
macro_rules! elements {
    ($check:ident, $ctx:expr, $op:expr, $tol:expr) => {
        each!($check, $ctx, $op, $tol; f32, f64, f16, bf16, i32, i64, u8, bool)
    };
}

/// Transcendental functions: CUDA's are within 2 to 4 ulps of correctly rounded, and the
/// composite ones (sigmoid, gelu, silu) add a rounding or two.
const TRANSCENDENTAL: Tol = Tol::Ulps(8.0);

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn unary_ops_match_the_cpu() {
    let Some(ctx) = ctx() else { return };
    each!(check_unary, ctx, Neg, Tol::Exact; f32, f64, f16, bf16, i32, i64);
    numeric!(check_unary, ctx, Abs, Tol::Exact);
    numeric!(check_unary, ctx, Sign, Tol::Exact);
    numeric!(check_unary, ctx, Square, Tol::Exact);
    numeric!(check_unary, ctx, Relu, Tol::Exact);
    floats!(check_unary, ctx, Exp, TRANSCENDENTAL);
    floats!(check_unary, ctx, Log, TRANSCENDENTAL);
    floats!(check_unary, ctx, Sqrt, Tol::Exact);
    floats!(check_unary, ctx, Rsqrt, TRANSCENDENTAL);
    floats!(check_unary, ctx, Sin, TRANSCENDENTAL);
    floats!(check_unary, ctx, Cos, TRANSCENDENTAL);
    floats!(check_unary, ctx, Tanh, TRANSCENDENTAL);
    floats!(check_unary, ctx, Sigmoid, TRANSCENDENTAL);
    floats!(check_unary, ctx, Gelu, TRANSCENDENTAL);
    floats!(check_unary, ctx, Silu, TRANSCENDENTAL);
    floats!(check_unary, ctx, Recip, Tol::Exact);
    floats!(check_unary, ctx, Floor, Tol::Exact);
    floats!(check_unary, ctx, Ceil, Tol::Exact);
    floats!(check_unary, ctx, Round, Tol::Exact);
    elements!(check_unary, ctx, Identity, Tol::Exact);
}

/// `$check::<T, _>(ctx, Op(T::from_f64(..)...), tol)` for a scalar-carrying op.
macro_rules! scalar_op {
    ($ctx:expr, $op:ident $args:tt; $($t:ty),+) => {
        $( scalar_op!(@one $ctx, $op, $t, $args); )+
    };
    (@one $ctx:expr, $op:ident, $t:ty, ($($s:expr),+)) => {
        check_unary::<$t, _>($ctx, $op($(<$t as Element>::from_f64($s)),+), Tol::Exact)
    };
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn scalar_ops_match_the_cpu() {
    let Some(ctx) = ctx() else { return };
    scalar_op!(ctx, AddScalar(2.5); f32, f64, f16, bf16);
    scalar_op!(ctx, AddScalar(-3.0); i32, i64);
    scalar_op!(ctx, AddScalar(200.0); u8);
    scalar_op!(ctx, MulScalar(-1.5); f32, f64, f16, bf16);
    scalar_op!(ctx, MulScalar(7.0); i32, i64, u8);
    scalar_op!(ctx, ClampScalar(-1.0, 2.0); f32, f64, f16, bf16, i32, i64);
    scalar_op!(ctx, ClampScalar(30.0, 200.0); u8);
    // The edge: a scalar that wraps u8 arithmetic, and i64 scalars beyond 2^53.
    check_unary::<u8, _>(ctx, AddScalar(255u8), Tol::Exact);
    check_unary::<i64, _>(ctx, MulScalar((1i64 << 60) + 3), Tol::Exact);
}

/// `check_unary::<From, _>(ctx, Cast::<To>::new(), ..)` for every `From`.
macro_rules! casts_to {
    ($ctx:expr, $to:ty) => {
        elements!(check_unary, $ctx, Cast::<$to>::new(), Tol::Exact);
    };
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn casts_match_the_cpu() {
    let Some(ctx) = ctx() else { return };
    casts_to!(ctx, f32);
    casts_to!(ctx, f64);
    casts_to!(ctx, f16);
    casts_to!(ctx, bf16);
    casts_to!(ctx, i32);
    casts_to!(ctx, i64);
    casts_to!(ctx, u8);
    casts_to!(ctx, bool);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn binary_ops_match_the_cpu() {
    let Some(ctx) = ctx() else { return };
    numeric!(check_binary, ctx, Add, Tol::Exact);
    numeric!(check_binary, ctx, Sub, Tol::Exact);
    numeric!(check_binary, ctx, Mul, Tol::Exact);
    numeric!(check_binary, ctx, Div, Tol::Exact);
    numeric!(check_binary, ctx, Maximum, Tol::Exact);
    numeric!(check_binary, ctx, Minimum, Tol::Exact);
    floats!(check_binary, ctx, Pow, TRANSCENDENTAL);
    elements!(check_binary, ctx, Eq, Tol::Exact);
    elements!(check_binary, ctx, Ne, Tol::Exact);
    elements!(check_binary, ctx, Lt, Tol::Exact);
    elements!(check_binary, ctx, Le, Tol::Exact);
    elements!(check_binary, ctx, Gt, Tol::Exact);
    elements!(check_binary, ctx, Ge, Tol::Exact);
}

/// `check_ternary::<bool, T, _>` for `where` at each type.
macro_rules! where_at {
    ($ctx:expr; $($t:ty),+) => {
        $( check_ternary::<bool, $t, _>($ctx, Where, Tol::Exact); )+
    };
}
/// `check_ternary::<T, T, _>` for the ops whose inputs share a type.
macro_rules! ternary_at {
    ($ctx:expr, $op:expr, $tol:expr; $($t:ty),+) => {
        $( check_ternary::<$t, $t, _>($ctx, $op, $tol); )+
    };
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn ternary_ops_match_the_cpu() {
    let Some(ctx) = ctx() else { return };
    where_at!(ctx; f32, f64, f16, bf16, i32, i64, u8, bool);
    ternary_at!(ctx, Clamp, Tol::Exact; f32, f64, f16, bf16, i32, i64, u8);
    ternary_at!(ctx, Fma, Tol::Exact; f32, f64, f16, bf16);
    ternary_at!(ctx, Lerp, Tol::Exact; f32, f64, f16, bf16);
}

// ---- forms, widths and edges ------------------------------------------------------------

/// The plan a launch over these layouts gets, with every operand 256-byte aligned.
fn planned<const N: usize>(layouts: [&Layout; N], size: usize) -> (Form, IndexWidth) {
    let p = plan(&collapse(layouts), [size; N], [0; N]);
    (p.form, p.index)
}

fn run_binary<T: TestElem, O: BinaryOp<T>>(
    ctx: &Ctx,
    op: O,
    rng: &mut SmallRng,
    out: &(Layout, usize),
    a: &(Layout, usize),
    b: &(Layout, usize),
    tol: Tol,
) where
    O::Output: TestElem,
{
    let av: Vec<T> = random_vec(rng, a.1);
    let bv: Vec<T> = random_vec(rng, b.1);
    let values: Vec<O::Output> = offsets(&a.0)
        .iter()
        .zip(offsets(&b.0))
        .map(|(&i, j)| op.cpu(av[i], bv[j]))
        .collect();
    let (before, after) = poisoned_and_expected(rng, out, &values);
    let (a_dev, b_dev) = (upload(ctx, &av), upload(ctx, &bv));
    let mut out_dev = upload(ctx, &before);
    pw::launch::binary(
        &ctx.stream,
        &op,
        (&a_dev, &a.0),
        (&b_dev, &b.0),
        &mut out_dev,
        &out.0,
    )
    .unwrap();
    let got = out_dev.to_vec(&ctx.stream).unwrap();
    let what = format!(
        "{} {} {:?}",
        O::NAME,
        T::NAME,
        planned([&out.0, &a.0, &b.0], 4)
    );
    check_storage(&what, &got, &after, &out.0, tol);
}

fn dense(shape: &[usize]) -> (Layout, usize) {
    let l = Layout::contiguous(shape).unwrap();
    let n = l.numel();
    (l, n)
}

fn transposed(rows: usize, cols: usize) -> (Layout, usize) {
    (Layout::contiguous(&[cols, rows]).unwrap().t(), rows * cols)
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn transposed_inputs_take_the_tiled_form() {
    let Some(ctx) = ctx() else { return };
    let mut rng = SmallRng::seed_from_u64(11);
    // Sizes that are not multiples of the tile, and one below its smallest edge in a dim
    // (plain strided).
    for (r, c) in [(96, 64), (100, 70), (33, 257), (31, 300), (7, 300)] {
        let out = dense(&[r, c]);
        let at = transposed(r, c);
        let b = dense(&[r, c]);
        let expect_tiled = r >= 8 && c >= 8;
        let (form, _) = planned([&out.0, &at.0, &b.0], 4);
        assert_eq!(matches!(form, Form::Tiled { staged: 1, .. }), expect_tiled);
        run_binary::<f32, _>(ctx, Add, &mut rng, &out, &at, &b, Tol::Exact);
        run_binary::<f16, _>(ctx, Add, &mut rng, &out, &at, &b, Tol::Exact);
        run_binary::<u8, _>(ctx, Sub, &mut rng, &out, &b, &at, Tol::Exact);
        run_binary::<f64, _>(ctx, Mul, &mut rng, &out, &at, &at, Tol::Exact);
        run_binary::<i64, _>(ctx, Lt, &mut rng, &out, &at, &b, Tol::Exact);
        // Both inputs transposed, one also flipped along its contiguous dim.
        let atf = (at.0.flip(0).unwrap(), at.1);
        run_binary::<bf16, _>(ctx, Maximum, &mut rng, &out, &atf, &at, Tol::Exact);
        // Output in a larger storage with a row pitch and an offset.
        let pitched = (
            Layout::new(&[r, c], &[c as isize + 3, 1], 5).unwrap(),
            r * (c + 3) + 5,
        );
        run_binary::<i32, _>(ctx, Add, &mut rng, &pitched, &at, &b, Tol::Exact);
    }
    // Where with a transposed mask.
    let (r, c) = (64, 96);
    let mask = transposed(r, c);
    let mut rng = SmallRng::seed_from_u64(12);
    let m: Vec<bool> = random_vec(&mut rng, mask.1);
    let x: Vec<f32> = random_vec(&mut rng, r * c);
    let y: Vec<f32> = random_vec(&mut rng, r * c);
    let out = dense(&[r, c]);
    let values: Vec<f32> = offsets(&mask.0)
        .iter()
        .enumerate()
        .map(|(i, &mi)| Where.cpu(m[mi], x[i], y[i]))
        .collect();
    let (before, after) = poisoned_and_expected(&mut rng, &out, &values);
    let (m_dev, x_dev, y_dev) = (upload(ctx, &m), upload(ctx, &x), upload(ctx, &y));
    let mut out_dev = upload(ctx, &before);
    pw::launch::ternary(
        &ctx.stream,
        &Where,
        (&m_dev, &mask.0),
        (&x_dev, &out.0),
        (&y_dev, &out.0),
        &mut out_dev,
        &out.0,
    )
    .unwrap();
    let got = out_dev.to_vec(&ctx.stream).unwrap();
    check_storage("where (transposed mask)", &got, &after, &out.0, Tol::Exact);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn broadcasts_take_the_inner_vector_form() {
    let Some(ctx) = ctx() else { return };
    let mut rng = SmallRng::seed_from_u64(21);
    let (r, c) = (48, 512);
    let out = dense(&[r, c]);
    let row = (
        Layout::contiguous(&[1, c])
            .unwrap()
            .broadcast_to(&[r, c])
            .unwrap(),
        c,
    );
    let col = (
        Layout::contiguous(&[r, 1])
            .unwrap()
            .broadcast_to(&[r, c])
            .unwrap(),
        r,
    );
    let scalar = (Layout::scalar(3).unwrap().broadcast_to(&[r, c]).unwrap(), 4);
    for (a, b) in [(&out, &row), (&col, &out), (&row, &col), (&out, &scalar)] {
        let (form, _) = planned([&out.0, &a.0, &b.0], 4);
        assert!(matches!(form, Form::StridedVec { .. }), "{form:?}");
        run_binary::<f32, _>(ctx, Add, &mut rng, &out, a, b, Tol::Exact);
        run_binary::<f16, _>(ctx, Mul, &mut rng, &out, a, b, Tol::Exact);
        run_binary::<u8, _>(ctx, Add, &mut rng, &out, a, b, Tol::Exact);
        run_binary::<f64, _>(ctx, Div, &mut rng, &out, a, b, Tol::Exact);
        run_binary::<bool, _>(ctx, Ne, &mut rng, &out, a, b, Tol::Exact);
    }
    // A row that starts one element in: no longer aligned, the plan falls back.
    let shifted = (
        Layout::new(&[1, c], &[c as isize, 1], 1)
            .unwrap()
            .broadcast_to(&[r, c])
            .unwrap(),
        c + 1,
    );
    run_binary::<f32, _>(ctx, Add, &mut rng, &out, &out, &shifted, Tol::Exact);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn misaligned_contiguous_views_fall_back_to_narrower_vectors() {
    let Some(ctx) = ctx() else { return };
    let mut rng = SmallRng::seed_from_u64(31);
    let n = 4099;
    for lead in 0..4 {
        let view = (Layout::new(&[n], &[1], lead).unwrap(), n + lead);
        let aligned = dense(&[n]);
        run_binary::<f32, _>(ctx, Add, &mut rng, &view, &aligned, &view, Tol::Exact);
        run_binary::<u8, _>(ctx, Mul, &mut rng, &aligned, &view, &aligned, Tol::Exact);
        run_binary::<f16, _>(ctx, Sub, &mut rng, &view, &view, &view, Tol::Exact);
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn fill_writes_the_view_and_nothing_else() {
    let Some(ctx) = ctx() else { return };
    let mut rng = SmallRng::seed_from_u64(41);
    fn one<T: TestElem>(ctx: &Ctx, rng: &mut SmallRng, value: T) {
        let shape = random_shape(rng, 3000);
        let mut views = vec![random_view(rng, &shape, false), dense(&[5000])];
        views.push((Layout::new(&[4097], &[1], 3).unwrap(), 4100));
        for out in views {
            let values = vec![value; out.0.numel()];
            let (before, after) = poisoned_and_expected(rng, &out, &values);
            let mut dev = upload(ctx, &before);
            pw::launch::fill(&ctx.stream, value, &mut dev, &out.0).unwrap();
            let got = dev.to_vec(&ctx.stream).unwrap();
            check_storage(
                &format!("fill {}", T::NAME),
                &got,
                &after,
                &out.0,
                Tol::Exact,
            );
        }
    }
    one(ctx, &mut rng, 1.25f32);
    one(ctx, &mut rng, -0.0f64);
    one(ctx, &mut rng, f16::from_f32(3.5));
    one(ctx, &mut rng, bf16::from_f32(-2.75));
    one(ctx, &mut rng, -123456i32);
    one(ctx, &mut rng, i64::MIN + 99);
    one(ctx, &mut rng, 0xA5u8);
    one(ctx, &mut rng, true);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn in_place_ops_read_before_they_write() {
    let Some(ctx) = ctx() else { return };
    let mut rng = SmallRng::seed_from_u64(51);
    for _ in 0..4 {
        let shape = random_shape(&mut rng, 3000);
        let (view, len) = random_view(&mut rng, &shape, false);
        let (b_view, b_len) = random_view(&mut rng, &shape, true);
        let x: Vec<f32> = random_vec(&mut rng, len);
        let b: Vec<f32> = random_vec(&mut rng, b_len);
        let mut expected = x.clone();
        for (&i, j) in offsets(&view).iter().zip(offsets(&b_view)) {
            expected[i] = Exp.cpu(Add.cpu(x[i], b[j]));
        }
        let mut dev = upload(ctx, &x);
        let b_dev = upload(ctx, &b);
        pw::launch::binary_inplace(&ctx.stream, &Add, &mut dev, &view, (&b_dev, &b_view)).unwrap();
        pw::launch::unary_inplace(&ctx.stream, &Exp, &mut dev, &view).unwrap();
        let got = dev.to_vec(&ctx.stream).unwrap();
        check_storage(
            "add then exp in place",
            &got,
            &expected,
            &view,
            TRANSCENDENTAL,
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn bad_layouts_are_errors_and_write_nothing() {
    let Some(ctx) = ctx() else { return };
    let a = upload(ctx, &[1.0f32; 64]);
    let mut out = upload(ctx, &[7.0f32; 64]);
    let l8x8 = Layout::contiguous(&[8, 8]).unwrap();
    let l4x16 = Layout::contiguous(&[4, 16]).unwrap();
    let err = pw::launch::unary(&ctx.stream, &Exp, &a, &l4x16, &mut out, &l8x8).unwrap_err();
    assert!(matches!(
        err,
        Error::Layout(LayoutError::ShapeMismatch { .. })
    ));
    let too_big = Layout::contiguous(&[9, 8]).unwrap();
    let err = pw::launch::unary(&ctx.stream, &Exp, &a, &too_big, &mut out, &too_big).unwrap_err();
    assert!(matches!(
        err,
        Error::Layout(LayoutError::OutOfStorage { .. })
    ));
    let overlapping = Layout::contiguous(&[1, 8])
        .unwrap()
        .broadcast_to(&[8, 8])
        .unwrap();
    let err = pw::launch::unary(&ctx.stream, &Exp, &a, &l8x8, &mut out, &overlapping).unwrap_err();
    assert!(matches!(
        err,
        Error::Layout(LayoutError::OverlappingOutput { .. })
    ));
    // Nothing ran, so nothing changed; an empty view launches nothing.
    let empty = Layout::contiguous(&[0, 8]).unwrap();
    pw::launch::unary(&ctx.stream, &Exp, &a, &empty, &mut out, &empty).unwrap();
    assert_eq!(out.to_vec(&ctx.stream).unwrap(), vec![7.0f32; 64]);
}

// ---- index widths ----------------------------------------------------------------------

/// Views whose offsets pass 2^31 with few elements: rows 2^31 elements apart.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn far_offsets_use_64_bit_index_math() {
    let Some(ctx) = ctx() else { return };
    let mut rng = SmallRng::seed_from_u64(61);
    let gap = 1usize << 31;
    let cols = 4096;
    let len = gap + cols;
    let mut src = vec![0u8; len];
    // Only the two rows the view reads need data.
    let (first, rest) = src.split_at_mut(gap);
    for v in first[..cols].iter_mut().chain(rest.iter_mut()) {
        *v = rng.gen();
    }
    let far = Layout::new(&[2, cols], &[gap as isize, 1], 0).unwrap();
    let near = dense(&[2, cols]);
    let flipped_far = far.flip(1).unwrap();
    for (view, name) in [(&far, "rows 2^31 apart"), (&flipped_far, "flipped")] {
        let (form, width) = planned([&near.0, view], 1);
        assert_eq!(width, IndexWidth::Bits64, "{name}");
        assert!(!matches!(form, Form::Contiguous { .. }), "{name}");
        let expected: Vec<u8> = offsets(view)
            .iter()
            .map(|&i| src[i].wrapping_add(7))
            .collect();
        let a_dev = upload(ctx, &src);
        let mut out_dev = upload(ctx, &vec![0u8; 2 * cols]);
        let op = AddScalar(7u8);
        pw::launch::unary(&ctx.stream, &op, &a_dev, view, &mut out_dev, &near.0).unwrap();
        assert_eq!(out_dev.to_vec(&ctx.stream).unwrap(), expected, "{name}");
    }
    // The same shape with rows close together takes 32-bit math.
    let close_by = Layout::new(&[2, cols], &[2 * cols as isize, 1], 0).unwrap();
    assert_eq!(planned([&near.0, &close_by], 1).1, IndexWidth::Bits32);
}

/// 2^31 + 4097 bytes: a contiguous add_scalar and a strided (reversed) copy, both at 64-bit
/// index width, compared in full.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn more_than_2_pow_31_elements() {
    let Some(ctx) = ctx() else { return };
    let n = (1usize << 31) + 4097;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let src: Vec<u8> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    let line = dense(&[n]);
    let reversed = line.0.flip(0).unwrap();
    assert_eq!(planned([&line.0, &line.0], 1).1, IndexWidth::Bits64);
    let (form, width) = planned([&line.0, &reversed], 1);
    assert_eq!(
        (form, width),
        (Form::Strided { rank: 1 }, IndexWidth::Bits64)
    );

    let a_dev = upload(ctx, &src);
    let mut out_dev = upload(ctx, &vec![0x5Au8; n]);
    pw::launch::unary(
        &ctx.stream,
        &AddScalar(3u8),
        &a_dev,
        &line.0,
        &mut out_dev,
        &line.0,
    )
    .unwrap();
    let got = out_dev.to_vec(&ctx.stream).unwrap();
    let bad = got
        .iter()
        .zip(&src)
        .position(|(&g, &s)| g != s.wrapping_add(3));
    assert_eq!(
        bad, None,
        "add_scalar over 2^31 + 4097 bytes: first mismatch"
    );

    pw::launch::unary(
        &ctx.stream,
        &Identity,
        &a_dev,
        &reversed,
        &mut out_dev,
        &line.0,
    )
    .unwrap();
    let got = out_dev.to_vec(&ctx.stream).unwrap();
    let bad = got.iter().zip(src.iter().rev()).position(|(g, s)| g != s);
    assert_eq!(
        bad, None,
        "reversed copy over 2^31 + 4097 bytes: first mismatch"
    );
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn index_widths_agree_on_a_contiguous_and_a_strided_case() {
    let Some(ctx) = ctx() else { return };
    let mut rng = SmallRng::seed_from_u64(71);
    // 32-bit: ordinary sizes.
    let out = dense(&[300, 200]);
    let at = transposed(300, 200);
    assert_eq!(planned([&out.0, &out.0, &out.0], 4).1, IndexWidth::Bits32);
    assert_eq!(planned([&out.0, &at.0, &out.0], 4).1, IndexWidth::Bits32);
    run_binary::<f32, _>(ctx, Add, &mut rng, &out, &out, &out, Tol::Exact);
    run_binary::<f32, _>(ctx, Add, &mut rng, &out, &at, &out, Tol::Exact);
    // 64-bit is covered by `far_offsets_use_64_bit_index_math` (strided) and
    // `more_than_2_pow_31_elements` (contiguous and strided).
}
