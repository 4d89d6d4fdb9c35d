//! Random fused expression trees against eager evaluation of the same trees, on every
//! device.
//!
//! Each case draws an output shape, an output element type and one to four trees of depth up
//! to 8 over every op of the op table (`UNARY_OPS`, `BINARY_OPS`, `TERNARY_OPS`: the test
//! checks each one was drawn), comparisons, `where_cond`, casts between all thirteen element types
//! and scalars, whose leaves are views of random layouts (transposed, flipped, with an offset,
//! broadcast implicitly or through stride-0 views) of at most eight tensors of several element
//! types; in two cases of five the outputs start with random values and the trees also read
//! them in place (`expr::update`, with the current values its closure hands out). The trees are built by a small interpreter: each step draws an op at run time and
//! applies it twice, to the fused expression (type-erased with `Expr::boxed`, so one Rust type
//! holds any tree) and to the eager result of the same subtree. The outputs, written through
//! random layouts and poisoned first, must equal the eager results bit for bit (NaNs equal
//! whatever their payload; an in-place output against the eager tree over its values
//! before the update): fused and eager round every op's result to its element type and
//! share the op table's CPU closures and CUDA expressions.
//!
//! On the GPU the same trees are also compared with the CPU's: bit for bit for trees of
//! exactly rounded ops (IEEE arithmetic, `sqrt`, `fma`, rounding, comparisons, casts) outside
//! `bf16`; trees with a transcendental op (`exp`, `sin`, `pow`, ..., within the table's ulp
//! tolerances per op but not composable through a depth-8 tree with `floor` or comparisons in
//! it), `bf16` values (`TestDevice::BF16_ROUNDING_ULPS`) or conversions to `f16` from other
//! types than `f32` are checked fused against eager on the GPU only. Set
//! `FUSED_RANDOM_CASES` to run more cases; a failure names its seed.

use std::any::TypeId;
use std::collections::BTreeSet;

use crate::common::device::{host, test_device, TestDevice};
use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::element::{DType, Element, FloatElement, Numeric, Signed};
use typestate_tensor::ops::table::{BINARY_OPS, TERNARY_OPS, UNARY_OPS};
use typestate_tensor::tensor::expr::{self, node::Boxed, Expr};
use typestate_tensor::tensor::{Tensor, TensorView, TensorViewMut};
use typestate_tensor::Cpu;

const MAX_DEPTH: usize = 8;
/// Nodes per tree at most (a budget: deep trees stay narrow).
const MAX_NODES: usize = 64;
/// Distinct tensors one case may read (`expr::MAX_LEAVES`).
const MAX_LEAVES: usize = expr::MAX_LEAVES;
/// Pool tensors per element type.
const POOL: usize = 2;

/// Ops with a method on no tensor or expression (reached through `contiguous`).
const NOT_EXPRESSIBLE: &[&str] = &["copy"];
/// Ops whose GPU results are not exactly rounded (libdevice, within the table's tolerances).
const TRANSCENDENTAL: &[&str] = &[
    "exp",
    "log",
    "rsqrt",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "gelu",
    "silu",
    "pow",
    // Activations (issue 26).
    "elu",
    "selu",
    "celu",
    "softplus",
    "mish",
    "logsigmoid",
    "tanhshrink",
    "gelu_tanh",
];

fn cases<D: 'static>() -> u64 {
    // Each GPU case compiles a fused kernel and the eager kernels it has not seen yet.
    let default = if is_cpu::<D>() { 640 } else { 16 };
    std::env::var("FUSED_RANDOM_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn is_cpu<D: 'static>() -> bool {
    TypeId::of::<D>() == TypeId::of::<Cpu>()
}

/// A type-erased fused expression.
type E<'p, T, D> = Expr<T, D, Boxed<'p, T, D>>;

/// A subtree in both forms: the fused expression and its eager result.
struct Pair<'p, T: Element, D: TestDevice> {
    e: E<'p, T, D>,
    t: Tensor<T, D>,
}

/// How a pool tensor is viewed as a leaf.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Contiguous,
    /// Stored with its dims reversed, viewed through `.t()`.
    Transposed,
    /// Viewed reversed along a dim.
    Flipped(usize),
    /// Stored two rows longer, viewed from row 1.
    Offset,
    /// Viewed through `broadcast_to(out shape)` (stride-0 dims).
    Expanded,
}

/// The pool tensors of every element type, with their view kinds.
struct Pool<T: Element, D: TestDevice> {
    owners: Vec<(Tensor<T, D>, Kind)>,
}

/// Every element type's pool (data drawn on the host, then uploaded).
macro_rules! pools {
    ($($f:ident: $t:ty),*) => {
        struct Owners<D: TestDevice> { $($f: Pool<$t, D>,)* }
        struct Views<'p, D: TestDevice> { $($f: Vec<TensorView<'p, $t, D>>,)* }
        /// The outputs' values before an in-place case (row-major, output shape): only the
        /// outputs' element type's list is filled.
        struct Initial<D: TestDevice> { $($f: Vec<Tensor<$t, D>>,)* }

        impl<D: TestDevice> Initial<D> {
            fn empty() -> Self {
                Initial { $($f: Vec::new(),)* }
            }
        }

        /// The outputs' current values in an in-place case, as the update's closure hands
        /// them out (only the outputs' element type's list is filled).
        struct Currents<'p, D: TestDevice> { $($f: Vec<E<'p, $t, D>>,)* }

        impl<D: TestDevice> Currents<'_, D> {
            fn empty() -> Self {
                Currents { $($f: Vec::new(),)* }
            }
        }

        impl Owners<Cpu> {
            fn draw(rng: &mut SmallRng, out: &[usize]) -> Self {
                Owners { $($f: Pool::draw(rng, out),)* }
            }
        }

        impl<D: TestDevice> Owners<D> {
            fn upload(host: &Owners<Cpu>, dev: &D) -> Self {
                Owners { $($f: Pool { owners: host.$f.owners.iter().map(|(t, k)| (dev.upload(t), *k)).collect() },)* }
            }

            fn views(&self, out: &[usize]) -> Views<'_, D> {
                Views { $($f: self.$f.owners.iter().map(|(t, k)| view_of(t, *k, out)).collect(),)* }
            }
        }

        $(
            impl Pooled for $t {
                fn views<'v, 'p, D: TestDevice>(v: &'v Views<'p, D>) -> &'v [TensorView<'p, $t, D>] {
                    &v.$f
                }
                fn initial<D: TestDevice>(i: &Initial<D>) -> &[Tensor<$t, D>] {
                    &i.$f
                }
                fn currents<'c, 'p, D: TestDevice>(c: &'c Currents<'p, D>) -> &'c [E<'p, $t, D>] {
                    &c.$f
                }
                fn currents_mut<'c, 'p, D: TestDevice>(c: &'c mut Currents<'p, D>) -> &'c mut Vec<E<'p, $t, D>> {
                    &mut c.$f
                }
                fn initial_mut<D: TestDevice>(i: &mut Initial<D>) -> &mut Vec<Tensor<$t, D>> {
                    &mut i.$f
                }
            }
        )*
    };
}

