//! Fused expressions against eager evaluation, on every device: random shapes, leaves of
//! random layouts (transposed, flipped, broadcast), several element types, several outputs.
//!
//! A fused expression rounds every op's result to its element type, as an eager op's stored
//! result is, and uses the same CPU closures and the same CUDA expressions, so fused and
//! eager results must agree bit for bit on each device (eager itself is checked against
//! independent references in the pointwise suites). The GPU instances also poison outputs
//! first, so an element the kernel did not write is caught.

use crate::common::device::{host, test_device, TestDevice};
use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::element::Element;
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::tensor::expr::{self, where_cond};
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::Cpu;

const CASES: usize = 12;

fn random_shape(rng: &mut SmallRng) -> Vec<usize> {
    let rank = rng.gen_range(1..=4);
    (0..rank).map(|_| rng.gen_range(1..=9)).collect()
}

/// A host tensor of `shape` with values from `f`.
fn host_tensor<T: Element>(
    rng: &mut SmallRng,
    shape: &[usize],
    f: impl Fn(&mut SmallRng) -> T,
) -> Tensor<T, Cpu> {
    Tensor::from_fn(shape, |_| f(rng)).unwrap()
}

/// How a leaf is laid out on the device.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Contiguous,
    Transposed,
    Flipped,
    Broadcast,
}

/// A device tensor whose view `leaf_view` has logical shape `shape` (or a shape that
/// broadcasts to it) in layout `kind`.
struct Leaf<T: Element, D: TestDevice> {
    owner: Tensor<T, D>,
    kind: Kind,
}

impl<T: Element, D: TestDevice> Leaf<T, D> {
    fn new(dev: &D, rng: &mut SmallRng, shape: &[usize], f: impl Fn(&mut SmallRng) -> T) -> Self {
        let kind = match rng.gen_range(0..4) {
            0 => Kind::Contiguous,
            1 => Kind::Transposed,
            2 => Kind::Flipped,
            _ => Kind::Broadcast,
        };
        let stored: Vec<usize> = match kind {
            Kind::Transposed => shape.iter().rev().copied().collect(),
            Kind::Broadcast => {
                let mut s = shape.to_vec();
                let d = rng.gen_range(0..s.len());
                s[d] = 1;
                s
            }
            _ => shape.to_vec(),
        };
        let owner = dev.upload(&host_tensor(rng, &stored, f));
        Leaf { owner, kind }
    }

    fn view(&self) -> TensorView<'_, T, D> {
        match self.kind {
            Kind::Contiguous | Kind::Broadcast => self.owner.view(),
            Kind::Transposed => self.owner.t(),
            Kind::Flipped => self.owner.flip(0).unwrap(),
        }
    }
}

fn f32_in(rng: &mut SmallRng) -> f32 {
    rng.gen_range(-2.0f32..2.0)
}

fn bits<T: Element>(v: &[T]) -> Vec<String> {
    v.iter().map(|x| format!("{x:?}")).collect()
}

test_device!(gelu_of_mul_add_matches_eager, gelu_cpu, gelu_gpu);
fn gelu_of_mul_add_matches_eager<D: TestDevice>(dev: &D) {
    fn case<T: typestate_tensor::element::FloatElement, D: TestDevice>(
        dev: &D,
        rng: &mut SmallRng,
    ) {
        let shape = random_shape(rng);
        let conv = |r: &mut SmallRng| T::from_f64(f64::from(f32_in(r)));
        let (a, b, c) = (
            Leaf::new(dev, rng, &shape, conv),
            Leaf::new(dev, rng, &shape, conv),
            Leaf::new(dev, rng, &shape, conv),
        );
        let (a, b, c) = (a.view(), b.view(), c.view());
        let fused = (a.lazy() * &b + &c).gelu().eval().unwrap();
        let eager = a.mul(&b).unwrap().add(&c).unwrap().gelu().unwrap();
        assert_eq!(fused.shape(), eager.shape());
        assert_eq!(bits(&host(&fused)), bits(&host(&eager)), "shape {shape:?}");
    }
    let mut rng = SmallRng::seed_from_u64(1);
    for _ in 0..CASES {
        case::<f32, D>(dev, &mut rng);
        case::<f16, D>(dev, &mut rng);
        case::<bf16, D>(dev, &mut rng);
        case::<f64, D>(dev, &mut rng);
    }
}

