//! The harness of the CPU matmul tests: random jobs on strided views, run through the engine,
//! with everything a host reference needs. The checks per element type are in
//! `tests_types.rs`.

use rand::rngs::SmallRng;
use rand::Rng;

use crate::device::Cpu;
use crate::element::Numeric;
use crate::error::Result;
use crate::tensor::matmul::{Activation, MatmulEngine, MatmulJob};
use crate::tensor::{Tensor, TensorView, TensorViewMut};

/// How a matrix operand (or the destination) is laid out in its storage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Form {
    /// Row-major.
    Plain,
    /// Stored `[.., cols, rows]` and transposed (column-major).
    Trans,
    /// Rows reversed (negative row stride).
    FlipRows,
    /// Columns reversed.
    FlipCols,
    /// The first batch dim reversed (rows when there is none).
    FlipBatch,
    /// Every second row of a taller store (step ±2), columns `1..=cols` of a wider one.
    Step,
    /// Stored with every batch dim 1, broadcast (zero batch strides); an input only.
    Broadcast,
}

const INPUT_FORMS: [Form; 7] = [
    Form::Plain,
    Form::Trans,
    Form::FlipRows,
    Form::FlipCols,
    Form::FlipBatch,
    Form::Step,
    Form::Broadcast,
];

/// The storage shape a form needs for the logical `shape` (`[B.., rows, cols]`).
fn store_shape(form: Form, shape: &[usize]) -> Vec<usize> {
    let r = shape.len();
    let mut s = shape.to_vec();
    match form {
        Form::Trans => s.swap(r - 2, r - 1),
        Form::Step => {
            s[r - 2] = 2 * shape[r - 2] + 1;
            s[r - 1] = shape[r - 1] + 2;
        }
        Form::Broadcast => s[..r - 2].iter_mut().for_each(|d| *d = 1),
        _ => {}
    }
    s
}

/// Applies a form's view methods (a macro: read-only and writable views have the same method
/// names but no common trait).
macro_rules! shape_view {
    ($v:expr, $form:expr, $shape:expr, $down:expr) => {{
        let shape: &[usize] = $shape;
        let r = shape.len();
        let v = $v;
        match $form {
            Form::Plain => Ok(v),
            Form::Trans => v.transpose(-2isize, -1isize),
            Form::FlipRows => v.flip(-2isize),
            Form::FlipCols => v.flip(-1isize),
            Form::FlipBatch if r > 2 => v.flip(0isize),
            Form::FlipBatch => v.flip(-2isize),
            Form::Step => {
                let rows = shape[r - 2];
                let (end, step) = if $down { (2 * rows, -2) } else { (2 * rows, 2) };
                v.slice(-2isize, 0, end, step)
                    .and_then(|v| v.narrow(-1isize, 1, shape[r - 1]))
            }
            Form::Broadcast => v.broadcast_to(shape),
        }
    }};
}

/// A tensor stored for a form, with the seed of its data.
pub(super) struct Operand<T: Numeric> {
    store: Tensor<T>,
    form: Form,
    shape: Vec<usize>,
    down: bool,
}

impl<T: Numeric> Operand<T> {
    pub(super) fn new(
        rng: &mut SmallRng,
        shape: &[usize],
        form: Form,
        mut draw: impl FnMut(&mut SmallRng) -> T,
    ) -> Self {
        let s = store_shape(form, shape);
        let numel: usize = s.iter().product();
        let data = (0..numel).map(|_| draw(rng)).collect();
        Operand {
            store: Tensor::from_vec(&s, data).expect("store shape"),
            form,
            shape: shape.to_vec(),
            down: rng.gen(),
        }
    }