pools!(
    f32: f32, f64: f64, f16: f16, bf16: bf16, i32: i32, i64: i64, u8: u8, bool: bool,
    i8: i8, i16: i16, u16: u16, u32: u32, u64: u64
);

trait Pooled: Element {
    fn views<'v, 'p, D: TestDevice>(v: &'v Views<'p, D>) -> &'v [TensorView<'p, Self, D>];
    fn initial<D: TestDevice>(i: &Initial<D>) -> &[Tensor<Self, D>];
    fn initial_mut<D: TestDevice>(i: &mut Initial<D>) -> &mut Vec<Tensor<Self, D>>;
    fn currents<'c, 'p, D: TestDevice>(c: &'c Currents<'p, D>) -> &'c [E<'p, Self, D>];
    fn currents_mut<'c, 'p, D: TestDevice>(
        c: &'c mut Currents<'p, D>,
    ) -> &'c mut Vec<E<'p, Self, D>>;
}

impl<T: Gen> Pool<T, Cpu> {
    fn draw(rng: &mut SmallRng, out: &[usize]) -> Self {
        let owners = (0..POOL)
            .map(|_| {
                // A shape that broadcasts to `out`: some dims 1, maybe fewer leading dims.
                let drop = if rng.gen_bool(0.2) {
                    rng.gen_range(0..=out.len().saturating_sub(1))
                } else {
                    0
                };
                let mut shape: Vec<usize> = out[drop..]
                    .iter()
                    .map(|&n| if rng.gen_bool(0.25) { 1 } else { n })
                    .collect();
                if shape.is_empty() {
                    shape.push(1);
                }
                let kind = match rng.gen_range(0..5) {
                    0 => Kind::Contiguous,
                    1 => Kind::Transposed,
                    2 => Kind::Flipped(rng.gen_range(0..shape.len())),
                    3 => Kind::Offset,
                    _ => Kind::Expanded,
                };
                let stored: Vec<usize> = match kind {
                    Kind::Transposed => shape.iter().rev().copied().collect(),
                    Kind::Offset => {
                        let mut s = shape.clone();
                        s[0] += 2;
                        s
                    }
                    _ => shape,
                };
                let t = Tensor::from_fn(&stored, |_| T::draw(rng)).unwrap();
                (t, kind)
            })
            .collect();
        Pool { owners }
    }
}

fn view_of<'p, T: Element, D: TestDevice>(
    t: &'p Tensor<T, D>,
    kind: Kind,
    out: &[usize],
) -> TensorView<'p, T, D> {
    match kind {
        Kind::Contiguous => t.view(),
        Kind::Transposed => t.t(),
        Kind::Flipped(d) => t.flip(d as isize).unwrap(),
        Kind::Offset => {
            let n = t.shape()[0] - 2;
            t.narrow(0, 1, n).unwrap()
        }
        Kind::Expanded => t.broadcast_to(out).unwrap(),
    }
}

/// One tree's generation state.
struct Ctx<'p, D: TestDevice> {
    dev: &'p D,
    rng: SmallRng,
    views: &'p Views<'p, D>,
    /// Distinct pool tensors read so far by the case's trees.
    used: Vec<(DType, usize)>,
    /// How many distinct pool tensors the case may read: a GPU kernel takes 8 inputs,
    /// outputs read in place included.
    max_leaves: usize,
    /// Nodes left in the current tree.
    budget: usize,
    /// Whether the GPU must equal the CPU bit for bit (see the module docs).
    exact: bool,
    /// In an in-place case, the outputs' values before the update (read by `Current` nodes).
    initial: &'p Initial<D>,
    /// In an in-place case, the current values the update's closure handed out.
    currents: Currents<'p, D>,
}

/// Element types the interpreter builds trees of.
trait Gen: Pooled + IntLogicGen {
    /// A random value (data and scalars).
    fn draw(rng: &mut SmallRng) -> Self;
    /// What outputs are filled with before a fused pass.
    fn poison() -> Self;
    /// A random op of this type's ops (beyond the ones every type has).
    fn own_op<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D>;
}

/// A random tree of depth at most `depth` producing `T`.
fn node<'p, T: Gen, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, T, D> {
    if T::DTYPE == DType::BF16 {
        cx.exact = false;
    }
    cx.budget = cx.budget.saturating_sub(1);
    if depth == 0 || cx.budget == 0 {
        return terminal(cx);
    }
    match cx.rng.gen_range(0..24) {
        0 => terminal(cx),
        1 | 2 => cast_from_any(cx, depth - 1),
        3 => {
            let mask = node::<bool, D>(cx, depth - 1);
            let (a, b) = (child(cx, depth), child::<T, D>(cx, depth));
            Pair {
                e: expr::where_cond(mask.e, a.e, b.e).boxed(),
                t: Tensor::where_cond(&mask.t, &a.t, &b.t).unwrap(),
            }
        }
        // Integer, bitwise, logical and float-predicate ops (issue 26).
        4 | 5 => T::int_logic_op(cx, depth),
        _ => T::own_op(cx, depth),
    }
}

