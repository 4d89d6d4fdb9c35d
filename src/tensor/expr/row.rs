//! Row stages (issue 28): softmax, the norms and row statistics inside a fused expression,
//! each a reduction over one dim whose result broadcasts back along it, so that
//! `x.lazy().softmax(-1) * &w`, `(x.lazy() * s).layer_norm(1e-5) * &w + &b` or
//! `x.lazy() - x.lazy().mean_keepdim(-1)` is one expression:
//!
//! ```
//! use typestate_tensor::tensor::Tensor;
//!
//! let x = Tensor::from_vec(&[2, 3], vec![1.0f64, 2.0, 3.0, -1.0, 0.0, 1.0])?;
//! let w = Tensor::from_vec(&[3], vec![1.0f64, 2.0, 3.0])?;
//! let b = Tensor::from_vec(&[3], vec![0.5f64, 0.5, 0.5])?;
//! // Layer norm over the last dim with its affine step, and a centred copy, each one pass
//! // on the GPU (statistics and all).
//! let y = (x.lazy().layer_norm(0.0) * &w + &b).eval()?;
//! let eager = x.layer_norm(&[3], Some(w.view()), Some(b.view()), 0.0)?;
//! assert_eq!(y.to_vec(), eager.to_vec());
//! let centred = (x.lazy() - x.lazy().mean_keepdim(-1)).eval()?;
//! assert_eq!(centred.to_vec(), [-1.0, 0.0, 1.0, -1.0, 0.0, 1.0]);
//! # Ok::<(), typestate_tensor::Error>(())
//! ```
//!
//! A stage has its argument's shape: a statistic (`mean_keepdim`, `var_keepdim`, ...) is the
//! row's value repeated along the row, as PyTorch's `x.mean(dim, keepdim=True)` broadcast
//! back to `x`. Its value is rounded to the element type, as the eager op's stored result.
//!
//! On the GPU an expression (or a tuple of them, [`super::eval_into`]) with one stage whose
//! reduced dim has the output's length runs as one kernel, a warp or a block per row: the
//! ops below the stage load the row, the ops above it store it. Anything else is still
//! evaluated, in more passes: each other stage (a second one, one inside another's
//! argument, one broadcast along its reduced dim) is evaluated into a tensor first, with the
//! eager op; the CPU engine evaluates every stage that way. A stage's argument cannot read
//! an update's current value ([`super::update`]): that is a typed error.

use std::cell::OnceCell;
use std::rc::Rc;

use crate::element::{Element, FloatElement};
use crate::error::{LayoutError, Result};
use crate::layout::{broadcast_shapes, normalize_dim, Layout};
use crate::tensor::backend::{Backend, HostBackend};
use crate::tensor::base::Tensor;
use crate::tensor::normalize::NormalizeBackend;
use crate::tensor::Dim;

use super::build::Expr;
use super::host::{read_run, RunCursor};
use super::node::sealed::NodeImpl;
use super::node::{CurrentReads, Cursor, LeafLayouts, Node, RowStages};
use super::program::{Program, RowKind};

/// A row stage over the expression `N` ([`Expr::softmax`], [`Expr::layer_norm`],
/// [`Expr::mean_keepdim`], ...): a node of a fused expression, named in types as every
/// node is (`impl Node<D, Out = T>`).
pub struct RowStage<T: Element, D: Backend, N> {
    arg: N,
    kind: RowKind,
    dim: isize,
    param: f64,
    /// The evaluated stage (the eager op's result, a statistic's `keepdim` tensor) with its
    /// layout over the stage's shape, once the evaluator chose to evaluate it apart: the
    /// node is then a leaf of it. Shared by clones.
    value: OnceCell<Rc<(Tensor<T, D>, Layout)>>,
    /// The reduced dim counted from the last and the row length, once the evaluator chose to
    /// run the stage in the output's kernel.
    fused: OnceCell<(usize, usize)>,
}

impl<T: Element, D: Backend, N: Clone> Clone for RowStage<T, D, N> {
    fn clone(&self) -> Self {
        RowStage {
            arg: self.arg.clone(),
            kind: self.kind,
            dim: self.dim,
            param: self.param,
            value: self.value.clone(),
            fused: self.fused.clone(),
        }
    }
}

impl<T: FloatElement, D: NormalizeBackend<T>, N: Node<D, Out = T>> Expr<T, D, N> {
    fn stage(self, kind: RowKind, dim: isize, param: f64) -> Expr<T, D, RowStage<T, D, N>> {
        Expr::new(RowStage {
            arg: self.node,
            kind,
            dim,
            param,
            value: OnceCell::new(),
            fused: OnceCell::new(),
        })
    }

