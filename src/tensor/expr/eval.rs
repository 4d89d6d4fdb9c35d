//! Evaluating expressions: into a new tensor or into outputs ([`Expr::eval`],
//! [`eval_into`]), in place ([`update`], [`Tensor::update`]), the checks that run before an
//! engine does, and the host's pass over the elements.

use std::any::Any;
use std::marker::PhantomData;

use crate::element::{DType, Element};
use crate::error::{LayoutError, Result};
use crate::layout::{broadcast_shapes, Dims, Layout};
use crate::tensor::backend::sealed::{Fused, FusedOutput, FusedOutputs};
use crate::tensor::backend::views::TensorViewMut;
use crate::tensor::backend::{Backend, HostBackend};
use crate::tensor::base::Tensor;
use crate::tensor::repr::{ReadRepr, WriteRepr};
use crate::tensor::view::AsViewMut;

use super::build::Expr;
use super::host::{self, RunCursor};
use super::inline::InlineList;
use super::node::{Brand, Current, CurrentReads, Cursor, LeafLayouts, Node, RowStages};
use super::program::{self, Program, ProgramOf};

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// Writes `f(current)` into this tensor in one fused pass (one kernel on the GPU), where
    /// `current` stands for each element's value before the update: `x = x * 2 + y` is
    /// `x.update(|x| x * 2.0f32 + &y)`, with no temporary. `current` is read through exactly
    /// this tensor's layout, so each element is read by the pass that writes it, before it
    /// writes it. The expression may read other tensors (broadcast to this one's shape) but
    /// not this one by reference: it is borrowed mutably for the call (the borrow checker
    /// refuses `x.update(|c| c + &x)`), which is what keeps the update free of races. For
    /// several tensors updated together (an optimizer step), see [`update`].
    ///
    /// # Errors
    /// As [`Expr::eval_into`].
    pub fn update<N, F>(&mut self, f: F) -> Result<()>
    where
        S: WriteRepr<T, D>,
        N: Node<D, Out = T>,
        F: FnOnce(Expr<T, D, Current<T, 0>>) -> Expr<T, D, N>,
    {
        update((self,), |(x,)| (f(x),))
    }
}

impl<T: Element, D: Backend, N: Node<D, Out = T>> Expr<T, D, N> {
    /// The shape the expression's tensors broadcast to.
    ///
    /// # Errors
    /// [`LayoutError::BroadcastMismatch`] naming two shapes that do not broadcast;
    /// [`LayoutError::NoTensorInExpression`] when it reads no tensor.
    pub fn shape(&self) -> Result<Vec<usize>> {
        let mut layouts = LeafLayouts::new();
        self.node.leaf_layouts(&mut layouts);
        let shapes: Vec<&[usize]> = layouts.iter().map(|l| l.shape()).collect();
        if shapes.is_empty() {
            return Err(LayoutError::NoTensorInExpression { op: "Expr::shape" }.into());
        }
        broadcast_all("Expr::shape", &shapes)
    }

    /// Evaluates into a new row-major tensor of the broadcast shape, on the device of the
    /// expression's tensors: one pass on the CPU, one kernel on the GPU.
    ///
    /// # Errors
    /// As [`Expr::shape`]; the engine's errors (out of memory, a kernel that fails to
    /// compile, with NVRTC's log).
    pub fn eval(self) -> Result<Tensor<T, D>> {
        let shape = self.shape()?;
        let device = self.first_device()?.clone();
        let layout = Layout::contiguous(&shape)?;
        // SAFETY: the fused pass writes every element of `layout` (the whole storage) before
        // anything reads it, or fails; on failure the storage is dropped unread (the
        // engines' `fused` contract, as for `Backend::unary` into uninitialised memory).
        let mut storage = unsafe { device.alloc_uninit::<T>(layout.numel())? };
        {
            let mut out = TensorViewMut::new(D::slice_mut(&mut storage), layout.clone(), &device)?;
            eval_into((self,), (&mut out,))?;
        }
        Ok(Tensor::from_contiguous(storage, layout, device))
    }