/// A second or third operand: a tree of random smaller depth.
fn child<'p, T: Gen, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, T, D> {
    let d = cx.rng.gen_range(depth / 2..depth);
    node(cx, d)
}

/// A leaf (a pool view) or a scalar.
fn terminal<'p, T: Gen, D: TestDevice>(cx: &mut Ctx<'p, D>) -> Pair<'p, T, D> {
    let initial = T::initial(cx.initial);
    if !initial.is_empty() && cx.rng.gen_bool(0.35) {
        // An output's current value (in-place cases; only the outputs' type has any).
        let k = cx.rng.gen_range(0..initial.len());
        let e = T::currents(&cx.currents)[k].clone();
        return Pair {
            e,
            t: initial[k].contiguous().unwrap(),
        };
    }
    if cx.rng.gen_bool(0.8) {
        let pool = T::views(cx.views);
        let i = cx.rng.gen_range(0..pool.len());
        let key = (T::DTYPE, i);
        if cx.used.contains(&key) || cx.used.len() < cx.max_leaves {
            if !cx.used.contains(&key) {
                cx.used.push(key);
            }
            let v = &pool[i];
            return Pair {
                e: v.lazy().boxed(),
                t: v.contiguous().unwrap(),
            };
        }
    }
    let s = T::draw(&mut cx.rng);
    Pair {
        e: expr::scalar::<T, D>(s).boxed(),
        t: cx.dev.upload(&Tensor::scalar(s)),
    }
}

/// `x.cast::<T>()` of a tree of a random element type.
fn cast_from_any<'p, T: Gen, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, T, D> {
    macro_rules! from {
        ($u:ty) => {{
            let a = node::<$u, D>(cx, depth);
            let to_half_inexact = T::DTYPE == DType::F16 && <$u>::DTYPE != DType::F32;
            if to_half_inexact && <$u>::DTYPE != DType::F16 {
                cx.exact = false;
            }
            Pair {
                e: a.e.cast::<T>().boxed(),
                t: a.t.cast::<T>().unwrap(),
            }
        }};
    }
    match cx.rng.gen_range(0..13) {
        0 => from!(f32),
        1 => from!(f64),
        2 => from!(f16),
        3 => from!(bf16),
        4 => from!(i32),
        5 => from!(i64),
        6 => from!(u8),
        7 => from!(bool),
        8 => from!(i8),
        9 => from!(i16),
        10 => from!(u16),
        11 => from!(u32),
        _ => from!(u64),
    }
}

/// `a.op()` on both forms.
macro_rules! unary {
    ($cx:ident, $depth:ident, $m:ident $(, $p:ident)*) => {{
        let a = node::<Self, D>($cx, $depth - 1);
        $( let $p = Self::draw(&mut $cx.rng); )*
        Pair { e: a.e.$m($($p),*).boxed(), t: a.t.$m($($p),*).unwrap() }
    }};
}

/// `a.op(b)` on both forms.
macro_rules! binary {
    ($cx:ident, $depth:ident, $m:ident) => {{
        let a = node::<Self, D>($cx, $depth - 1);
        let b = child::<Self, D>($cx, $depth);
        Pair {
            e: a.e.$m(b.e).boxed(),
            t: a.t.$m(&b.t).unwrap(),
        }
    }};
}

/// `a.op(b, c)` on both forms.
macro_rules! ternary {
    ($cx:ident, $depth:ident, $m:ident) => {{
        let a = node::<Self, D>($cx, $depth - 1);
        let b = child::<Self, D>($cx, $depth);
        let c = child::<Self, D>($cx, $depth);
        Pair {
            e: a.e.$m(b.e, c.e).boxed(),
            t: a.t.$m(&b.t, &c.t).unwrap(),
        }
    }};
}

/// Number of ops [`numeric_op`] picks from.
const NUMERIC: usize = 14;

/// The ops of every `Numeric` type (`k < NUMERIC` picks one).
fn numeric_op<'p, T: Gen + Numeric, D: TestDevice>(
    cx: &mut Ctx<'p, D>,
    depth: usize,
    k: usize,
) -> Pair<'p, T, D> {
    // The macros name `Self`: a trait's provided method gives them one.
    trait Ops<D: TestDevice>: Gen + Numeric + Sized {
        fn pick<'p>(cx: &mut Ctx<'p, D>, depth: usize, k: usize) -> Pair<'p, Self, D> {
            match k {
                0 => binary!(cx, depth, add),
                1 => binary!(cx, depth, sub),
                2 => binary!(cx, depth, mul),
                3 => binary!(cx, depth, div),
                4 => binary!(cx, depth, maximum),
                5 => binary!(cx, depth, minimum),
                6 => unary!(cx, depth, abs),
                7 => unary!(cx, depth, sign),
                8 => unary!(cx, depth, square),
                9 => unary!(cx, depth, relu),
                10 => unary!(cx, depth, add_scalar, s),
                11 => unary!(cx, depth, mul_scalar, s),
                12 => {
                    let (lo, hi) = (Self::draw(&mut cx.rng), Self::draw(&mut cx.rng));
                    let a = node::<Self, D>(cx, depth - 1);
                    Pair {
                        e: a.e.clamp_scalar(lo, hi).boxed(),
                        t: a.t.clamp_scalar(lo, hi).unwrap(),
                    }
                }
                _ => ternary!(cx, depth, clamp),
            }
        }
    }
    impl<D: TestDevice, T: Gen + Numeric> Ops<D> for T {}
    <T as Ops<D>>::pick(cx, depth, k)
}