test_device!(an_eight_op_chain_in_f16_matches_eager, chain_cpu, chain_gpu);
fn an_eight_op_chain_in_f16_matches_eager<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(2);
    let h = |r: &mut SmallRng| f16::from_f32(f32_in(r));
    for _ in 0..CASES {
        let shape = random_shape(&mut rng);
        let (a, b, c) = (
            Leaf::new(dev, &mut rng, &shape, h),
            Leaf::new(dev, &mut rng, &shape, h),
            Leaf::new(dev, &mut rng, &shape, h),
        );
        let (a, b, c) = (a.view(), b.view(), c.view());
        // sigmoid(tanh(exp(-abs(a*b+c))*0.5+a))*c-b
        let half = f16::from_f32(0.5);
        let fused = (((-(a.lazy() * &b + &c).abs()).exp() * half + &a)
            .tanh()
            .sigmoid()
            * &c
            - &b)
            .eval()
            .unwrap();
        let eager = a
            .mul(&b)
            .unwrap()
            .add(&c)
            .unwrap()
            .abs()
            .unwrap()
            .neg()
            .unwrap()
            .exp()
            .unwrap()
            .mul_scalar(half)
            .unwrap()
            .add(&a)
            .unwrap()
            .tanh()
            .unwrap()
            .sigmoid()
            .unwrap()
            .mul(&c)
            .unwrap()
            .sub(&b)
            .unwrap();
        assert_eq!(bits(&host(&fused)), bits(&host(&eager)), "shape {shape:?}");
    }
}

test_device!(integer_selects_and_casts_match_eager, int_cpu, int_gpu);
fn integer_selects_and_casts_match_eager<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(3);
    let i = |r: &mut SmallRng| r.gen_range(-1000i32..1000);
    for _ in 0..CASES {
        let shape = random_shape(&mut rng);
        let (a, b, c) = (
            Leaf::new(dev, &mut rng, &shape, i),
            Leaf::new(dev, &mut rng, &shape, i),
            Leaf::new(dev, &mut rng, &shape, i),
        );
        let (a, b, c) = (a.view(), b.view(), c.view());
        // where(a < b, a * 3 - c, |b + c|), then through u8 and f32 and back.
        let sel = where_cond(a.lazy().lt(&b), a.lazy() * 3 - &c, (b.lazy() + &c).abs());
        let fused = (sel.cast::<u8>().cast::<f32>() / 4.0f32)
            .floor()
            .cast::<i32>()
            .eval()
            .unwrap();
        let mask = a.lt(&b).unwrap();
        let left = a.mul_scalar(3).unwrap().sub(&c).unwrap();
        let right = b.add(&c).unwrap().abs().unwrap();
        let eager = Tensor::where_cond(&mask, &left, &right)
            .unwrap()
            .cast::<u8>()
            .unwrap()
            .cast::<f32>()
            .unwrap()
            .div(&dev.upload(&Tensor::scalar(4.0f32)))
            .unwrap()
            .floor()
            .unwrap()
            .cast::<i32>()
            .unwrap();
        assert_eq!(host(&fused), host(&eager), "shape {shape:?}");
    }
}