    /// Evaluates into `out` (any writable tensor or view), the expression broadcast to its
    /// shape, as eager `_into` ops do.
    ///
    /// # Errors
    /// [`LayoutError::ShapeMismatch`] when the expression's shape does not broadcast to
    /// exactly `out`'s; as [`Expr::eval`] otherwise.
    pub fn eval_into(self, out: &mut impl AsViewMut<T, D>) -> Result<()> {
        let mut out = out.view_mut();
        eval_into((self,), (&mut out,))
    }

    /// The ops of the table this expression runs, in evaluation order (children first), with
    /// `"cast"` for each conversion: what its fused kernel computes, for inspection and
    /// tests. Leaves, scalars and current values are not listed.
    pub fn op_names(&self) -> Vec<&'static str> {
        let mut p = ProgramOf::default();
        self.build_output(&mut p);
        p.instrs
            .iter()
            .filter_map(|i| match i {
                program::Instr::Op { name, .. } => Some(*name),
                program::Instr::Cast { .. } => Some("cast"),
                program::Instr::Row { kind, .. } => Some(kind.name()),
                _ => None,
            })
            .collect()
    }

    /// The expression as the run-time program an engine's code generator reads (one
    /// output), for the crate's kernel-source tests.
    #[cfg(test)]
    pub(crate) fn program(&self) -> Program<'_, D> {
        let mut p = ProgramOf::default();
        self.build_output(&mut p);
        p
    }

    /// Appends the expression to `program` as its next output (what
    /// [`eval_into`] does for each expression of its tuple, in order).
    pub(crate) fn build_output<'s>(&'s self, program: &mut Program<'s, D>) {
        let r = self.node.build(program);
        program.results.push(r);
    }

    fn first_device(&self) -> Result<&D> {
        let mut found = None;
        self.node.first_device(&mut found);
        found.ok_or_else(|| LayoutError::NoTensorInExpression { op: "Expr::eval" }.into())
    }
}

/// Whether `leaf` broadcasts to exactly `shape` (no longer, and every dim equal or 1).
fn broadcasts_to(leaf: &[usize], shape: &[usize]) -> bool {
    leaf.len() <= shape.len()
        && leaf
            .iter()
            .rev()
            .zip(shape.iter().rev())
            .all(|(&l, &s)| l == s || l == 1)
}

/// The shape every shape of `shapes` broadcasts to.
fn broadcast_all(op: &'static str, shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let mut shape = shapes.first().map_or_else(Vec::new, |s| s.to_vec());
    for s in shapes.iter().skip(1) {
        shape = broadcast_shapes(op, &shape, s)?;
    }
    Ok(shape)
}

/// Evaluates up to four expressions in one pass (one kernel on the GPU), each into its
/// output, e.g. an optimizer step that reads parameters, gradients and moments once and
/// writes the new parameters and moments once. All outputs have one shape, to which every
/// expression's tensors broadcast.
///
/// `exprs` is a tuple of expressions and `outs` a tuple of writable tensors or views of the
/// same element types, in the same order. Outputs are borrowed mutably, so no expression
/// can read one as a leaf; to read what is written, use [`update`] (in place).
///
/// # Errors
/// [`LayoutError::ShapeMismatch`] when the outputs' shapes differ or an expression's shape
/// does not broadcast to exactly theirs; [`LayoutError::TooManyOperands`] beyond
/// [`MAX_LEAVES`](super::MAX_LEAVES) distinct tensors; the engine's errors.
pub fn eval_into<D: Backend, O, E: Exprs<D, O>>(exprs: E, outs: O) -> Result<()> {
    exprs.run_bound(outs, None)
}