/// `-a` for signed types.
fn neg_op<'p, T: Gen + Signed, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, T, D> {
    let a = node::<T, D>(cx, depth - 1);
    Pair {
        e: (-a.e).boxed(),
        t: a.t.neg().unwrap(),
    }
}

/// Number of ops [`float_op`] picks from.
const FLOAT: usize = 17;

/// The float-only ops.
fn float_op<'p, T: Gen + FloatElement, D: TestDevice>(
    cx: &mut Ctx<'p, D>,
    depth: usize,
    k: usize,
) -> Pair<'p, T, D> {
    trait Ops<D: TestDevice>: Gen + FloatElement + Sized {
        fn pick<'p>(cx: &mut Ctx<'p, D>, depth: usize, k: usize) -> Pair<'p, Self, D> {
            match k {
                0 => unary!(cx, depth, exp),
                1 => unary!(cx, depth, log),
                2 => unary!(cx, depth, sqrt),
                3 => unary!(cx, depth, rsqrt),
                4 => unary!(cx, depth, sin),
                5 => unary!(cx, depth, cos),
                6 => unary!(cx, depth, tanh),
                7 => unary!(cx, depth, sigmoid),
                8 => unary!(cx, depth, gelu),
                9 => unary!(cx, depth, silu),
                10 => unary!(cx, depth, recip),
                11 => unary!(cx, depth, floor),
                12 => unary!(cx, depth, ceil),
                13 => unary!(cx, depth, round),
                14 => binary!(cx, depth, pow),
                15 => ternary!(cx, depth, fma),
                _ => ternary!(cx, depth, lerp),
            }
        }
    }
    impl<D: TestDevice, T: Gen + FloatElement> Ops<D> for T {}
    <T as Ops<D>>::pick(cx, depth, k)
}

/// A comparison of two trees of a random element type.
fn compare<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, bool, D> {
    macro_rules! cmp {
        ($u:ty) => {{
            let a = node::<$u, D>(cx, depth - 1);
            let b = child::<$u, D>(cx, depth);
            match cx.rng.gen_range(0..6) {
                0 => Pair {
                    e: a.e.eq(b.e).boxed(),
                    t: a.t.eq(&b.t).unwrap(),
                },
                1 => Pair {
                    e: a.e.ne(b.e).boxed(),
                    t: a.t.ne(&b.t).unwrap(),
                },
                2 => Pair {
                    e: a.e.lt(b.e).boxed(),
                    t: a.t.lt(&b.t).unwrap(),
                },
                3 => Pair {
                    e: a.e.le(b.e).boxed(),
                    t: a.t.le(&b.t).unwrap(),
                },
                4 => Pair {
                    e: a.e.gt(b.e).boxed(),
                    t: a.t.gt(&b.t).unwrap(),
                },
                _ => Pair {
                    e: a.e.ge(b.e).boxed(),
                    t: a.t.ge(&b.t).unwrap(),
                },
            }
        }};
    }
    match cx.rng.gen_range(0..13) {
        0 => cmp!(f32),
        1 => cmp!(f64),
        2 => cmp!(f16),
        3 => cmp!(bf16),
        4 => cmp!(i32),
        5 => cmp!(i64),
        6 => cmp!(u8),
        7 => cmp!(bool),
        8 => cmp!(i8),
        9 => cmp!(i16),
        10 => cmp!(u16),
        11 => cmp!(u32),
        _ => cmp!(u64),
    }
}

macro_rules! float_gen {
    ($($t:ty: $from:expr, $poison:expr;)*) => {$(
        impl Gen for $t {
            fn draw(rng: &mut SmallRng) -> Self {
                let x: f32 = match rng.gen_range(0..16) {
                    0 => 0.0,
                    1 => -0.0,
                    2 => rng.gen_range(-40.0..40.0),
                    _ => rng.gen_range(-3.0..3.0),
                };
                $from(x)
            }
            fn poison() -> Self {
                $from($poison)
            }
            fn own_op<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D> {
                let k = cx.rng.gen_range(0..NUMERIC + 1 + FLOAT + ACTIVATION + FLOAT_MATH);
                if k < NUMERIC {
                    numeric_op(cx, depth, k)
                } else if k == NUMERIC {
                    neg_op(cx, depth)
                } else if k < NUMERIC + 1 + FLOAT {
                    float_op(cx, depth, k - NUMERIC - 1)
                } else if k < NUMERIC + 1 + FLOAT + ACTIVATION {
                    activation_op(cx, depth, k - NUMERIC - 1 - FLOAT)
                } else {
                    float_math_op(cx, depth, k - NUMERIC - 1 - FLOAT - ACTIVATION)
                }
            }
        }
    )*};
}

float_gen! {
    f32: |x: f32| x, 1234.5;
    f64: f64::from, 1234.5;
    f16: f16::from_f32, 1234.5;
    bf16: bf16::from_f32, 1234.5;
}

macro_rules! int_gen {
    ($($t:ty: $lo:expr, $hi:expr, $poison:expr, $ops:expr;)*) => {$(
        impl Gen for $t {
            fn draw(rng: &mut SmallRng) -> Self {
                if rng.gen_bool(0.05) {
                    <$t>::MAX
                } else {
                    rng.gen_range($lo..=$hi)
                }
            }
            fn poison() -> Self {
                $poison
            }
            fn own_op<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D> {
                let k = cx.rng.gen_range(0..$ops);
                if k < NUMERIC {
                    numeric_op(cx, depth, k)
                } else {
                    signed_op(cx, depth)
                }
            }
        }
    )*};
}