test_device!(
    adam_step_writes_three_outputs_in_one_pass,
    adam_cpu,
    adam_gpu
);
fn adam_step_writes_three_outputs_in_one_pass<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(4);
    let (lr, b1, b2, eps) = (1e-3f32, 0.9f32, 0.999f32, 1e-8f32);
    for _ in 0..CASES {
        let shape = random_shape(&mut rng);
        let p = Leaf::new(dev, &mut rng, &shape, f32_in);
        let g = Leaf::new(dev, &mut rng, &shape, f32_in);
        let m = Leaf::new(dev, &mut rng, &shape, f32_in);
        let v = Leaf::new(dev, &mut rng, &shape, |r| r.gen_range(0.0f32..1.0));
        let (p, g, m, v) = (p.view(), g.view(), m.view(), v.view());
        let m_new = m.lazy() * b1 + g.lazy() * (1.0 - b1);
        let v_new = v.lazy() * b2 + g.lazy().square() * (1.0 - b2);
        let p_new = p.lazy() - m_new.clone() * lr / (v_new.clone().sqrt() + eps);
        let poison = |s: &[usize]| {
            let mut t = Tensor::<f32, D>::zeros_on(s, dev).unwrap();
            t.fill_(f32::NAN).unwrap();
            t
        };
        let (mut po, mut mo, mut vo) = (poison(&shape), poison(&shape), poison(&shape));
        expr::eval_into((p_new, m_new, v_new), (&mut po, &mut mo, &mut vo)).unwrap();
        let m_e = m
            .mul_scalar(b1)
            .unwrap()
            .add(&g.mul_scalar(1.0 - b1).unwrap())
            .unwrap();
        let v_e = v
            .mul_scalar(b2)
            .unwrap()
            .add(&g.square().unwrap().mul_scalar(1.0 - b2).unwrap())
            .unwrap();
        let step = m_e
            .mul_scalar(lr)
            .unwrap()
            .div(&v_e.sqrt().unwrap().add_scalar(eps).unwrap())
            .unwrap();
        let p_e = p.sub(&step).unwrap();
        // Eager results have the broadcast shape of their own inputs; the outputs `shape`.
        let full = |t: &Tensor<f32, D>| bits(&host(&t.broadcast_to(&shape).unwrap()));
        assert_eq!(bits(&host(&mo)), full(&m_e));
        assert_eq!(bits(&host(&vo)), full(&v_e));
        assert_eq!(bits(&host(&po)), full(&p_e));
    }
}

test_device!(
    into_a_transposed_view_writes_only_the_view,
    into_cpu,
    into_gpu
);
fn into_a_transposed_view_writes_only_the_view<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(5);
    let a = dev.upload(&host_tensor(&mut rng, &[7, 5], f32_in));
    let row = dev.upload(&host_tensor(&mut rng, &[7], f32_in));
    // A (5, 7) output, written through its transpose (7, 5) minus the last column.
    let mut out = Tensor::<f32, D>::zeros_on(&[5, 7], dev).unwrap();
    out.fill_(-7.0).unwrap();
    {
        let mut view = out.view_mut().t().narrow(1, 0, 4).unwrap();
        let a4 = a.narrow(1, 0, 4).unwrap();
        let col = row.unsqueeze(1).unwrap();
        (a4.lazy() + &col).relu().eval_into(&mut view).unwrap();
    }
    let got = host(&out);
    let a_h = host(&a);
    let r_h = host(&row);
    for i in 0..5 {
        for j in 0..7 {
            let want = if i < 4 {
                (a_h[j * 5 + i] + r_h[j]).max(0.0)
            } else {
                -7.0
            };
            assert_eq!(got[i * 7 + j], want, "({i}, {j})");
        }
    }
}

test_device!(bad_shapes_are_typed_errors, errors_cpu, errors_gpu);
fn bad_shapes_are_typed_errors<D: TestDevice>(dev: &D) {
    let a = dev.upload(&Tensor::<f32>::zeros(&[2, 3]).unwrap());
    let b = dev.upload(&Tensor::<f32>::zeros(&[4]).unwrap());
    let err = (a.lazy() + &b).eval().unwrap_err();
    assert!(
        matches!(err, Error::Layout(LayoutError::BroadcastMismatch { .. })),
        "{err:?}"
    );
    let mut small = Tensor::<f32, D>::zeros_on(&[1, 3], dev).unwrap();
    let err = (a.lazy() * 2.0f32).eval_into(&mut small).unwrap_err();
    assert!(
        matches!(err, Error::Layout(LayoutError::ShapeMismatch { .. })),
        "{err:?}"
    );
    let err = expr::scalar::<f32, D>(1.0).exp().eval().unwrap_err();
    assert!(
        matches!(err, Error::Layout(LayoutError::NoTensorInExpression { .. })),
        "{err:?}"
    );
    // A scalar-only expression still evaluates into an output.
    let mut out = Tensor::<f32, D>::zeros_on(&[3, 3], dev).unwrap();
    expr::scalar::<f32, D>(0.0)
        .exp()
        .eval_into(&mut out)
        .unwrap();
    assert_eq!(host(&out), vec![1.0; 9]);
}

