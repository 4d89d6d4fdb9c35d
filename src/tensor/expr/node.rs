//! The typed tree of a fused expression: one node type per kind of step, each knowing how
//! to evaluate itself on the host and how to describe itself to a code generator.
//!
//! A node's output element type is an associated type, so every mismatch (an `f32` added to
//! an `f64`, a float op on integers, a non-`bool` mask) is a compile error where the node is
//! built, exactly as for the eager methods.

use std::any::Any;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::element::{DType, Element};
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::{BinaryOp, Cast, TernaryOp, UnaryOp};
use crate::tensor::backend::sealed::FusedBackend;
use crate::tensor::backend::views::TensorView;
use crate::tensor::backend::{Backend, HostBackend};

use super::host::{read_run, RunCursor, BLOCK};
use super::inline::InlineList;
use super::program::{Program, ProgramOf};

/// The layouts of an expression's leaves, in build order (a leaf reached twice is listed
/// twice): inline for up to 16.
pub(crate) type LeafLayouts<'s> = InlineList<&'s Layout, 16>;

/// The current values an expression reads ([`Current`]): output, element type and the
/// update that handed the value out.
pub(crate) type CurrentReads = InlineList<(usize, DType, Brand), 8>;

/// A node of a fused expression on device `D`: the node types of this module, combined by
/// the operators and op methods of [`Expr`](super::Expr). Name it in bounds and return types
/// (`Expr<T, D, impl Node<D, Out = T>>`, a helper generic over `N: Node<D, Out = T>`); it
/// is sealed, so a node always describes itself to the code generators through this crate's
/// own op table and nothing else.
pub trait Node<D: Backend>: sealed::NodeImpl<D> {}

impl<D: Backend, N: sealed::NodeImpl<D>> Node<D> for N {}

pub(crate) mod sealed {
    use super::*;