/// `-a` for the signed integer types (the unsigned ones never draw it).
trait SignedOp: Gen {
    fn signed<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D>;
}
macro_rules! signed_op {
    (signed: $($s:ty),*; unsigned: $($u:ty),*) => {
        $(impl SignedOp for $s {
            fn signed<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D> {
                neg_op(cx, depth)
            }
        })*
        $(impl SignedOp for $u {
            fn signed<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D> {
                numeric_op(cx, depth, 0)
            }
        })*
    };
}
signed_op!(signed: i32, i64, i8, i16; unsigned: u8, u16, u32, u64);
fn signed_op<'p, T: SignedOp, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, T, D> {
    T::signed(cx, depth)
}

int_gen! {
    i32: -60, 60, 0x5a5a_5a5a, NUMERIC + 1;
    i64: -60, 60, 0x5a5a_5a5a_5a5a, NUMERIC + 1;
    u8: 0, 255, 0x5a, NUMERIC;
    i8: -60, 60, 0x5a, NUMERIC + 1;
    i16: -60, 60, 0x5a5a, NUMERIC + 1;
    u16: 0, 300, 0x5a5a, NUMERIC;
    u32: 0, 300, 0x5a5a_5a5a, NUMERIC;
    u64: 0, 300, 0x5a5a_5a5a_5a5a, NUMERIC;
}

impl Gen for bool {
    fn draw(rng: &mut SmallRng) -> Self {
        rng.gen_bool(0.5)
    }
    fn poison() -> Self {
        true
    }
    fn own_op<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D> {
        compare(cx, depth)
    }
}

/// One case's results on one device.
struct Outcome {
    /// The outputs' element type.
    dtype: DType,
    /// Per output, the fused result (row-major, formatted: NaNs equal whatever the payload).
    fused: Vec<Vec<String>>,
    /// Per output, the eager result of the same tree, broadcast to the output shape.
    eager: Vec<Vec<String>>,
    /// Whether another device must give the same bits (see the module docs).
    exact: bool,
    /// The op names the trees used (`cast` for conversions).
    ops: BTreeSet<String>,
}

fn fmt<T: Element>(v: Vec<T>) -> Vec<String> {
    v.iter().map(|x| format!("{x:?}")).collect()
}

/// Case `seed` on `dev`: the same seed draws the same shapes, data and trees on any device.
fn run_case<D: TestDevice>(dev: &D, seed: u64) -> Outcome {
    let mut rng = SmallRng::seed_from_u64(seed);
    let rank = rng.gen_range(1..=4);
    let shape: Vec<usize> = (0..rank).map(|_| rng.gen_range(1..=6)).collect();
    let host_pools = Owners::draw(&mut rng, &shape);
    let owners = Owners::upload(&host_pools, dev);
    let views = owners.views(&shape);
    let n_out = rng.gen_range(1..=4);
    let out_kind = rng.gen_range(0..3u8);
    let tree_seed: u64 = rng.gen();
    let in_place = rng.gen_bool(0.4);
    let case = Case {
        shape: &shape,
        n_out,
        out_kind,
        seed: tree_seed,
        in_place,
    };
    match rng.gen_range(0..13) {
        0 => case.run::<f32, D>(dev, &views),
        1 => case.run::<f64, D>(dev, &views),
        2 => case.run::<f16, D>(dev, &views),
        3 => case.run::<bf16, D>(dev, &views),
        4 => case.run::<i32, D>(dev, &views),
        5 => case.run::<i64, D>(dev, &views),
        6 => case.run::<u8, D>(dev, &views),
        7 => case.run::<bool, D>(dev, &views),
        8 => case.run::<i8, D>(dev, &views),
        9 => case.run::<i16, D>(dev, &views),
        10 => case.run::<u16, D>(dev, &views),
        11 => case.run::<u32, D>(dev, &views),
        _ => case.run::<u64, D>(dev, &views),
    }
}

/// The outputs of a case: shape, count, layout and the trees' seed.
struct Case<'s> {
    shape: &'s [usize],
    n_out: usize,
    /// 0: row-major; 1: written through a transpose; 2: through a flip of dim 0.
    out_kind: u8,
    seed: u64,
    /// Whether the trees may read the outputs' current values (`expr::update`); the
    /// outputs then start with random values instead of poison.
    in_place: bool,
}

impl Case<'_> {
    fn run<T: Gen, D: TestDevice>(&self, dev: &D, views: &Views<'_, D>) -> Outcome {
        let mut rng = SmallRng::seed_from_u64(self.seed);
        let mut initial = Initial::empty();
        if self.in_place {
            for _ in 0..self.n_out {
                let t = Tensor::from_fn(self.shape, |_| T::draw(&mut rng)).unwrap();
                T::initial_mut(&mut initial).push(dev.upload(&t));
            }
        }
        let mut cx = Ctx {
            dev,
            rng,
            views,
            used: Vec::new(),
            max_leaves: MAX_LEAVES - if self.in_place { self.n_out } else { 0 },
            budget: 0,
            exact: true,
            initial: &initial,
            currents: Currents::empty(),
        };
        // Outputs poisoned with values no op here is likely to produce, in a random layout.
        let stored: Vec<usize> = if self.out_kind == 1 {
            self.shape.iter().rev().copied().collect()
        } else {
            self.shape.to_vec()
        };
        let mut owners: Vec<Tensor<T, D>> = if self.in_place {
            // Stored so that the output view (below) reads the initial values.
            T::initial(&initial)
                .iter()
                .map(|t| match self.out_kind {
                    1 => t.t().contiguous().unwrap(),
                    2 => t.flip(0).unwrap().contiguous().unwrap(),
                    _ => t.contiguous().unwrap(),
                })
                .collect()
        } else {
            (0..self.n_out)
                .map(|_| {
                    let mut t = Tensor::<T, D>::zeros_on(&stored, dev).unwrap();
                    t.fill_(T::poison()).unwrap();
                    t
                })
                .collect()
        };
        let mut pairs = Vec::new();
        {
            let n_out = self.n_out;
            let mut outs: Vec<TensorViewMut<'_, T, D>> = owners
                .iter_mut()
                .map(|o| match self.out_kind {
                    1 => o.view_mut().t(),
                    2 => o.view_mut().flip(0).unwrap(),
                    _ => o.view_mut(),
                })
                .collect();
            if self.in_place {
                update_all(&mut outs, |currents| {
                    build_trees(&mut cx, currents, n_out, &mut pairs)
                })
                .unwrap();
            } else {
                let exprs = build_trees(&mut cx, Vec::new(), n_out, &mut pairs);
                eval_all(exprs, &mut outs).unwrap();
            }
        }
        let mut ops = BTreeSet::new();
        for p in &pairs {
            let names = p.e.op_names();
            if std::env::var("FUSED_RANDOM_DEBUG").is_ok() {
                eprintln!(
                    "{:?} out {:?} x{}: {} ops, exact {}",
                    T::DTYPE,
                    self.shape,
                    self.n_out,
                    names.len(),
                    cx.exact
                );
            }
            ops.extend(names.into_iter().map(str::to_owned));
        }
        let fused = owners
            .iter()
            .map(|o| match self.out_kind {
                1 => fmt(host(&o.t())),
                2 => fmt(host(&o.flip(0).unwrap())),
                _ => fmt(host(o)),
            })
            .collect();
        let eager = pairs
            .iter()
            .map(|p| fmt(host(&p.t.broadcast_to(self.shape).unwrap())))
            .collect();
        let transcendental = ops.iter().any(|o| {
            TRANSCENDENTAL.contains(&o.as_str()) || TRANSCENDENTAL_FLOAT_MATH.contains(&o.as_str())
        });
        Outcome {
            dtype: T::DTYPE,
            fused,
            eager,
            exact: cx.exact && !transcendental,
            ops,
        }
    }
}