    pub(super) fn view(&self) -> TensorView<'_, T> {
        let v: Result<TensorView<'_, T>> =
            shape_view!(self.store.view(), self.form, &self.shape, self.down);
        let v = v.expect("form applies");
        assert_eq!(v.shape(), self.shape.as_slice(), "{:?}", self.form);
        v
    }

    pub(super) fn view_mut(&mut self) -> TensorViewMut<'_, T> {
        let v: Result<TensorViewMut<'_, T>> =
            shape_view!(self.store.view_mut(), self.form, &self.shape, self.down);
        v.expect("form applies")
    }

    /// The whole storage, layout or not.
    pub(super) fn storage(&self) -> Vec<T> {
        self.store.to_vec()
    }
}

/// The storage indices of a layout's elements, row-major.
pub(super) fn positions(shape: &[usize], strides: &[isize], offset: usize) -> Vec<usize> {
    let numel: usize = shape.iter().product();
    (0..numel)
        .map(|mut flat| {
            let mut off = offset as isize;
            for d in (0..shape.len()).rev() {
                off += (flat % shape[d]) as isize * strides[d];
                flat /= shape[d];
            }
            off as usize
        })
        .collect()
}

/// One random job.
#[derive(Clone, Debug)]
pub(super) struct Case<T> {
    pub(super) batch: Vec<usize>,
    pub(super) m: usize,
    pub(super) k: usize,
    pub(super) n: usize,
    pub(super) forms: [Form; 3],
    pub(super) alpha: T,
    pub(super) beta: T,
    /// The bias' form: `None`, or `Some(0)` contiguous, `1` stride 2, `2` stride 0,
    /// `3` flipped.
    pub(super) bias: Option<u8>,
    pub(super) act: Option<Activation>,
}

const SIZES: [usize; 16] = [0, 1, 1, 2, 3, 5, 8, 9, 16, 17, 24, 31, 33, 64, 65, 97];

impl<T: Numeric> Case<T> {
    /// Random sizes, forms, epilogue; `scalar` draws `alpha` and `beta` (zero `beta` half the
    /// time); `acts` the activations to pick from.
    pub(super) fn draw(
        rng: &mut SmallRng,
        mut scalar: impl FnMut(&mut SmallRng) -> T,
        acts: &[Option<Activation>],
    ) -> Self {
        let nb = rng.gen_range(0..=2);
        let batch = (0..nb)
            .map(|_| {
                if rng.gen_ratio(1, 20) {
                    0
                } else {
                    rng.gen_range(1..=3)
                }
            })
            .collect();
        let pick = |rng: &mut SmallRng| SIZES[rng.gen_range(0..SIZES.len())];
        let (m, k, n) = (pick(rng), pick(rng), pick(rng));
        let dst_forms = &INPUT_FORMS[..6];
        let forms = [
            INPUT_FORMS[rng.gen_range(0..7)],
            INPUT_FORMS[rng.gen_range(0..7)],
            dst_forms[rng.gen_range(0..6)],
        ];
        let alpha = if rng.gen() { T::ONE } else { scalar(rng) };
        let beta = match rng.gen_range(0..4) {
            0 | 1 => T::ZERO,
            2 => T::ONE,
            _ => scalar(rng),
        };
        let bias = if rng.gen() {
            Some(rng.gen_range(0..4))
        } else {
            None
        };
        let act = acts[rng.gen_range(0..acts.len())];
        Case {
            batch,
            m,
            k,
            n,
            forms,
            alpha,
            beta,
            bias,
            act,
        }
    }
}

/// What a run gives the reference: the logical values of everything (row-major), the result.
pub(super) struct Outcome<T> {
    pub(super) a: Vec<T>,
    pub(super) b: Vec<T>,
    pub(super) old: Vec<T>,
    pub(super) bias: Option<Vec<T>>,
    pub(super) got: Vec<T>,
}