    /// Where the host evaluation is: the storage offset of every leaf at the current element,
    /// the next leaf to read (leaves are read in the order [`Node::build`] numbers them), and,
    /// for an in-place update ([`super::update`]), each output's value at the current element
    /// before it is written.
    pub struct Cursor<'c> {
        pub(crate) offsets: &'c [usize],
        pub(crate) next: usize,
        pub(crate) current: &'c [&'c dyn Any],
    }

    impl<'c> Cursor<'c> {
        /// A cursor over leaf offsets `offsets`, at the first leaf, with the outputs' current
        /// values `current` (empty when no expression reads one).
        pub(crate) fn new(offsets: &'c [usize], current: &'c [&'c dyn Any]) -> Self {
            Cursor {
                offsets,
                next: 0,
                current,
            }
        }

        pub(crate) fn take(&mut self) -> usize {
            let off = self.offsets[self.next];
            self.next += 1;
            off
        }
    }

    /// The number that ties a [`Current`](super::Current) to the one update that handed it out. Only this crate
    /// makes one (`Brand::fresh`), so a caller cannot forge a current value of another
    /// update.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Brand(u64);

    impl Brand {
        /// A brand no other call of this process has had.
        pub(crate) fn fresh() -> Brand {
            use std::sync::atomic::{AtomicU64, Ordering};
            static NEXT: AtomicU64 = AtomicU64::new(1);
            // 2^64 updates would take centuries at any rate a process can run them.
            Brand(NEXT.fetch_add(1, Ordering::Relaxed))
        }
    }

    /// What a [`Node`] does, private to the crate: its methods name the program a code
    /// generator reads and the host evaluator's cursor, which only this crate builds.
    pub trait NodeImpl<D: Backend>: Clone {
        /// The element type the node produces.
        type Out: Element;

        /// Appends the node's leaves, scalars and instructions to `p` (children first, in
        /// argument order) and returns its value.
        fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize;

        /// The node's value at the element `at` points to, on the host (children evaluated
        /// in the order of [`NodeImpl::build`], each leaf reading its own offset).
        fn eval(&self, at: &mut Cursor<'_>) -> Self::Out
        where
            D: HostBackend;

        /// Issue 29: the node's values at `out.len()` (at most [`BLOCK`]) consecutive
        /// elements of a run on the host, into `out` (children evaluated into buffers in the
        /// order of [`NodeImpl::build`], each leaf reading its own (start, stride)).
        ///
        /// Called on one node from several threads at once (the host pass splits large
        /// outputs across rayon's pool): it reads only immutable state reachable from
        /// `&self` (storage slices, scalars, an `Rc`'s target), and never clones, drops or
        /// mutates any of it. `host.rs`'s `SharedNodes` relies on this.
        fn eval_run(&self, at: &mut RunCursor<'_>, out: &mut [Self::Out])
        where
            D: HostBackend;

        /// Issue 29: the node's `n` values at the block borrowed from its storage, when it
        /// is a leaf read with stride 1 (its cursor entry taken); `None`, taking nothing,
        /// otherwise. Spares a copy of each contiguous leaf. Same contract as `eval_run`.
        fn run_slice<'v>(&'v self, _at: &mut RunCursor<'_>, _n: usize) -> Option<&'v [Self::Out]>
        where
            D: HostBackend,
        {
            None
        }

        /// Adds the layouts of the node's leaves to `layouts`, in [`NodeImpl::build`] order.
        fn leaf_layouts<'s>(&'s self, layouts: &mut LeafLayouts<'s>);

        /// Sets `device` to the device of the node's first leaf, if it has one and `device`
        /// is `None`.
        fn first_device<'s>(&'s self, device: &mut Option<&'s D>);

        /// Adds the outputs whose current value the node reads ([`Current`]), with the
        /// element type it reads each as and the update it belongs to.
        fn current_reads(&self, reads: &mut CurrentReads);

        /// Issue 28: counts in `found` the row stages of the tree (`super::row`) not yet
        /// evaluated and not inside another stage's argument, checking each one's dim, and
        /// whether each could run in the kernel of an output of shape `out`. Nodes with
        /// children ask each child; leaves have none.
        ///
        /// # Errors
        /// A stage's dim out of range for its argument, or an argument that does not
        /// broadcast.
        fn row_stages(&self, _out: &[usize], _found: &mut RowStages) -> Result<()> {
            Ok(())
        }

        /// Issue 28: evaluates the tree's row stages into tensors they then read as leaves:
        /// every one, or with `fuse` every one but those `row_stages` counts (which build an
        /// [`Instr::Row`](super::super::program::Instr::Row) for the engine instead). Called
        /// by the evaluator before any other method but `row_stages` and
        /// `current_reads`; nodes with children ask each child.
        ///
        /// # Errors
        /// The evaluation's errors.
        fn prepare(&self, _fuse: bool) -> Result<()> {
            Ok(())
        }
    }

    /// What [`NodeImpl::row_stages`] found.
    #[derive(Clone, Copy, Debug)]
    pub struct RowStages {
        /// Stages not yet evaluated, not inside another stage's argument.
        pub(crate) count: usize,
        /// Whether every one reduces a dim of the output's own length (not one broadcast
        /// along the reduced dim), so the output's kernel can hold its rows.
        pub(crate) fit: bool,
    }

    impl RowStages {
        /// None found yet.
        pub(crate) fn new() -> Self {
            RowStages {
                count: 0,
                fit: true,
            }
        }
    }
}

use sealed::NodeImpl;
pub(crate) use sealed::{Brand, Cursor, RowStages};

/// Issue 29: `node`'s `n` values at the block: borrowed from storage for a contiguous leaf,
/// else evaluated into `buf` (made only then).
#[inline(always)]
fn operand<'v, D: Backend + HostBackend, N: Node<D>>(
    node: &'v N,
    at: &mut RunCursor<'_>,
    buf: &'v mut Option<[N::Out; BLOCK]>,
    n: usize,
) -> &'v [N::Out] {
    match node.run_slice(at, n) {
        Some(values) => values,
        None => {
            let buf = &mut buf.insert([<N::Out as Element>::ZERO; BLOCK])[..n];
            node.eval_run(at, buf);
            buf
        }
    }
}

/// A tensor or view read element by element.
pub struct Leaf<'a, T: Element, D: Backend> {
    pub(crate) view: TensorView<'a, T, D>,
}

impl<'s, H> ProgramOf<'s, H> {
    /// A leaf reading `view`, on the engine whose leaf handles are `H`; a view of the same
    /// storage and layout reached before is loaded once.
    pub fn leaf<T: Element, D: Backend + FusedBackend<LeafHandle<'s> = H>>(
        &mut self,
        view: &'s TensorView<'_, T, D>,
    ) -> usize {
        let storage = view.storage();
        self.leaf_of::<T>(view.layout(), D::leaf_key(storage), || {
            D::leaf_handle(storage)
        })
    }
}