/// `n_out` random trees of `T` (their fused and eager forms into `pairs`), reading the
/// outputs' current values `currents` where an in-place case has them; returns the fused
/// forms.
fn build_trees<'p, T: Gen, D: TestDevice>(
    cx: &mut Ctx<'p, D>,
    currents: Vec<E<'p, T, D>>,
    n_out: usize,
    pairs: &mut Vec<Pair<'p, T, D>>,
) -> Vec<E<'p, T, D>> {
    *T::currents_mut(&mut cx.currents) = currents;
    for _ in 0..n_out {
        cx.budget = MAX_NODES;
        // Mostly deep trees: depth 8 half of the time.
        let depth = if cx.rng.gen_bool(0.5) {
            MAX_DEPTH
        } else {
            cx.rng.gen_range(1..MAX_DEPTH)
        };
        pairs.push(node::<T, D>(cx, depth));
    }
    pairs.iter().map(|p| p.e.clone()).collect()
}

/// `expr::eval_into` of one to four expressions into as many outputs.
fn eval_all<T: Element, D: TestDevice>(
    exprs: Vec<E<'_, T, D>>,
    outs: &mut [TensorViewMut<'_, T, D>],
) -> typestate_tensor::error::Result<()> {
    let mut it = exprs.into_iter();
    let mut next = || it.next().expect("one expression per output");
    match outs {
        [a] => expr::eval_into((next(),), (a,)),
        [a, b] => expr::eval_into((next(), next()), (a, b)),
        [a, b, c] => expr::eval_into((next(), next(), next()), (a, b, c)),
        [a, b, c, d] => expr::eval_into((next(), next(), next(), next()), (a, b, c, d)),
        _ => unreachable!("one to four outputs"),
    }
}

/// `expr::update` of one to four outputs: `build` gets the outputs' current values (as the
/// update's closure hands them out) and returns one expression per output.
fn update_all<'p, T: Element, D: TestDevice>(
    outs: &mut [TensorViewMut<'_, T, D>],
    build: impl FnOnce(Vec<E<'p, T, D>>) -> Vec<E<'p, T, D>>,
) -> typestate_tensor::error::Result<()> {
    match outs {
        [a] => expr::update((a,), |(c0,)| {
            let mut e = build(vec![c0.boxed()]).into_iter();
            (e.next().unwrap(),)
        }),
        [a, b] => expr::update((a, b), |(c0, c1)| {
            let mut e = build(vec![c0.boxed(), c1.boxed()]).into_iter();
            (e.next().unwrap(), e.next().unwrap())
        }),
        [a, b, c] => expr::update((a, b, c), |(c0, c1, c2)| {
            let mut e = build(vec![c0.boxed(), c1.boxed(), c2.boxed()]).into_iter();
            (e.next().unwrap(), e.next().unwrap(), e.next().unwrap())
        }),
        [a, b, c, d] => expr::update((a, b, c, d), |(c0, c1, c2, c3)| {
            let mut e = build(vec![c0.boxed(), c1.boxed(), c2.boxed(), c3.boxed()]).into_iter();
            (
                e.next().unwrap(),
                e.next().unwrap(),
                e.next().unwrap(),
                e.next().unwrap(),
            )
        }),
        _ => unreachable!("one to four outputs"),
    }
}

test_device!(
    random_trees_fused_equal_eager,
    random_trees_cpu,
    random_trees_gpu
);
fn random_trees_fused_equal_eager<D: TestDevice + 'static>(dev: &D) {
    let n = cases::<D>();
    let mut ops = BTreeSet::new();
    let (mut exact, mut cross_checked) = (0, 0);
    for seed in 0..n {
        let got = run_case(dev, seed);
        for (k, (f, e)) in got.fused.iter().zip(&got.eager).enumerate() {
            assert_eq!(
                f, e,
                "seed {seed}, output {k} of {:?}: fused != eager",
                got.dtype
            );
        }
        exact += usize::from(got.exact);
        if !is_cpu::<D>() && got.exact {
            let cpu = run_case(&Cpu, seed);
            assert_eq!(
                got.fused, cpu.fused,
                "seed {seed} ({:?}): this device != the CPU on a tree of exactly rounded ops",
                got.dtype
            );
            cross_checked += 1;
        }
        ops.extend(got.ops);
    }
    let missing: Vec<&str> = UNARY_OPS
        .iter()
        .chain(BINARY_OPS)
        .chain(TERNARY_OPS)
        .map(|o| o.name)
        .chain(["cast"])
        .filter(|name| !NOT_EXPRESSIBLE.contains(name) && !ops.contains(*name))
        .collect();
    println!(
        "{n} random cases ({exact} of exactly rounded ops), {} distinct ops drawn, {cross_checked} compared with the CPU bit for bit; not drawn: {missing:?}",
        ops.len()
    );
    if n >= 100 {
        assert!(missing.is_empty(), "ops never drawn: {missing:?}");
    }
}

// Activations (issue 26).

/// Number of ops [`activation_op`] picks from.
const ACTIVATION: usize = 18;

/// The activations of `torch.nn.functional` (float types), scalars drawn like data.
fn activation_op<'p, T: Gen + FloatElement, D: TestDevice>(
    cx: &mut Ctx<'p, D>,
    depth: usize,
    k: usize,
) -> Pair<'p, T, D> {
    trait Ops<D: TestDevice>: Gen + FloatElement + Sized {
        fn pick<'p>(cx: &mut Ctx<'p, D>, depth: usize, k: usize) -> Pair<'p, Self, D> {
            match k {
                0 => unary!(cx, depth, relu6),
                1 => unary!(cx, depth, leaky_relu, negative_slope),
                2 => unary!(cx, depth, elu, alpha),
                3 => unary!(cx, depth, selu),
                4 => unary!(cx, depth, celu, alpha),
                5 => unary!(cx, depth, softplus, beta, threshold),
                6 => unary!(cx, depth, softsign),
                7 => unary!(cx, depth, mish),
                8 => unary!(cx, depth, hardtanh, min_val, max_val),
                9 => unary!(cx, depth, hardsigmoid),
                10 => unary!(cx, depth, hardswish),
                11 => unary!(cx, depth, logsigmoid),
                12 => unary!(cx, depth, tanhshrink),
                13 => unary!(cx, depth, softshrink, lambd),
                14 => unary!(cx, depth, hardshrink, lambd),
                15 => unary!(cx, depth, threshold, threshold, value),
                16 => unary!(cx, depth, gelu_tanh),
                _ => binary!(cx, depth, prelu),
            }
        }
    }
    impl<D: TestDevice, T: Gen + FloatElement> Ops<D> for T {}
    <T as Ops<D>>::pick(cx, depth, k)
}