/// Runs `case` through the engine: data from `draw`; with `beta == 0` the destination's whole
/// storage holds `garbage` (NaN for floats: reading it would show). Asserts that storage
/// outside the destination's layout is unchanged.
pub(super) fn run_case<T: Numeric>(
    rng: &mut SmallRng,
    case: &Case<T>,
    mut draw: impl FnMut(&mut SmallRng) -> T,
    garbage: T,
) -> Outcome<T> {
    let (m, k, n) = (case.m, case.k, case.n);
    let with =
        |x: usize, y: usize| -> Vec<usize> { case.batch.iter().copied().chain([x, y]).collect() };
    let mut forms = case.forms;
    if case.batch.is_empty() {
        forms
            .iter_mut()
            .filter(|f| **f == Form::Broadcast)
            .for_each(|f| *f = Form::Plain);
    }
    let a = Operand::new(rng, &with(m, k), forms[0], &mut draw);
    let b = Operand::new(rng, &with(k, n), forms[1], &mut draw);
    let zero_beta = case.beta == T::ZERO;
    let mut c = Operand::new(rng, &with(m, n), forms[2], |r| {
        if zero_beta {
            garbage
        } else {
            draw(r)
        }
    });
    let bias_store = Operand::new(rng, &[2 * n + 1], Form::Plain, &mut draw);
    let bias_view = case.bias.map(|f| {
        let v = bias_store.view();
        match f {
            0 => v.narrow(0isize, 0, n),
            1 => v.slice(0isize, 1, 2 * n + 1, 2),
            2 => v.narrow(0isize, 0, 1).and_then(|v| v.broadcast_to(&[n])),
            _ => v.narrow(0isize, 0, n).and_then(|v| v.flip(0isize)),
        }
        .expect("bias view")
    });
    let before = c.storage();
    let (old, inside) = {
        let v = c.view_mut();
        let inside = positions(v.shape(), v.strides(), v.layout().offset());
        (
            inside.iter().map(|&i| before[i]).collect::<Vec<T>>(),
            inside,
        )
    };
    let job = MatmulJob {
        a: a.view(),
        b: b.view(),
        alpha: case.alpha,
        beta: case.beta,
        bias: bias_view.clone(),
        activation: case.act,
        allow_tf32: false,
    };
    {
        let mut dst = c.view_mut();
        Cpu.matmul(&job, &mut dst).expect("a valid job");
    }
    let after = c.storage();
    // NaN is the one value unequal to itself: two NaNs count as unchanged.
    #[allow(clippy::eq_op)]
    let same = |x: T, y: T| x == y || (x != x && y != y);
    let mut mask = vec![false; after.len()];
    inside.iter().for_each(|&i| mask[i] = true);
    for (i, (&x, &y)) in before.iter().zip(&after).enumerate() {
        assert!(
            mask[i] || same(x, y),
            "storage {i} outside the layout changed: {case:?}"
        );
    }
    Outcome {
        a: a.view().to_vec(),
        b: b.view().to_vec(),
        old,
        bias: bias_view.map(|v| v.to_vec()),
        got: inside.iter().map(|&i| after[i]).collect(),
    }
}

/// A job that breaks the rules is a `ShapeMismatch`, never a wrong index.
#[test]
fn broken_jobs_are_errors() {
    let a = Tensor::<f32>::from_vec(&[2, 3], vec![1.0; 6]).expect("shape");
    let b = Tensor::<f32>::from_vec(&[4, 2], vec![1.0; 8]).expect("shape");
    let mut c = Tensor::<f32>::zeros(&[2, 2]).expect("shape");
    let job = MatmulJob {
        a: a.view(),
        b: b.view(),
        alpha: 1.0,
        beta: 0.0,
        bias: None,
        activation: None,
        allow_tf32: false,
    };
    let e = Cpu.matmul(&job, &mut c.view_mut()).expect_err("k differs");
    assert!(format!("{e}").contains("[3, 2]"), "{e}");
    let b = Tensor::<f32>::from_vec(&[3, 2], vec![1.0; 6]).expect("shape");
    let bias = Tensor::<f32>::from_vec(&[3], vec![1.0; 3]).expect("shape");
    let job = MatmulJob {
        b: b.view(),
        bias: Some(bias.view()),
        ..job
    };
    assert!(
        Cpu.matmul(&job, &mut c.view_mut()).is_err(),
        "bias of 3 for n = 2"
    );
    assert_eq!(c.to_vec(), vec![0.0; 4], "nothing written");
}