// ---- in-place updates -------------------------------------------------------------------

/// A device tensor of `shape` with random values, and a writable view of it in a random
/// layout of the same logical shape (contiguous, transposed, flipped, or a window with an
/// offset into a larger tensor).
struct Target<D: TestDevice> {
    owner: Tensor<f32, D>,
    kind: u8,
    shape: Vec<usize>,
}

impl<D: TestDevice> Target<D> {
    fn new(dev: &D, rng: &mut SmallRng, shape: &[usize]) -> Self {
        let kind = rng.gen_range(0..4u8);
        let stored: Vec<usize> = match kind {
            1 => shape.iter().rev().copied().collect(),
            3 => {
                let mut s = shape.to_vec();
                s[0] += 2;
                s
            }
            _ => shape.to_vec(),
        };
        let owner = dev.upload(&host_tensor(rng, &stored, f32_in));
        Target {
            owner,
            kind,
            shape: shape.to_vec(),
        }
    }

    fn view_mut(&mut self) -> typestate_tensor::tensor::TensorViewMut<'_, f32, D> {
        let v = self.owner.view_mut();
        match self.kind {
            1 => v.t(),
            2 => v.flip(0).unwrap(),
            3 => v.narrow(0, 1, self.shape[0]).unwrap(),
            _ => v,
        }
    }

    fn view(&self) -> TensorView<'_, f32, D> {
        let v = self.owner.view();
        match self.kind {
            1 => self.owner.t(),
            2 => v.flip(0).unwrap(),
            3 => v.narrow(0, 1, self.shape[0]).unwrap(),
            _ => v,
        }
    }
}

test_device!(update_in_place_matches_eager, update_cpu, update_gpu);
fn update_in_place_matches_eager<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(6);
    for _ in 0..CASES {
        let shape = random_shape(&mut rng);
        let mut x = Target::new(dev, &mut rng, &shape);
        let y = Leaf::new(dev, &mut rng, &shape, f32_in);
        let y = y.view();
        let before = host(&x.view());
        let untouched = D::storage_to_host(x.owner.storage());
        // x = relu(x * 2 + y) - x, written into x through its own (random) layout.
        let eager = x
            .view()
            .mul_scalar(2.0)
            .unwrap()
            .add(&y)
            .unwrap()
            .relu()
            .unwrap()
            .sub(&x.view())
            .unwrap();
        x.view_mut()
            .update(|c| (c.clone() * 2.0f32 + &y).relu() - c)
            .unwrap();
        assert_eq!(bits(&host(&x.view())), bits(&host(&eager)), "{shape:?}");
        assert_ne!(host(&x.view()), before);
        // Elements outside the view (the window's margins) are untouched.
        if x.kind == 3 {
            let all = D::storage_to_host(x.owner.storage());
            let row: usize = shape[1..].iter().product();
            assert_eq!(all[..row], untouched[..row]);
            assert_eq!(all[all.len() - row..], untouched[untouched.len() - row..]);
        }
    }
}

test_device!(
    adam_in_place_reads_and_writes_three_tensors_in_one_pass,
    adam_in_place_cpu,
    adam_in_place_gpu
);
fn adam_in_place_reads_and_writes_three_tensors_in_one_pass<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(7);
    let (lr, b1, b2, eps) = (1e-3f32, 0.9f32, 0.999f32, 1e-8f32);
    for _ in 0..CASES {
        let shape = random_shape(&mut rng);
        let mut p = Target::new(dev, &mut rng, &shape);
        let mut m = Target::new(dev, &mut rng, &shape);
        let mut v = Target::new(dev, &mut rng, &shape);
        // Second moments are non-negative.
        v.owner.abs_().unwrap();
        let g = Leaf::new(dev, &mut rng, &shape, f32_in);
        let g = g.view();
        let m_e = m
            .view()
            .mul_scalar(b1)
            .unwrap()
            .add(&g.mul_scalar(1.0 - b1).unwrap())
            .unwrap();
        let v_e = v
            .view()
            .mul_scalar(b2)
            .unwrap()
            .add(&g.square().unwrap().mul_scalar(1.0 - b2).unwrap())
            .unwrap();
        let step = m_e
            .mul_scalar(lr)
            .unwrap()
            .div(&v_e.sqrt().unwrap().add_scalar(eps).unwrap())
            .unwrap();
        let p_e = p.view().sub(&step).unwrap();
        let (mut pv, mut mv, mut vv) = (p.view_mut(), m.view_mut(), v.view_mut());
        expr::update((&mut pv, &mut mv, &mut vv), |(p, m, v)| {
            let m = m * b1 + g.lazy() * (1.0 - b1);
            let v = v * b2 + g.lazy().square() * (1.0 - b2);
            (p - m.clone() * lr / (v.clone().sqrt() + eps), m, v)
        })
        .unwrap();
        let full = |t: &Tensor<f32, D>| bits(&host(&t.broadcast_to(&shape).unwrap()));
        assert_eq!(bits(&host(&m.view())), full(&m_e));
        assert_eq!(bits(&host(&v.view())), full(&v_e));
        assert_eq!(bits(&host(&p.view())), full(&p_e));
    }
}