// Integer, bitwise, logical and float-predicate ops (issue 26).

/// The ops of issue 26's integer, bitwise, logical and float-predicate group that produce
/// each type: division and remainders, bitwise ops, shifts, gcd and lcm for integers; the
/// division ops, `copysign`, `nextafter` and `nan_to_num` for floats; logical ops and
/// predicates over a random input type for bool.
trait IntLogicGen: Sized {
    fn int_logic_op<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D>
    where
        Self: Gen;
}

macro_rules! int_logic_float {
    ($($t:ty),*) => {$(
        impl IntLogicGen for $t {
            fn int_logic_op<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D> {
                match cx.rng.gen_range(0..6) {
                    0 => binary!(cx, depth, remainder),
                    1 => binary!(cx, depth, fmod),
                    2 => binary!(cx, depth, floor_divide),
                    3 => binary!(cx, depth, copysign),
                    4 => binary!(cx, depth, nextafter),
                    _ => {
                        let a = node::<Self, D>(cx, depth - 1);
                        let pick = |cx: &mut Ctx<'p, D>| {
                            if cx.rng.gen_bool(0.5) {
                                Some(Self::draw(&mut cx.rng))
                            } else {
                                None
                            }
                        };
                        let (n, p, m) = (pick(cx), pick(cx), pick(cx));
                        Pair {
                            e: a.e.nan_to_num(n, p, m).boxed(),
                            t: a.t.nan_to_num(n, p, m).unwrap(),
                        }
                    }
                }
            }
        }
    )*};
}
int_logic_float!(f32, f64, f16, bf16);

macro_rules! int_logic_int {
    ($($t:ty),*) => {$(
        impl IntLogicGen for $t {
            fn int_logic_op<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D> {
                match cx.rng.gen_range(0..12) {
                    0 => binary!(cx, depth, remainder),
                    1 => binary!(cx, depth, fmod),
                    2 => binary!(cx, depth, floor_divide),
                    3 => binary!(cx, depth, bitwise_and),
                    4 => binary!(cx, depth, bitwise_or),
                    5 => binary!(cx, depth, bitwise_xor),
                    6 => unary!(cx, depth, bitwise_not),
                    7 => binary!(cx, depth, left_shift),
                    8 => binary!(cx, depth, right_shift),
                    9 => binary!(cx, depth, gcd),
                    10 => binary!(cx, depth, lcm),
                    _ => {
                        // A shift by a small amount, so that bits survive.
                        let a = node::<Self, D>(cx, depth - 1);
                        let s: $t = cx.rng.gen_range(0..8);
                        Pair { e: a.e.left_shift(s).boxed(), t: a.t.left_shift(s).unwrap() }
                    }
                }
            }
        }
    )*};
}
int_logic_int!(i32, i64, u8, i8, i16, u16, u32, u64);