    /// [`Tensor::softmax`] along `dim` of this expression, inside it: one kernel on the GPU
    /// with the ops around it (`(x.lazy() * scale).softmax(-1)`, `x.lazy().softmax(-1) *
    /// &y`). See [`RowStage`]'s module for when it takes more passes.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[2, 2], vec![0.0f32, 0.0, 1000.0, 1000.0])?;
    /// let p = (x.lazy() * 2.0).softmax(-1).eval()?;
    /// assert_eq!(p.to_vec(), [0.5; 4]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// A dim out of range is [`LayoutError::DimOutOfRange`] at evaluation.
    pub fn softmax(self, dim: impl Dim) -> Expr<T, D, RowStage<T, D, N>> {
        self.stage(RowKind::Softmax, dim.to_isize(), 0.0)
    }

    /// [`Tensor::log_softmax`] along `dim`, inside the expression (as
    /// [`softmax`](Self::softmax)).
    pub fn log_softmax(self, dim: impl Dim) -> Expr<T, D, RowStage<T, D, N>> {
        self.stage(RowKind::LogSoftmax, dim.to_isize(), 0.0)
    }

    /// Layer normalisation over the last dim, `(x − mean) / sqrt(var + eps)` with the
    /// biased variance (`F.layer_norm(x, x.shape[-1:], eps=eps)` without weight and bias:
    /// multiply and add them in the expression, `.layer_norm(eps) * &w + &b`, still one
    /// kernel). PyTorch's default `eps` is `1e-5`.
    pub fn layer_norm(self, eps: f64) -> Expr<T, D, RowStage<T, D, N>> {
        self.stage(RowKind::LayerNorm, -1, eps)
    }

    /// RMS normalisation over the last dim, `x / sqrt(mean(x²) + eps)` (`F.rms_norm(x,
    /// x.shape[-1:], eps=eps)`; the weight multiplied in the expression); `eps` `None` is
    /// the type's machine epsilon, as in PyTorch.
    pub fn rms_norm(self, eps: Option<f64>) -> Expr<T, D, RowStage<T, D, N>> {
        let eps = eps.unwrap_or_else(|| T::epsilon().to_f64());
        self.stage(RowKind::RmsNorm, -1, eps)
    }

    /// `log Σ exp(x)` of each row along `dim`, repeated along it
    /// ([`Tensor::logsumexp_dim`] with `keepdim`, broadcast back).
    pub fn logsumexp_keepdim(self, dim: impl Dim) -> Expr<T, D, RowStage<T, D, N>> {
        self.stage(RowKind::LogSumExp, dim.to_isize(), 0.0)
    }

    /// The mean of each row along `dim`, repeated along it (`x.mean(dim, keepdim=True)`
    /// broadcast back): `x.lazy() - x.lazy().mean_keepdim(-1)` centres the rows in one pass.
    pub fn mean_keepdim(self, dim: impl Dim) -> Expr<T, D, RowStage<T, D, N>> {
        self.stage(RowKind::Mean, dim.to_isize(), 0.0)
    }

    /// The variance of each row along `dim` with `correction` ([`Tensor::var_dim`]),
    /// repeated along it.
    pub fn var_keepdim(self, dim: impl Dim, correction: f64) -> Expr<T, D, RowStage<T, D, N>> {
        self.stage(RowKind::Var, dim.to_isize(), correction)
    }

    /// The standard deviation of each row along `dim` with `correction`
    /// ([`Tensor::std_dim`]), repeated along it.
    pub fn std_keepdim(self, dim: impl Dim, correction: f64) -> Expr<T, D, RowStage<T, D, N>> {
        self.stage(RowKind::Std, dim.to_isize(), correction)
    }
}

impl<T: FloatElement, D: NormalizeBackend<T>, N: Node<D, Out = T>> RowStage<T, D, N> {
    /// The stage's shape (its argument's) and reduced dim.
    ///
    /// # Errors
    /// [`LayoutError::UnboundCurrent`] for an argument that reads an update's current value
    /// (the stage would need the whole row of an output it writes); the argument's shape
    /// errors; [`LayoutError::DimOutOfRange`].
    fn geometry(&self) -> Result<(Vec<usize>, usize)> {
        let op = self.kind.name();
        let mut reads = CurrentReads::new();
        self.arg.current_reads(&mut reads);
        if let Some(&(output, dtype, _)) = reads.iter().next() {
            return Err(LayoutError::UnboundCurrent {
                op,
                output,
                dtype: dtype.name(),
                reason: "a row stage (softmax, a norm, a row statistic) cannot read an update's current value: evaluate it into a tensor first",
            }
            .into());
        }
        let mut layouts = LeafLayouts::new();
        self.arg.leaf_layouts(&mut layouts);
        let mut shapes = layouts.iter().map(|l| l.shape());
        let first = shapes
            .next()
            .ok_or(LayoutError::NoTensorInExpression { op })?;
        let shape = shapes.try_fold(first.to_vec(), |s, t| broadcast_shapes(op, &s, t))?;
        let d = normalize_dim(op, self.dim, shape.len().max(1))?;
        Ok((shape, d))
    }