test_device!(
    in_place_misuse_is_a_typed_error,
    in_place_errors_cpu,
    in_place_errors_gpu
);
fn in_place_misuse_is_a_typed_error<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(8);
    let mut a = dev.upload(&host_tensor(&mut rng, &[3, 4], f32_in));
    let mut b = dev.upload(&host_tensor(&mut rng, &[3, 4], f32_in));
    let before = host(&a);
    // A current value smuggled out of an update and evaluated plainly.
    let mut smuggled = None;
    a.update(|c| {
        smuggled = Some(c.clone());
        c
    })
    .unwrap();
    let c = smuggled.unwrap();
    let err = (c.clone() + &b).eval().unwrap_err();
    assert!(
        matches!(
            err,
            Error::Layout(LayoutError::UnboundCurrent { output: 0, .. })
        ),
        "{err:?}"
    );
    let err = (c.clone() * 2.0f32).eval_into(&mut b).unwrap_err();
    assert!(
        matches!(err, Error::Layout(LayoutError::UnboundCurrent { .. })),
        "{err:?}"
    );
    // Output 1's current value in a one-output update.
    let mut second = None;
    expr::update((&mut a, &mut b), |(x, y)| {
        second = Some(y.clone());
        (x, y)
    })
    .unwrap();
    let y = second.unwrap();
    let err = a.update(|x| x + y).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Layout(LayoutError::UnboundCurrent { output: 1, .. })
        ),
        "{err:?}"
    );
    // A current value of an `f64` update, cast and read in an `f32` update.
    let mut w = dev.upload(
        &host_tensor(&mut rng, &[3, 4], f32_in)
            .cast::<f64>()
            .unwrap(),
    );
    let mut wide = None;
    w.update(|c| {
        wide = Some(c.clone());
        c
    })
    .unwrap();
    let wide = wide.unwrap();
    let err = a.update(|_| wide.cast::<f32>()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Layout(LayoutError::UnboundCurrent { output: 0, .. })
        ),
        "{err:?}"
    );
    // The case: a current value kept from one update of `x` and used in another
    // update of the same element type and output index (`y.update(|c| stashed + c)`) is not
    // re-bound to the new output (that computed `y + y` where `x + y` was written): it is
    // refused before anything runs, and `b` keeps its values.
    let b_before = host(&b);
    let err = b.update(|c| c + smuggled_again(&mut a)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Layout(LayoutError::UnboundCurrent { output: 0, reason, .. })
                if reason.contains("another update")
        ),
        "{err:?}"
    );
    assert_eq!(host(&b), b_before);
    fn smuggled_again<D: TestDevice>(
        a: &mut Tensor<f32, D>,
    ) -> typestate_tensor::tensor::expr::Expr<
        f32,
        D,
        typestate_tensor::tensor::expr::node::Current<f32, 0>,
    > {
        let mut kept = None;
        a.update(|c| {
            kept = Some(c.clone());
            c
        })
        .unwrap();
        kept.unwrap()
    }
    // Nothing was written by the failed calls, and identity updates keep the values.
    assert_eq!(host(&a), before);
    // A leaf that does not broadcast to the output is the usual shape error.
    let row = dev.upload(&host_tensor(&mut rng, &[5], f32_in));
    let err = a.update(|x| x + &row).unwrap_err();
    assert!(
        matches!(err, Error::Layout(LayoutError::BroadcastMismatch { .. })),
        "{err:?}"
    );
}

