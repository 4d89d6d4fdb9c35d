//! The typed tree of a fused expression: one node type per kind of step, each knowing how
//! to evaluate itself on the host and how to describe itself to a code generator.
//!
//! A node's output element type is an associated type, so every mismatch (an `f32` added to
//! an `f64`, a float op on integers, a non-`bool` mask) is a compile error where the node is
//! built, exactly as for the eager methods.

use crate::element::Element;
use crate::layout::Layout;
use crate::ops::{BinaryOp, Cast, TernaryOp, UnaryOp};
use crate::tensor::{Backend, HostBackend, TensorView};

use super::program::Program;

/// Where the host evaluation is: the storage offset of every leaf at the current element,
/// and the next leaf to read (leaves are read in the order [`Node::build`] numbers them).
pub struct Cursor<'c> {
    pub(crate) offsets: &'c [usize],
    pub(crate) next: usize,
}

impl<'c> Cursor<'c> {
    /// A cursor over leaf offsets `offsets`, at the first leaf.
    pub(crate) fn new(offsets: &'c [usize]) -> Self {
        Cursor { offsets, next: 0 }
    }

    fn take(&mut self) -> usize {
        let off = self.offsets[self.next];
        self.next += 1;
        off
    }
}

/// A node of a fused expression on device `D`. Sealed in effect: its methods name
/// crate-internal types, so only this module's node types implement it.
pub trait Node<D: Backend>: Clone {
    /// The element type the node produces.
    type Out: Element;

    /// Appends the node's leaves, scalars and instructions to `p` (children first, in
    /// argument order) and returns its value.
    fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize;

    /// The node's value at the element `at` points to, on the host (children evaluated in
    /// the order of [`Node::build`], each leaf reading its own offset).
    fn eval(&self, at: &mut Cursor<'_>) -> Self::Out
    where
        D: HostBackend;

    /// Adds the layouts of the node's leaves to `layouts`, in [`Node::build`] order.
    fn leaf_layouts<'s>(&'s self, layouts: &mut Vec<&'s Layout>);

    /// Sets `device` to the device of the node's first leaf, if it has one and `device` is
    /// `None`.
    fn first_device<'s>(&'s self, device: &mut Option<&'s D>);
}

/// A tensor or view read element by element.
pub struct Leaf<'a, T: Element, D: Backend> {
    pub(crate) view: TensorView<'a, T, D>,
}

impl<T: Element, D: Backend> Clone for Leaf<'_, T, D> {
    fn clone(&self) -> Self {
        Leaf {
            view: self.view.clone(),
        }
    }
}

impl<T: Element, D: Backend> Node<D> for Leaf<'_, T, D> {
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

    fn leaf_layouts<'s>(&'s self, layouts: &mut Vec<&'s Layout>) {
        layouts.push(self.view.layout());
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        if device.is_none() {
            *device = Some(self.view.device());
        }
    }
}

/// A constant, passed to kernels as an argument.
#[derive(Clone, Copy, Debug)]
pub struct Scalar<T: Element> {
    pub(crate) value: T,
}

impl<T: Element, D: Backend> Node<D> for Scalar<T> {
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

    fn leaf_layouts<'s>(&'s self, _: &mut Vec<&'s Layout>) {}

    fn first_device<'s>(&'s self, _: &mut Option<&'s D>) {}
}

/// A unary op of the table (or a cast) applied to a node.
#[derive(Clone, Copy, Debug)]
pub struct Unary<O, A> {
    pub(crate) op: O,
    pub(crate) a: A,
}

impl<D: Backend, A: Node<D>, O: UnaryOp<A::Out>> Node<D> for Unary<O, A> {
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

    fn leaf_layouts<'s>(&'s self, layouts: &mut Vec<&'s Layout>) {
        self.a.leaf_layouts(layouts);
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        self.a.first_device(device);
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

impl<D: Backend, A: Node<D>, U: Element> Node<D> for CastTo<U, A> {
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

    fn leaf_layouts<'s>(&'s self, layouts: &mut Vec<&'s Layout>) {
        self.a.leaf_layouts(layouts);
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        self.a.first_device(device);
    }
}

/// A binary op of the table applied to two nodes of one element type.
#[derive(Clone, Copy, Debug)]
pub struct Binary<O, A, B> {
    pub(crate) op: O,
    pub(crate) a: A,
    pub(crate) b: B,
}

impl<D, A, B, O> Node<D> for Binary<O, A, B>
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

    fn leaf_layouts<'s>(&'s self, layouts: &mut Vec<&'s Layout>) {
        self.a.leaf_layouts(layouts);
        self.b.leaf_layouts(layouts);
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        self.a.first_device(device);
        self.b.first_device(device);
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

impl<D, A, B, C, O> Node<D> for Ternary<O, A, B, C>
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
            None,
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

    fn leaf_layouts<'s>(&'s self, layouts: &mut Vec<&'s Layout>) {
        self.a.leaf_layouts(layouts);
        self.b.leaf_layouts(layouts);
        self.c.leaf_layouts(layouts);
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        self.a.first_device(device);
        self.b.first_device(device);
        self.c.first_device(device);
    }
}