    /// Evaluates the stage apart: its argument into a tensor, then the eager op.
    fn evaluate(&self) -> Result<()> {
        let (shape, d) = self.geometry()?;
        let x = Expr::new(self.arg.clone()).eval()?;
        let last = &shape[shape.len().saturating_sub(1)..];
        let y = match self.kind {
            RowKind::Softmax => x.softmax(d)?,
            RowKind::LogSoftmax => x.log_softmax(d)?,
            RowKind::LayerNorm => x.layer_norm(last, None, None, self.param)?,
            RowKind::RmsNorm => x.rms_norm(last, None, Some(self.param))?,
            RowKind::LogSumExp => x.logsumexp_dim(d, true)?,
            RowKind::Var => x.var_dim(d, self.param, true)?,
            RowKind::Std => x.std_dim(d, self.param, true)?,
            RowKind::Mean => x.var_mean_dim(d, 0.0, true)?.1,
        };
        let layout = y.layout().broadcast_to(&shape)?;
        // Set once: `prepare` returns early when it is.
        let _ = self.value.set(Rc::new((y, layout)));
        Ok(())
    }
}

impl<T, D, N> NodeImpl<D> for RowStage<T, D, N>
where
    T: FloatElement,
    D: NormalizeBackend<T>,
    N: Node<D, Out = T>,
{
    type Out = T;

    fn build<'s>(&'s self, p: &mut Program<'s, D>) -> usize {
        if let Some(v) = self.value.get() {
            let storage = v.0.view().storage();
            return p.leaf_of::<T>(&v.1, D::leaf_key(storage), || D::leaf_handle(storage));
        }
        // Built for inspection (`op_names`) before the evaluator's choice: its geometry now.
        let (dim_from_end, len) = self.fused.get().copied().unwrap_or_else(|| {
            self.geometry()
                .map(|(s, d)| {
                    (
                        s.len().saturating_sub(d + 1),
                        s.get(d).copied().unwrap_or(1),
                    )
                })
                .unwrap_or((0, 0))
        });
        let arg = self.arg.build(p);
        p.row(arg, self.kind, dim_from_end, len, self.param)
    }

    fn eval(&self, at: &mut Cursor<'_>) -> T
    where
        D: HostBackend,
    {
        let off = at.take();
        match self.value.get() {
            Some(v) => D::host(v.0.view().storage())[off],
            // The evaluator evaluates every stage apart before a host pass (engines
            // without `ROW_STAGE_KERNEL`), so this is not reached.
            None => T::nan(),
        }
    }

    #[inline(always)]
    fn eval_run(&self, at: &mut RunCursor<'_>, out: &mut [T])
    where
        D: HostBackend,
    {
        let (start, stride) = at.take();
        // The host pass may call this from several threads at once (`eval_run`'s contract):
        // the cell was set by `prepare` before the pass and is only read here, and the
        // tensor behind the `Rc` is only read.
        match self.value.get() {
            Some(v) => read_run(D::host(v.0.view().storage()), start, stride, out),
            // As in `eval`: not reached.
            None => out.fill(T::nan()),
        }
    }

    fn leaf_layouts<'s>(&'s self, layouts: &mut LeafLayouts<'s>) {
        match self.value.get() {
            Some(v) => layouts.push(&v.1),
            None => self.arg.leaf_layouts(layouts),
        }
    }

    fn first_device<'s>(&'s self, device: &mut Option<&'s D>) {
        match self.value.get() {
            Some(v) if device.is_none() => *device = Some(v.0.device()),
            Some(_) => {}
            None => self.arg.first_device(device),
        }
    }

    fn current_reads(&self, reads: &mut CurrentReads) {
        if self.value.get().is_none() {
            self.arg.current_reads(reads);
        }
    }

    fn row_stages(&self, out: &[usize], found: &mut RowStages) -> Result<()> {
        if self.value.get().is_some() {
            return Ok(());
        }
        let (shape, d) = self.geometry()?;
        found.count += 1;
        // The output's kernel holds the stage's rows when the reduced dim keeps its length
        // in the output (a stage broadcast along it would reduce too many elements).
        let r = shape.len();
        let fits = r >= 1 && out.len() >= r && out[out.len() - r + d] == shape[d];
        found.fit &= fits;
        Ok(())
    }

    fn prepare(&self, fuse: bool) -> Result<()> {
        if self.value.get().is_some() || self.fused.get().is_some() {
            return Ok(());
        }
        // Stages inside the argument are always evaluated apart.
        self.arg.prepare(false)?;
        if fuse {
            let (shape, d) = self.geometry()?;
            let _ = self
                .fused
                .set((shape.len().saturating_sub(d + 1), shape[d]));
            Ok(())
        } else {
            self.evaluate()
        }
    }
}