/// Updates up to four tensors in place in one pass (one kernel on the GPU): `f` receives
/// each output's current value ([`Current`], output `k` as the `k`-th element of the
/// tuple) and returns the new value of each, which may read other tensors too. An Adam step
/// reads and writes `p`, `m` and `v` in one kernel:
///
/// ```
/// use typestate_tensor::tensor::{expr, Tensor};
///
/// let g = Tensor::from_vec(&[4], vec![0.5f32, -1.0, 2.0, 0.25])?;
/// let mut p = Tensor::from_vec(&[4], vec![1.0f32; 4])?;
/// let (mut m, mut v) = (Tensor::zeros(&[4])?, Tensor::zeros(&[4])?);
/// let (lr, b1, b2, eps) = (1e-3f32, 0.9f32, 0.999f32, 1e-8f32);
/// expr::update((&mut p, &mut m, &mut v), |(p, m, v)| {
///     let m = m * b1 + g.lazy() * (1.0 - b1);
///     let v = v * b2 + g.lazy().square() * (1.0 - b2);
///     (p - m.clone() * lr / (v.clone().sqrt() + eps), m, v)
/// })?;
/// assert!(p.to_vec()[0] < 1.0);
/// # Ok::<(), typestate_tensor::Error>(())
/// ```
///
/// Each current value is read through exactly its output's layout, so every element is read
/// by the pass (the GPU thread, or block in the tiled form) that writes it, before it writes
/// it; no element is read after another one was written. The outputs are borrowed mutably for the call, so the
/// expressions cannot also read them by reference (any other layout of the same memory
/// would be a race): that is a borrow error at compile time, and a leaf that shares memory
/// with an output anyway is [`LayoutError::LeafOverlapsOutput`].
///
/// # Errors
/// As [`eval_into`]; [`LayoutError::UnboundCurrent`] when an expression reads a current
/// value this call did not hand out (one smuggled out of another update's closure), before
/// anything runs.
pub fn update<D: Backend, O: Targets<D>, E: Exprs<D, O>>(
    outs: O,
    f: impl FnOnce(O::Currents) -> E,
) -> Result<()> {
    let brand = Brand::fresh();
    f(O::currents(brand)).run_bound(outs, Some(brand))
}

/// A tuple of one to four `&mut` writable tensors or views ([`Tensor`] with a writable
/// representation: owned or [`TensorViewMut`]) on `D`, updated in place by
/// [`update`]. Implemented for tuples only; sealed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tuple of `&mut` tensors to update in place",
    label = "expected `(&mut a,)`, `(&mut a, &mut b)`, ... up to four writable tensors or `TensorViewMut`s on `{D}`",
    note = "pass the targets as a tuple of mutable borrows: `expr::update((&mut p, &mut m), |(p, m)| (.., ..))`; for one tensor, `x.update(|x| ..)`"
)]
pub trait Targets<D: Backend>: sealed::TargetsImpl<D> {}

impl<D: Backend, O: sealed::TargetsImpl<D>> Targets<D> for O {}

/// A tuple of one to four expressions on `D`, written to the tuple `O` of outputs (`&mut`
/// writable tensors or views of the same element types, in the same order): what
/// [`eval_into`] and [`update`] take. Implemented for tuples only; sealed.
#[diagnostic::on_unimplemented(
    message = "these expressions do not match the outputs `{O}`",
    label = "expected a tuple of one to four expressions, one per output, of the outputs' element types, on `{D}`",
    note = "return one expression per output, in output order (`(e1, e2)` for `(&mut a, &mut b)`), each of its output's element type (`.cast::<U>()` on an expression converts); outputs are `&mut` tensors or `TensorViewMut`s"
)]
pub trait Exprs<D: Backend, O>: sealed::RunBound<D, O> {}

impl<D: Backend, O, E: sealed::RunBound<D, O>> Exprs<D, O> for E {}

pub(crate) mod sealed {
    use super::*;

    /// What [`Targets`] does, private to the crate.
    pub trait TargetsImpl<D: Backend> {
        /// The current value of each output, as expressions ([`Current`]`<T, k>` for
        /// the `k`-th).
        type Currents;
        /// The current values, branded for one update.
        fn currents(brand: Brand) -> Self::Currents;
    }

    /// What [`Exprs`] does, private to the crate.
    pub trait RunBound<D: Backend, O> {
        /// Checks the shapes and runs the fused pass: with `in_place` the update of that
        /// brand (the expressions' current values bound to the outputs, read in place),
        /// without it a plain evaluation, where any current value is
        /// [`LayoutError::UnboundCurrent`].
        fn run_bound(self, outs: O, in_place: Option<Brand>) -> Result<()>;
    }