impl<T: Element, D: Backend> Clone for Leaf<'_, T, D> {
    fn clone(&self) -> Self {
        Leaf {
            view: self.view.clone(),
        }
    }
}

impl<T: Element, D: Backend> NodeImpl<D> for Leaf<'_, T, D> {
    type Out = T;

    fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize {
        p.leaf(&self.view)
    }

    fn eval(&self, at: &mut Cursor<'_>) -> T
    where
        D: HostBackend,
    {
        let off = at.take();
        D::host(self.view.storage())[off]
    }

    #[inline(always)]
    fn eval_run(&self, at: &mut RunCursor<'_>, out: &mut [T])
    where
        D: HostBackend,
    {
        let (start, stride) = at.take();
        read_run(D::host(self.view.storage()), start, stride, out);
    }

    #[inline(always)]
    fn run_slice<'v>(&'v self, at: &mut RunCursor<'_>, n: usize) -> Option<&'v [T]>
    where
        D: HostBackend,
    {
        let &(start, stride) = at.runs.get(at.next)?;
        let values = D::host(self.view.storage()).get(start..start + n)?;
        (stride == 1).then(|| {
            at.next += 1;
            values
        })
    }

    fn leaf_layouts<'s>(&'s self, layouts: &mut LeafLayouts<'s>) {
        layouts.push(self.view.layout());
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        if device.is_none() {
            *device = Some(self.view.device());
        }
    }

    fn current_reads(&self, _: &mut CurrentReads) {}
}

/// A constant, passed to kernels as an argument.
#[derive(Clone, Copy, Debug)]
pub struct Scalar<T: Element> {
    pub(crate) value: T,
}

impl<T: Element, D: Backend> NodeImpl<D> for Scalar<T> {
    type Out = T;

    fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize {
        p.scalar(self.value)
    }