/// A logical op or predicate over a tree of a random element type.
fn logic_of<'p, U: Gen + Numeric, D: TestDevice>(
    cx: &mut Ctx<'p, D>,
    depth: usize,
) -> Pair<'p, bool, D> {
    // The op is drawn before the subtree: drawn right after it, the generator's state
    // correlated with the subtree's last draws and some ops were never picked.
    let k = cx.rng.gen_range(0..10);
    let a = node::<U, D>(cx, depth - 1);
    macro_rules! pred {
        ($m:ident) => {
            Pair {
                e: a.e.$m().boxed(),
                t: a.t.$m().unwrap(),
            }
        };
    }
    macro_rules! logic {
        ($m:ident) => {{
            let b = child::<U, D>(cx, depth);
            Pair {
                e: a.e.$m(b.e).boxed(),
                t: a.t.$m(&b.t).unwrap(),
            }
        }};
    }
    match k {
        0 => logic!(logical_and),
        1 => logic!(logical_or),
        2 => logic!(logical_xor),
        3 => pred!(logical_not),
        4 => pred!(isnan),
        5 => pred!(isinf),
        6 => pred!(isposinf),
        7 => pred!(isneginf),
        8 => pred!(isfinite),
        _ => pred!(signbit),
    }
}

impl IntLogicGen for bool {
    fn int_logic_op<'p, D: TestDevice>(cx: &mut Ctx<'p, D>, depth: usize) -> Pair<'p, Self, D> {
        // Mostly logical ops and predicates (ten ops over seven types), some bitwise ones.
        match cx.rng.gen_range(0..18) {
            0 => binary!(cx, depth, bitwise_and),
            1 => binary!(cx, depth, bitwise_or),
            2 => binary!(cx, depth, bitwise_xor),
            3 => unary!(cx, depth, bitwise_not),
            4 | 5 => logic_of::<f32, D>(cx, depth),
            6 | 7 => logic_of::<f64, D>(cx, depth),
            8 | 9 => logic_of::<f16, D>(cx, depth),
            10 | 11 => logic_of::<bf16, D>(cx, depth),
            12 | 13 => logic_of::<i32, D>(cx, depth),
            14 | 15 => logic_of::<i64, D>(cx, depth),
            _ => logic_of::<u8, D>(cx, depth),
        }
    }
}

// Float math ops (issue 26).

/// The float math ops whose GPU results are not exactly rounded (libdevice, the ported
/// special functions; `trunc`, `frac`, `deg2rad`, `rad2deg`, `round_decimals`, the min/max ops
/// and `addcmul`/`addcdiv` are).
const TRANSCENDENTAL_FLOAT_MATH: &[&str] = &[
    "exp2",
    "expm1",
    "log2",
    "log10",
    "log1p",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "sinc",
    "erf",
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "i0",
    "logit",
    "logit_eps",
    "logaddexp",
    "logaddexp2",
    "float_power",
    "xlogy",
    "xlog1py",
    "atan2",
    "hypot",
];

/// Number of ops [`float_math_op`] picks from.
const FLOAT_MATH: usize = 41;

/// The float math ops of issue 26.
fn float_math_op<'p, T: Gen + FloatElement, D: TestDevice>(
    cx: &mut Ctx<'p, D>,
    depth: usize,
    k: usize,
) -> Pair<'p, T, D> {
    trait Ops<D: TestDevice>: Gen + FloatElement + Sized {
        fn pick<'p>(cx: &mut Ctx<'p, D>, depth: usize, k: usize) -> Pair<'p, Self, D> {
            match k {
                0 => unary!(cx, depth, exp2),
                1 => unary!(cx, depth, expm1),
                2 => unary!(cx, depth, log2),
                3 => unary!(cx, depth, log10),
                4 => unary!(cx, depth, log1p),
                5 => unary!(cx, depth, tan),
                6 => unary!(cx, depth, asin),
                7 => unary!(cx, depth, acos),
                8 => unary!(cx, depth, atan),
                9 => unary!(cx, depth, sinh),
                10 => unary!(cx, depth, cosh),
                11 => unary!(cx, depth, asinh),
                12 => unary!(cx, depth, acosh),
                13 => unary!(cx, depth, atanh),
                14 => unary!(cx, depth, deg2rad),
                15 => unary!(cx, depth, rad2deg),
                16 => unary!(cx, depth, sinc),
                17 => unary!(cx, depth, trunc),
                18 => unary!(cx, depth, frac),
                19 => unary!(cx, depth, round_decimals, d),
                20 => unary!(cx, depth, erf),
                21 => unary!(cx, depth, erfc),
                22 => unary!(cx, depth, erfinv),
                23 => unary!(cx, depth, lgamma),
                24 => unary!(cx, depth, digamma),
                25 => unary!(cx, depth, i0),
                26 => unary!(cx, depth, logit),
                27 => unary!(cx, depth, logit_eps, eps),
                28 => unary!(cx, depth, clamp_min, s),
                29 => unary!(cx, depth, clamp_max, s),
                30 => binary!(cx, depth, logaddexp),
                31 => binary!(cx, depth, logaddexp2),
                32 => binary!(cx, depth, float_power),
                33 => binary!(cx, depth, xlogy),
                34 => binary!(cx, depth, xlog1py),
                35 => binary!(cx, depth, atan2),
                36 => binary!(cx, depth, hypot),
                37 => binary!(cx, depth, fmax),
                38 => binary!(cx, depth, fmin),
                39 => {
                    let a = node::<Self, D>(cx, depth - 1);
                    let (b, c) = (child::<Self, D>(cx, depth), child::<Self, D>(cx, depth));
                    let v = Self::draw(&mut cx.rng);
                    Pair {
                        e: a.e.addcmul(b.e, c.e, v).boxed(),
                        t: a.t.addcmul(&b.t, &c.t, v).unwrap(),
                    }
                }
                _ => {
                    let a = node::<Self, D>(cx, depth - 1);
                    let (b, c) = (child::<Self, D>(cx, depth), child::<Self, D>(cx, depth));
                    let v = Self::draw(&mut cx.rng);
                    Pair {
                        e: a.e.addcdiv(b.e, c.e, v).boxed(),
                        t: a.t.addcdiv(&b.t, &c.t, v).unwrap(),
                    }
                }
            }
        }
    }
    impl<D: TestDevice, T: Gen + FloatElement> Ops<D> for T {}
    <T as Ops<D>>::pick(cx, depth, k)
}