    /// Expressions and the outputs they are written to, shapes checked.
    pub struct Assignment<'o, E, O> {
        pub(super) exprs: E,
        pub(super) outs: O,
        pub(super) shape: Dims<usize>,
        pub(super) _o: PhantomData<&'o mut ()>,
    }
}

pub(crate) use sealed::Assignment;
use sealed::{RunBound, TargetsImpl};

/// Checks that every current value the expressions read was handed out by this update
/// (`in_place`: its brand) and is one of `outs`, with its element type (`None`: a plain
/// evaluation, which writes nothing in place).
fn check_currents(
    op: &'static str,
    reads: &CurrentReads,
    outs: &[DType],
    in_place: Option<Brand>,
) -> Result<()> {
    for &(output, dtype, brand) in reads.iter() {
        let reason = match in_place {
            None => Some("a plain evaluation (`eval`, `eval_into`) writes no output in place"),
            Some(b) if b != brand => Some(
                "it was handed out by another update's closure: a current value belongs to the call that made it",
            ),
            Some(_) => match outs.get(output) {
                None => Some("the update writes fewer outputs"),
                Some(&t) if t != dtype => Some("that output holds another element type"),
                Some(_) => None,
            },
        };
        if let Some(reason) = reason {
            return Err(LayoutError::UnboundCurrent {
                op,
                output,
                dtype: dtype.name(),
                reason,
            }
            .into());
        }
    }
    Ok(())
}

