//! [`Tensor::map`] and [`Tensor::zip_map`]: a Rust closure applied element by element, on the
//! CPU engine only.
//!
//! These run any Rust code, so they cannot run on the GPU (a kernel is compiled from the op
//! table's CUDA expressions, never from user code). Ops that should run on every engine, or
//! fuse with others into one pass, are written over expressions instead: see
//! [`crate::tensor::expr`], "Your own ops". The free functions
//! [`tensor::ops::map`](crate::tensor::ops::map) and [`zip`](crate::tensor::ops::zip) are
//! something else: they run one op of the table (a [`UnaryOp`](crate::ops::UnaryOp) or
//! [`BinaryOp`](crate::ops::BinaryOp) value) on any engine.
//!
//! Both walk the input views in the CPU engine's runs (any strides, broadcast and negative
//! included) and append to a new row-major tensor, as the table's ops do.

use super::kernels;
use super::par::into_new_here;
use super::runs::at;
use crate::device::Cpu;
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::layout::{broadcast_shapes, collapse, Layout};
use crate::tensor::{AsView, Backend, HostBackend, ReadRepr, Tensor};

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// `f(a)` for each element, as a new row-major tensor of the same shape whose element
    /// type `U` may differ (ndarray's `mapv`): `x.map(|v| v as f64 * 0.5)`,
    /// `x.map(|v| v.is_nan())`. CPU tensors and views only, any layout (strided, broadcast,
    /// flipped).
    ///
    /// `f` is an ordinary Rust closure, so this runs on the host: for a GPU tensor, compose
    /// table ops in an expression (one fused kernel, see [`crate::tensor::expr`]) or copy
    /// the data with `to_cpu()` first. `f` should be pure: it is called once for each
    /// element in no particular order, and once for a run of elements that a broadcast
    /// view reads from one stored element. Not to be confused with the free function
    /// [`tensor::ops::map`](crate::tensor::ops::map), which runs an op of the table on any
    /// engine.
    ///
    /// # Errors
    /// [`crate::error::AllocError`] when the host cannot hold the result.
    pub fn map<U: Element>(&self, f: impl Fn(T) -> U) -> Result<Tensor<U, Cpu>>
    where
        D: HostBackend,
    {
        let v = self.view();
        let out = Layout::contiguous(v.shape())?;
        let c = collapse([&out, v.layout()]);
        let data = D::host(v.storage());
        let values = into_new_here(&c, |walk, out| kernels::unary(&f, data, &c, walk, out))?;
        Ok(Tensor::from_contiguous(values, out, Cpu))
    }

    /// `f(a, b)` for each pair of elements of `self` and `other`, broadcast together as the
    /// binary ops broadcast (NumPy's rules), as a new row-major tensor of the broadcast
    /// shape (ndarray's `Zip::map_collect`). The three element types may differ:
    /// `x.zip_map(&mask, |v, keep| if keep { v } else { 0.0 })`. CPU tensors and views
    /// only; `f` should be pure, as for [`map`](Self::map).
    ///
    /// # Errors
    /// [`LayoutError::BroadcastMismatch`] naming `zip_map` when the shapes do not
    /// broadcast; [`crate::error::AllocError`] when the host cannot hold the result.
    pub fn zip_map<V: Element, U: Element>(
        &self,
        other: &impl AsView<V, D>,
        f: impl Fn(T, V) -> U,
    ) -> Result<Tensor<U, Cpu>>
    where
        D: HostBackend,
    {
        let (a, b) = (self.view(), other.view());
        let shape = broadcast_shapes("zip_map", a.shape(), b.shape()).map_err(|e| match e {
            LayoutError::BroadcastMismatch { .. } => LayoutError::BroadcastMismatch {
                op: "zip_map",
                lhs: a.shape().to_vec(),
                rhs: b.shape().to_vec(),
            },
            other => other,
        })?;
        let (a, b) = (a.broadcast_to(&shape)?, b.broadcast_to(&shape)?);
        let out = Layout::contiguous(&shape)?;
        let c = collapse([&out, a.layout(), b.layout()]);
        let (da, db) = (D::host(a.storage()), D::host(b.storage()));
        let values = into_new_here(&c, |walk, out| {
            walk.runs(&c, |o, s, n| {
                let values = (0..n).map(|i| f(da[at(o[1], s[1], i)], db[at(o[2], s[2], i)]));
                out.put(o[0], s[0], n, values)
            })
        })?;
        Ok(Tensor::from_contiguous(values, out, Cpu))
    }
}