// ---- Blob steps -------------------------------------------------------------------------

/// `data - (diff + data * wd) * lr` by eager ops (each result rounded, as the fused pass).
fn sgd_eager<D: TestDevice>(
    data: &TensorView<'_, f32, D>,
    diff: &TensorView<'_, f32, D>,
    lr: f32,
    wd: f32,
) -> Vec<f32> {
    let step = diff
        .add(&data.mul_scalar(wd).unwrap())
        .unwrap()
        .mul_scalar(lr)
        .unwrap();
    host(&data.sub(&step).unwrap())
}

#[test]
fn blob_sgd_update_and_momentum_step_on_the_cpu() {
    use typestate_tensor::synced::{Blob, HeadAtCpu};
    let mut rng = SmallRng::seed_from_u64(9);
    let (lr, wd, mom) = (0.05f32, 0.01f32, 0.9f32);
    let shape = [3usize, 5, 2];
    let data: Vec<f32> = (0..30).map(|_| f32_in(&mut rng)).collect();
    let blob = Blob::from_vec(&shape, data).unwrap();
    let mut blob: Blob<f32, HeadAtCpu> = blob.into_cpu_diff_mut().unwrap();
    for x in blob.cpu_diff_mut() {
        *x = f32_in(&mut rng);
    }
    let want = sgd_eager(
        &blob.cpu_data_view().unwrap(),
        &blob.cpu_diff_view().unwrap(),
        lr,
        wd,
    );
    let diff_before = blob.cpu_diff().to_vec();
    let blob = blob.sgd_update(lr, wd).unwrap();
    assert_eq!(bits(blob.cpu_data()), bits(&want));
    assert_eq!(blob.cpu_diff(), diff_before, "the diff is only read");

    // Momentum: h = mom * h + lr * (diff + wd * data); data -= h, both in place, one pass.
    let mut blob = blob;
    let mut hist = host_tensor(&mut rng, &shape, f32_in);
    let (data0, diff0) = (
        blob.cpu_data_view().unwrap().to_owned(),
        blob.cpu_diff_view().unwrap().to_owned(),
    );
    let h_e = hist
        .mul_scalar(mom)
        .unwrap()
        .add(
            &diff0
                .add(&data0.mul_scalar(wd).unwrap())
                .unwrap()
                .mul_scalar(lr)
                .unwrap(),
        )
        .unwrap();
    let w_e = data0.sub(&h_e).unwrap();
    {
        let (mut w, g) = blob.cpu_data_mut_with_diff().unwrap();
        expr::update((&mut w, &mut hist), |(w, h)| {
            let h = h * mom + (&g + w.clone() * wd) * lr;
            (w - h.clone(), h)
        })
        .unwrap();
    }
    assert_eq!(bits(&hist.to_vec()), bits(&h_e.to_vec()));
    assert_eq!(bits(blob.cpu_data()), bits(&w_e.to_vec()));

    // Caffe's regularization alone, writing the diff from the data: diff += wd * data.
    let want = blob
        .cpu_diff_view()
        .unwrap()
        .add(&blob.cpu_data_view().unwrap().mul_scalar(wd).unwrap())
        .unwrap();
    {
        let (mut g, w) = blob.cpu_diff_mut_with_data().unwrap();
        g.update(|g| g + w.lazy() * wd).unwrap();
    }
    assert_eq!(bits(blob.cpu_diff()), bits(&want.to_vec()));

    // Caffe's SGD step as Caffe leaves it, in one pass over three outputs: the history, the
    // diff (which Caffe overwrites with the history) and the data.
    let (data0, diff0) = (
        blob.cpu_data_view().unwrap().to_owned(),
        blob.cpu_diff_view().unwrap().to_owned(),
    );
    let h_e = hist
        .mul_scalar(mom)
        .unwrap()
        .add(
            &diff0
                .add(&data0.mul_scalar(wd).unwrap())
                .unwrap()
                .mul_scalar(lr)
                .unwrap(),
        )
        .unwrap();
    let w_e = data0.sub(&h_e).unwrap();
    {
        let (mut w, mut g) = blob.cpu_data_diff_mut().unwrap();
        expr::update((&mut w, &mut g, &mut hist), |(w, g, h)| {
            let h = h * mom + (g + w.clone() * wd) * lr;
            (w - h.clone(), h.clone(), h)
        })
        .unwrap();
    }
    assert_eq!(bits(&hist.to_vec()), bits(&h_e.to_vec()));
    assert_eq!(bits(blob.cpu_diff()), bits(&h_e.to_vec()));
    assert_eq!(bits(blob.cpu_data()), bits(&w_e.to_vec()));
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn blob_sgd_update_on_the_gpu_is_one_in_place_kernel() {
    use typestate_tensor::synced::{Blob, HeadAtGpu, Synced};
    let Some(gpu) = crate::common::device::gpu_or_skip("blob_sgd_update_on_the_gpu") else {
        return;
    };
    let mut rng = SmallRng::seed_from_u64(10);
    let (lr, wd) = (0.05f32, 0.01f32);
    let shape = [4usize, 33];
    let blob = Blob::<f32, _>::with_gpu(&gpu, &shape).unwrap();
    let mut blob = blob
        .into_cpu_data_mut()
        .unwrap()
        .into_cpu_diff_mut()
        .unwrap();
    for x in blob.cpu_data_mut() {
        *x = f32_in(&mut rng);
    }
    for x in blob.cpu_diff_mut() {
        *x = f32_in(&mut rng);
    }
    let blob: Blob<f32, Synced> = blob.into_gpu_data().unwrap().into_gpu_diff().unwrap();
    let want = sgd_eager(
        &blob.gpu_data_view().unwrap(),
        &blob.gpu_diff_view().unwrap(),
        lr,
        wd,
    );
    // Synced data is updated on the GPU, which becomes its head.
    let blob: Blob<f32, HeadAtGpu, Synced> = blob.sgd_update(lr, wd).unwrap();
    assert_eq!(bits(&host(&blob.gpu_data_view().unwrap())), bits(&want));
    // The same step through the split views, in place.
    let want = sgd_eager(
        &blob.gpu_data_view().unwrap(),
        &blob.gpu_diff_view().unwrap(),
        lr,
        wd,
    );
    let mut blob = blob;
    {
        let (mut w, g) = blob.gpu_data_mut_with_diff().unwrap();
        w.update(|w| w.clone() - (&g + w * wd) * lr).unwrap();
    }
    assert_eq!(bits(&host(&blob.gpu_data_view().unwrap())), bits(&want));
    // Data and diff both written in one kernel (both sides the GPU head): the diff takes the
    // regularized gradient, the data steps by it.
    let mut blob = blob.into_gpu_diff_mut().unwrap();
    let (data0, diff0) = (
        blob.gpu_data_view().unwrap().contiguous().unwrap(),
        blob.gpu_diff_view().unwrap().contiguous().unwrap(),
    );
    let g_e = diff0.add(&data0.mul_scalar(wd).unwrap()).unwrap();
    let w_e = data0.sub(&g_e.mul_scalar(lr).unwrap()).unwrap();
    {
        let (mut w, mut g) = blob.gpu_data_diff_mut().unwrap();
        expr::update((&mut w, &mut g), |(w, g)| {
            let g = g + w.clone() * wd;
            (w - g.clone() * lr, g)
        })
        .unwrap();
    }
    assert_eq!(
        bits(&host(&blob.gpu_diff_view().unwrap())),
        bits(&host(&g_e))
    );
    assert_eq!(
        bits(&host(&blob.gpu_data_view().unwrap())),
        bits(&host(&w_e))
    );
    // The diff written from the data (regularization alone).
    let want = host(
        &blob
            .gpu_diff_view()
            .unwrap()
            .add(&blob.gpu_data_view().unwrap().mul_scalar(wd).unwrap())
            .unwrap(),
    );
    {
        let (mut g, w) = blob.gpu_diff_mut_with_data().unwrap();
        g.update(|g| g + w.lazy() * wd).unwrap();
    }
    assert_eq!(bits(&host(&blob.gpu_diff_view().unwrap())), bits(&want));
}