/// Implements [`Exprs`] (its sealed part) and [`Fused`] for tuples of one to four
/// expressions.
macro_rules! tuple_exprs {
    ($(($i:tt, $t:ident, $n:ident, $w:ident, $o:ident, $v:ident)),+) => {
        impl<D: Backend, $($t: Element, $n: Node<D, Out = $t>, $w: AsViewMut<$t, D>),+>
            RunBound<D, ($(&mut $w,)+)> for ($(Expr<$t, D, $n>,)+)
        {
            fn run_bound(self, outs: ($(&mut $w,)+), in_place: Option<Brand>) -> Result<()> {
                let op: &'static str =
                    if in_place.is_some() { "expr::update" } else { "expr::eval_into" };
                // Nothing here allocates unless it fails (or an expression is larger than
                // the inline lists): a cached evaluation stays allocation-free.
                let mut reads = CurrentReads::new();
                $( self.$i.node.current_reads(&mut reads); )+
                let dtypes = [$(<$t as Element>::DTYPE),+];
                check_currents(op, &reads, &dtypes, in_place)?;
                let outs = ($(outs.$i.view_mut(),)+);
                let shape = Dims::from_slice(outs.0.shape());
                for s in [$(outs.$i.shape()),+] {
                    if s != &shape[..] {
                        return Err(LayoutError::ShapeMismatch {
                            op,
                            expected: shape.to_vec(),
                            got: s.to_vec(),
                        }
                        .into());
                    }
                }
                // Issue 28: row stages run in the output's kernel where the engine can (one
                // stage, rows of the output's length, no in-place read); every other one is
                // evaluated into a tensor first.
                let mut stages = RowStages::new();
                $( self.$i.node.row_stages(&shape, &mut stages)?; )+
                if stages.count > 0 {
                    let fuse = D::ROW_STAGE_KERNEL && stages.count == 1 && stages.fit && reads.is_empty();
                    $( self.$i.node.prepare(fuse)?; )+
                }
                let mut leaf_layouts = LeafLayouts::new();
                $( self.$i.node.leaf_layouts(&mut leaf_layouts); )+
                if !leaf_layouts.iter().all(|l| broadcasts_to(l.shape(), &shape)) {
                    // Some leaf does not fit: the general check names the error.
                    let leaves: Vec<&[usize]> = leaf_layouts.iter().map(|l| l.shape()).collect();
                    let mut all = vec![&shape[..]];
                    all.extend_from_slice(&leaves);
                    let fitted = broadcast_all(op, &all)?;
                    return Err(LayoutError::ShapeMismatch {
                        op,
                        expected: shape.to_vec(),
                        got: if fitted == shape[..] { fitted } else { broadcast_all(op, &leaves)? },
                    }
                    .into());
                }
                drop(leaf_layouts);
                let device = outs.0.device_ref();
                let mut job = Assignment {
                    exprs: ($(self.$i.node,)+),
                    outs,
                    shape,
                    _o: PhantomData,
                };
                device.fused(&mut job)
            }
        }

        impl<'o, D: Backend, $($t: Element, $n: Node<D, Out = $t>),+> Fused<D>
            for Assignment<'o, ($($n,)+), ($(TensorViewMut<'o, $t, D>,)+)>
        {
            fn program(&mut self) -> (Program<'_, D>, FusedOutputs<'_, D>) {
                let Assignment { exprs, outs, .. } = self;
                let mut p = ProgramOf::default();
                $( let r = exprs.$i.build(&mut p); p.results.push(r); )+
                let mut list = FusedOutputs::new();
                $(
                    list.push(FusedOutput {
                        dtype: <$t as Element>::DTYPE,
                        layout: outs.$i.layout().clone(),
                        handle: D::out_handle(outs.$i.slice_mut()),
                    });
                )+
                (p, list)
            }

            fn run_host(&mut self) -> Result<()>
            where
                D: HostBackend,
            {
                let mut layouts: InlineList<Layout, { host::OPERANDS }> = InlineList::new();
                {
                    let mut leaves = LeafLayouts::new();
                    $( self.exprs.$i.leaf_layouts(&mut leaves); )+
                    for l in leaves.iter() {
                        layouts.push(l.broadcast_to(&self.shape)?);
                    }
                }
                let n_leaves = layouts.len();
                $( layouts.push(self.outs.$i.layout().clone()); )+
                let mut reads = CurrentReads::new();
                $( self.exprs.$i.current_reads(&mut reads); )+
                let in_place = !reads.is_empty();
                // Issue 29 (cpu): the blocked pass, split across rayon's pool (host.rs);
                // the element-by-element walk below only past MAX_HOST_LEAVES leaf reads.
                if let Some(c) = host::collapse_pass(&layouts, n_leaves) {
                    let ranges = ($(layouts.get(n_leaves + $i).and_then(|l| l.contiguous_range()),)+);
                    let outs = &mut self.outs;
                    $( let $o = D::host_mut(outs.$i.slice_mut()); )+
                    // SAFETY: `block` calls nothing on the nodes but `eval_run`.
                    let nodes = unsafe { host::SharedNodes::new(&self.exprs) };
                    // One block: the leaves' runs read into buffers node by node, each
                    // output's current values first for an update, then the results written.
                    let block = |outs: &mut ($(&mut [$t],)+),
                                 bases: [usize; host::MAX_HOST_OUTPUTS],
                                 offs: &[usize; host::OPERANDS],
                                 strides: &[isize; host::OPERANDS],
                                 n: usize| host::vectorized(#[inline(always)] || {
                        let runs: [(usize, isize); host::MAX_HOST_LEAVES] =
                            std::array::from_fn(|k| {
                                let j = host::MAX_HOST_OUTPUTS + k;
                                (offs[j], strides[j])
                            });
                        let runs = &runs[..n_leaves];
                        let starts: [usize; host::MAX_HOST_OUTPUTS] =
                            std::array::from_fn(|k| offs[k].wrapping_sub(bases[k]));
                        let nodes = nodes.get();
                        let (cur, current);
                        let mut at = if in_place {
                            // Every output element is read (as its current value) only here,
                            // in the block about to write it, before it is written.
                            cur = ($({
                                let mut c = [<$t as Element>::ZERO; host::BLOCK];
                                host::read_run(&*outs.$i, starts[$i], strides[$i], &mut c[..n]);
                                c
                            },)+);
                            current = [$(&cur.$i as &dyn Any),+];
                            RunCursor::new(runs, &current)
                        } else {
                            RunCursor::new(runs, &[])
                        };
                        // A contiguous output is written in place, others through a buffer.
                        $(
                            if strides[$i] == 1 {
                                let s = starts[$i];
                                nodes.$i.eval_run(&mut at, &mut outs.$i[s..s + n]);
                            } else {
                                let mut $v = [<$t as Element>::ZERO; host::BLOCK];
                                nodes.$i.eval_run(&mut at, &mut $v[..n]);
                                host::write_run(&mut *outs.$i, starts[$i], strides[$i], &$v[..n]);
                            }
                        )+
                    });
                    let numel = c.numel();
                    match (host::split_len(numel), ranges) {
                        (Some(ch), ($(Some($v),)+)) => {
                            let starts = [$($v.start),+];
                            $( let mut $o = $o[$v].chunks_mut(ch); )+
                            let tasks: Vec<_> = std::iter::from_fn(|| Some(($($o.next()?,)+)))
                                .collect();
                            host::sum_over_parts(tasks, &|k, mut outs| {
                                let s = k * ch;
                                let bases = std::array::from_fn(|j| starts.get(j).map_or(0, |&b| b + s));
                                let range = s..s + outs.0.len();
                                host::for_each_block_in(&c, range, |offs, strides, n| {
                                    block(&mut outs, bases, offs, strides, n)
                                });
                                0
                            });
                        }
                        _ => {
                            let mut outs = ($($o,)+);
                            host::for_each_block_in(&c, 0..numel, |offs, strides, n| {
                                block(&mut outs, [0; host::MAX_HOST_OUTPUTS], offs, strides, n)
                            });
                        }
                    }
                    return Ok(());
                }
                let exprs = &self.exprs;
                let outs = &mut self.outs;
                $( let $o = D::host_mut(outs.$i.slice_mut()); )+
                host::walk(&self.shape, &layouts, |offs| {
                    let (leaf_offs, out_offs) = offs.split_at(n_leaves);
                    // Every output element is read (as its current value) only here, at the
                    // element about to be written, before it is written.
                    let ($($v,)+) = if in_place {
                        let current = [$(&$o[out_offs[$i]] as &dyn Any),+];
                        let mut at = Cursor::new(leaf_offs, &current);
                        ($(exprs.$i.eval(&mut at),)+)
                    } else {
                        let mut at = Cursor::new(leaf_offs, &[]);
                        ($(exprs.$i.eval(&mut at),)+)
                    };
                    $( $o[out_offs[$i]] = $v; )+
                    Ok(())
                })
            }
        }
    };
}