    fn eval(&self, _: &mut Cursor<'_>) -> T
    where
        D: HostBackend,
    {
        self.value
    }

    #[inline(always)]
    fn eval_run(&self, _: &mut RunCursor<'_>, out: &mut [T])
    where
        D: HostBackend,
    {
        out.fill(self.value);
    }

    fn leaf_layouts<'s>(&'s self, _: &mut LeafLayouts<'s>) {}

    fn first_device<'s>(&'s self, _: &mut Option<&'s D>) {}

    fn current_reads(&self, _: &mut CurrentReads) {}
}

/// A unary op of the table (or a cast) applied to a node.
#[derive(Clone, Copy, Debug)]
pub struct Unary<O, A> {
    pub(crate) op: O,
    pub(crate) a: A,
}

impl<D: Backend, A: Node<D>, O: UnaryOp<A::Out>> NodeImpl<D> for Unary<O, A> {
    type Out = O::Output;

    fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize {
        let a = self.a.build(p);
        p.op(
            O::NAME,
            O::CUDA,
            &[a],
            Some(self.op.scalars()),
            <O::Output as Element>::DTYPE,
        )
    }

    fn eval(&self, at: &mut Cursor<'_>) -> O::Output
    where
        D: HostBackend,
    {
        self.op.cpu(self.a.eval(at))
    }

    #[inline(always)]
    fn eval_run(&self, at: &mut RunCursor<'_>, out: &mut [O::Output])
    where
        D: HostBackend,
    {
        let mut buf = None;
        let a = operand(&self.a, at, &mut buf, out.len());
        for (o, &x) in out.iter_mut().zip(a) {
            *o = self.op.cpu(x);
        }
    }

    fn leaf_layouts<'s>(&'s self, layouts: &mut LeafLayouts<'s>) {
        self.a.leaf_layouts(layouts);
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        self.a.first_device(device);
    }

    fn current_reads(&self, reads: &mut CurrentReads) {
        self.a.current_reads(reads);
    }

    fn row_stages(&self, out: &[usize], found: &mut RowStages) -> Result<()> {
        self.a.row_stages(out, found)
    }

    fn prepare(&self, fuse: bool) -> Result<()> {
        self.a.prepare(fuse)
    }
}

/// A conversion to `U`.
pub struct CastTo<U, A> {
    pub(crate) cast: Cast<U>,
    pub(crate) a: A,
}

impl<U, A: Clone> Clone for CastTo<U, A> {
    fn clone(&self) -> Self {
        CastTo {
            cast: self.cast,
            a: self.a.clone(),
        }
    }
}

impl<D: Backend, A: Node<D>, U: Element> NodeImpl<D> for CastTo<U, A> {
    type Out = U;

    fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize {
        let a = self.a.build(p);
        p.cast(a, U::DTYPE)
    }

    fn eval(&self, at: &mut Cursor<'_>) -> U
    where
        D: HostBackend,
    {
        UnaryOp::<A::Out>::cpu(&self.cast, self.a.eval(at))
    }

    #[inline(always)]
    fn eval_run(&self, at: &mut RunCursor<'_>, out: &mut [U])
    where
        D: HostBackend,
    {
        let mut buf = None;
        let a = operand(&self.a, at, &mut buf, out.len());
        for (o, &x) in out.iter_mut().zip(a) {
            *o = UnaryOp::<A::Out>::cpu(&self.cast, x);
        }
    }

    fn leaf_layouts<'s>(&'s self, layouts: &mut LeafLayouts<'s>) {
        self.a.leaf_layouts(layouts);
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        self.a.first_device(device);
    }

    fn current_reads(&self, reads: &mut CurrentReads) {
        self.a.current_reads(reads);
    }

    fn row_stages(&self, out: &[usize], found: &mut RowStages) -> Result<()> {
        self.a.row_stages(out, found)
    }

    fn prepare(&self, fuse: bool) -> Result<()> {
        self.a.prepare(fuse)
    }
}

/// A binary op of the table applied to two nodes of one element type.
#[derive(Clone, Copy, Debug)]
pub struct Binary<O, A, B> {
    pub(crate) op: O,
    pub(crate) a: A,
    pub(crate) b: B,
}

impl<D, A, B, O> NodeImpl<D> for Binary<O, A, B>
where
    D: Backend,
    A: Node<D>,
    B: Node<D, Out = A::Out>,
    O: BinaryOp<A::Out>,
{
    type Out = O::Output;

    fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize {
        let a = self.a.build(p);
        let b = self.b.build(p);
        p.op(
            O::NAME,
            O::CUDA,
            &[a, b],
            Some(self.op.scalars()),
            <O::Output as Element>::DTYPE,
        )
    }

    fn eval(&self, at: &mut Cursor<'_>) -> O::Output
    where
        D: HostBackend,
    {
        let a = self.a.eval(at);
        let b = self.b.eval(at);
        self.op.cpu(a, b)
    }

    #[inline(always)]
    fn eval_run(&self, at: &mut RunCursor<'_>, out: &mut [O::Output])
    where
        D: HostBackend,
    {
        let n = out.len();
        let (mut buf_a, mut buf_b) = (None, None);
        let a = operand(&self.a, at, &mut buf_a, n);
        let b = operand(&self.b, at, &mut buf_b, n);
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            *o = self.op.cpu(x, y);
        }
    }

    fn leaf_layouts<'s>(&'s self, layouts: &mut LeafLayouts<'s>) {
        self.a.leaf_layouts(layouts);
        self.b.leaf_layouts(layouts);
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        self.a.first_device(device);
        self.b.first_device(device);
    }

    fn current_reads(&self, reads: &mut CurrentReads) {
        self.a.current_reads(reads);
        self.b.current_reads(reads);
    }
    fn row_stages(&self, out: &[usize], found: &mut RowStages) -> Result<()> {
        self.a.row_stages(out, found)?;
        self.b.row_stages(out, found)?;
        Ok(())
    }

    fn prepare(&self, fuse: bool) -> Result<()> {
        self.a.prepare(fuse)?;
        self.b.prepare(fuse)?;
        Ok(())
    }
}

/// A ternary op of the table applied to three nodes (`where`, `clamp`, `fma`, `lerp`).
#[derive(Clone, Copy, Debug)]
pub struct Ternary<O, A, B, C> {
    pub(crate) op: O,
    pub(crate) a: A,
    pub(crate) b: B,
    pub(crate) c: C,
}

impl<D, A, B, C, O> NodeImpl<D> for Ternary<O, A, B, C>
where
    D: Backend,
    A: Node<D>,
    B: Node<D>,
    C: Node<D, Out = B::Out>,
    O: TernaryOp<A::Out, B::Out>,
{
    type Out = O::Output;

    fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize {
        let a = self.a.build(p);
        let b = self.b.build(p);
        let c = self.c.build(p);
        p.op::<B::Out>(
            O::NAME,
            O::CUDA,
            &[a, b, c],
            Some(self.op.scalars()),
            <O::Output as Element>::DTYPE,
        )
    }

    fn eval(&self, at: &mut Cursor<'_>) -> O::Output
    where
        D: HostBackend,
    {
        let a = self.a.eval(at);
        let b = self.b.eval(at);
        let c = self.c.eval(at);
        self.op.cpu(a, b, c)
    }

    #[inline(always)]
    fn eval_run(&self, at: &mut RunCursor<'_>, out: &mut [O::Output])
    where
        D: HostBackend,
    {
        let n = out.len();
        let (mut buf_a, mut buf_b, mut buf_c) = (None, None, None);
        let a = operand(&self.a, at, &mut buf_a, n);
        let b = operand(&self.b, at, &mut buf_b, n);
        let c = operand(&self.c, at, &mut buf_c, n);
        for (((o, &x), &y), &z) in out.iter_mut().zip(a).zip(b).zip(c) {
            *o = self.op.cpu(x, y, z);
        }
    }

    fn leaf_layouts<'s>(&'s self, layouts: &mut LeafLayouts<'s>) {
        self.a.leaf_layouts(layouts);
        self.b.leaf_layouts(layouts);
        self.c.leaf_layouts(layouts);
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        self.a.first_device(device);
        self.b.first_device(device);
        self.c.first_device(device);
    }

    fn current_reads(&self, reads: &mut CurrentReads) {
        self.a.current_reads(reads);
        self.b.current_reads(reads);
        self.c.current_reads(reads);
    }
    fn row_stages(&self, out: &[usize], found: &mut RowStages) -> Result<()> {
        self.a.row_stages(out, found)?;
        self.b.row_stages(out, found)?;
        self.c.row_stages(out, found)?;
        Ok(())
    }

    fn prepare(&self, fuse: bool) -> Result<()> {
        self.a.prepare(fuse)?;
        self.b.prepare(fuse)?;
        self.c.prepare(fuse)?;
        Ok(())
    }
}

/// The value output `K` of an in-place update ([`super::update`],
/// [`crate::tensor::Tensor::update`]) holds at the element being written, before the update
/// writes it. It borrows nothing: the update binds it to its `K`-th output, read through
/// exactly that output's layout, so each element is read by the pass (the GPU thread, or
/// block in the tiled form) that writes it, before it writes it.
///
/// Only an update's closure receives one, and it belongs to that call: each update brands
/// its current values with a number no other call has (a process-wide counter, never
/// reused), and a current value evaluated by anything else (a plain [`super::Expr::eval`],
/// another update, even one writing the same element type to the same output index) is
/// [`crate::error::LayoutError::UnboundCurrent`], before anything runs. (The brand is a
/// value rather than a lifetime because the closure's result type, which holds the node,
/// cannot name a lifetime that is fresh to each call on stable Rust.)
pub struct Current<T: Element, const K: usize> {
    brand: Brand,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element, const K: usize> Current<T, K> {
    pub(crate) fn new(brand: Brand) -> Self {
        Current {
            brand,
            _t: PhantomData,
        }
    }
}

impl<T: Element, const K: usize> Clone for Current<T, K> {
    fn clone(&self) -> Self {
        Current::new(self.brand)
    }
}

impl<T: Element, const K: usize> std::fmt::Debug for Current<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Current<{}, {K}>", T::DTYPE.name())
    }
}

impl<T: Element, D: Backend, const K: usize> NodeImpl<D> for Current<T, K> {
    type Out = T;

    fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize {
        p.current(K, T::DTYPE)
    }

    fn eval(&self, at: &mut Cursor<'_>) -> T
    where
        D: HostBackend,
    {
        // The evaluator checked before the pass that output `K` exists and holds `T`
        // (`UnboundCurrent` otherwise), so the fallback is never taken.
        at.current
            .get(K)
            .and_then(|v| v.downcast_ref::<T>())
            .copied()
            .unwrap_or(T::ZERO)
    }

    #[inline(always)]
    fn eval_run(&self, at: &mut RunCursor<'_>, out: &mut [T])
    where
        D: HostBackend,
    {
        // As in `eval`: checked before the pass, so the fallback is never taken.
        match at
            .current
            .get(K)
            .and_then(|v| v.downcast_ref::<[T; BLOCK]>())
        {
            Some(values) => out.copy_from_slice(&values[..out.len()]),
            None => out.fill(T::ZERO),
        }
    }

    fn leaf_layouts<'s>(&'s self, _: &mut LeafLayouts<'s>) {}

    fn first_device<'s>(&'s self, _: &mut Option<&'s D>) {}

    fn current_reads(&self, reads: &mut CurrentReads) {
        reads.push((K, T::DTYPE, self.brand));
    }
}

/// [`Node`] with its type erased, for [`Boxed`]: the same methods, object-safe.
trait ErasedNode<D: Backend, T> {
    fn build_erased<'s>(&'s self, p: &mut Program<'s, D>) -> usize;
    fn eval_erased(&self, at: &mut Cursor<'_>) -> T
    where
        D: HostBackend;
    fn eval_run_erased(&self, at: &mut RunCursor<'_>, out: &mut [T])
    where
        D: HostBackend;
    fn leaf_layouts_erased<'s>(&'s self, layouts: &mut LeafLayouts<'s>);
    fn first_device_erased<'s>(&'s self, device: &mut Option<&'s D>);
    fn current_reads_erased(&self, reads: &mut CurrentReads);
    fn row_stages_erased(&self, out: &[usize], found: &mut RowStages) -> Result<()>;
    fn prepare_erased(&self, fuse: bool) -> Result<()>;
}

impl<D: Backend, N: Node<D>> ErasedNode<D, N::Out> for N {
    fn build_erased<'s>(&'s self, p: &mut Program<'s, D>) -> usize {
        self.build(p)
    }
    fn eval_erased(&self, at: &mut Cursor<'_>) -> N::Out
    where
        D: HostBackend,
    {
        self.eval(at)
    }
    fn eval_run_erased(&self, at: &mut RunCursor<'_>, out: &mut [N::Out])
    where
        D: HostBackend,
    {
        self.eval_run(at, out)
    }
    fn leaf_layouts_erased<'s>(&'s self, layouts: &mut LeafLayouts<'s>) {
        self.leaf_layouts(layouts);
    }
    fn first_device_erased<'s>(&'s self, device: &mut Option<&'s D>) {
        self.first_device(device);
    }
    fn current_reads_erased(&self, reads: &mut CurrentReads) {
        self.current_reads(reads);
    }
    fn row_stages_erased(&self, out: &[usize], found: &mut RowStages) -> Result<()> {
        self.row_stages(out, found)
    }
    fn prepare_erased(&self, fuse: bool) -> Result<()> {
        self.prepare(fuse)
    }
}

/// A node whose type is erased ([`super::Expr::boxed`]): one type for every expression of
/// `T` on `D` that borrows for `'a`, so expressions can be built at run time (an
/// interpreter, a random tree) and stored together. It computes exactly what the node it
/// erases computes, and generates the same kernel; on the host each step is a virtual call.
pub struct Boxed<'a, T: Element, D: Backend> {
    node: Rc<dyn ErasedNode<D, T> + 'a>,
}

impl<T: Element, D: Backend> Clone for Boxed<'_, T, D> {
    fn clone(&self) -> Self {
        Boxed {
            node: Rc::clone(&self.node),
        }
    }
}

impl<'a, T: Element, D: Backend> Boxed<'a, T, D> {
    pub(crate) fn new<N: Node<D, Out = T> + 'a>(node: N) -> Self {
        Boxed {
            node: Rc::new(node),
        }
    }
}

impl<T: Element, D: Backend> NodeImpl<D> for Boxed<'_, T, D> {
    type Out = T;

    fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize {
        self.node.build_erased(p)
    }

    fn eval(&self, at: &mut Cursor<'_>) -> T
    where
        D: HostBackend,
    {
        self.node.eval_erased(at)
    }

    #[inline(always)]
    fn eval_run(&self, at: &mut RunCursor<'_>, out: &mut [T])
    where
        D: HostBackend,
    {
        self.node.eval_run_erased(at, out)
    }

    fn leaf_layouts<'s>(&'s self, layouts: &mut LeafLayouts<'s>) {
        self.node.leaf_layouts_erased(layouts);
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        self.node.first_device_erased(device);
    }

    fn current_reads(&self, reads: &mut CurrentReads) {
        self.node.current_reads_erased(reads);
    }

    fn row_stages(&self, out: &[usize], found: &mut RowStages) -> Result<()> {
        self.node.row_stages_erased(out, found)
    }

    fn prepare(&self, fuse: bool) -> Result<()> {
        self.node.prepare_erased(fuse)
    }
}