tuple_exprs!((0, T0, N0, W0, o0, v0));
tuple_exprs!((0, T0, N0, W0, o0, v0), (1, T1, N1, W1, o1, v1));
tuple_exprs!(
    (0, T0, N0, W0, o0, v0),
    (1, T1, N1, W1, o1, v1),
    (2, T2, N2, W2, o2, v2)
);
tuple_exprs!(
    (0, T0, N0, W0, o0, v0),
    (1, T1, N1, W1, o1, v1),
    (2, T2, N2, W2, o2, v2),
    (3, T3, N3, W3, o3, v3)
);

/// Implements [`Targets`] (its sealed part) for tuples of one to four outputs.
macro_rules! tuple_targets {
    ($(($k:tt, $t:ident, $w:ident)),+) => {
        impl<'o, D: Backend, $($t: Element, $w: WriteRepr<$t, D>),+> TargetsImpl<D>
            for ($(&'o mut Tensor<$t, D, $w>,)+)
        {
            type Currents = ($(Expr<$t, D, Current<$t, $k>>,)+);
            fn currents(brand: Brand) -> Self::Currents {
                ($(Expr::new(Current::<$t, $k>::new(brand)),)+)
            }
        }
    };
}

tuple_targets!((0, T0, W0));
tuple_targets!((0, T0, W0), (1, T1, W1));
tuple_targets!((0, T0, W0), (1, T1, W1), (2, T2, W2));
tuple_targets!((0, T0, W0), (1, T1, W1), (2, T2, W2), (3, T3, W3));
