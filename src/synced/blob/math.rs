//! Caffe's blob math: `asum`, `sumsq`, `scale` of data or diff, and `Update()`
//! (`data -= diff`), each run where the side's head is, as Caffe's `switch (head())` does:
//! on the CPU for `HeadAtCpu`, on the GPU for `HeadAtGpu` and `Synced`, and not at all for
//! `Uninitialized` (sums are 0, a scale does nothing). The state after a write is the type
//! Caffe's `mutable_*_data()` leaves: a scale of `Synced` data makes the GPU side the head.
//!
//! The math is tensor ops and reductions over 1-D tensor views of the side's first
//! `count()` elements, on the side's device: [`Cpu`], or the blob's [`Gpu`] queuing on the
//! blob's stream (the handle `gpu.on(&stream)` gives), so the same methods and kernels serve
//! every tensor and every stream. `asum` / `sumsq` are the reductions
//! [`sum_abs`](crate::tensor::Tensor::sum_abs) / [`sum_sq`](crate::tensor::Tensor::sum_sq)
//! (one pass, accumulated in the element type as Caffe's cuBLAS `asum` and PyTorch's `sum`
//! are: an `f32` blob's sum is an `f32` sum in tree (GPU) or pairwise (CPU) order, whose
//! error is at most `(n - 1) * eps * Σ|x|` and in practice a few `eps` times `log2(n)`; take
//! a view and `.cast::<f64>()` first for a wider sum); `scale` is `mul_scalar_` and
//! `update()` is `sub_`, one in-place pass each. [`Blob::sgd_update`] is where fusion pays:
//! Caffe's L2 regularization, learning-rate scaling and `Update()` (three passes, two of them
//! writing the diff) become one fused in-place pass over the data
//! ([`crate::tensor::Tensor::update`]). For other fused steps (momentum, Adam),
//! `cpu_data_mut_with_diff` / `gpu_data_mut_with_diff` lend the data writable and the diff
//! readable at once, under the same state bounds (and `*_diff_mut_with_data`,
//! `*_data_diff_mut` the other splits, `views.rs`).

use super::base::{cpu_prefix, gpu_of, gpu_of_raw, Blob, Raw};
use super::side::{BlobSide, OwnedSide};
use crate::device::Cpu;
use crate::element::FloatElement;
use crate::error::{Error, StateError};
use crate::layout::Layout;
use crate::ops::reduce::{ReduceElement, Reduction, SumAbs, SumSq};
use crate::runtime::Gpu;
use crate::synced::state::{
    CpuReadable, GpuReadable, Head, HeadAtCpu, HeadAtGpu, HeadState, Settled, Synced, Uninitialized,
};
use crate::synced::synced_memory::SyncedMemory;
use crate::synced::transition_error::TransitionError;
use crate::tensor::expr::node::{Current, Node};
use crate::tensor::expr::Expr;
use crate::tensor::Backend;
use crate::tensor::{TensorView, TensorViewMut};

mod sealed {
    pub trait Sealed {}
}

/// Element types of blob math: Caffe's `Dtype`, `f32` and `f64`.
#[diagnostic::on_unimplemented(
    message = "blob math takes `f32` or `f64` elements, not `{Self}`",
    note = "Caffe's blobs hold float or double; cast the data first"
)]
pub trait BlobElement:
    FloatElement + ReduceElement<Sum = Self> + cudarc::driver::DeviceRepr + sealed::Sealed
{
}
impl sealed::Sealed for f32 {}
impl sealed::Sealed for f64 {}
impl BlobElement for f32 {}
impl BlobElement for f64 {}

/// Where a side's math runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathPlace {
    /// Nothing is allocated: sums are 0 and writes do nothing.
    Nowhere,
    /// On the CPU copy.
    Cpu,
    /// On the GPU copy.
    Gpu,
}

/// Head states in which blob math can run, where it runs, and the state it leaves after a
/// write.
#[diagnostic::on_unimplemented(
    message = "blob math cannot run in state `{Self}`",
    label = "an asynchronous push may still be running",
    note = "call `.wait()` on the memory first"
)]
pub trait MathSide: Settled {
    /// Where Caffe runs math in this state.
    const PLACE: MathPlace;
    /// The state after an in-place write (`scale`, `update`).
    type AfterWrite: Settled;
}
impl MathSide for Uninitialized {
    const PLACE: MathPlace = MathPlace::Nowhere;
    type AfterWrite = Uninitialized;
}
impl MathSide for HeadAtCpu {
    const PLACE: MathPlace = MathPlace::Cpu;
    type AfterWrite = HeadAtCpu;
}
impl MathSide for HeadAtGpu {
    const PLACE: MathPlace = MathPlace::Gpu;
    type AfterWrite = HeadAtGpu;
}
impl MathSide for Synced {
    const PLACE: MathPlace = MathPlace::Gpu;
    type AfterWrite = HeadAtGpu;
}

/// Data states `update()` can run in given the diff's state `G`: the diff must be current
/// on the side where the data's head is (Caffe reads `cpu_diff()` or `gpu_diff()` there,
/// which would copy; here the copy is the caller's explicit transition).
#[diagnostic::on_unimplemented(
    message = "`update()` cannot run with data in state `{Self}` and diff in state `{G}`",
    label = "the diff must be current where the data's head is, and the data initialized",
    note = "make the diff readable on the data's side first (`.into_cpu_diff()` for data at the CPU, `.into_gpu_diff()` for data at the GPU or synced); Caffe's Update() of uninitialized data is a fatal error"
)]
pub trait UpdateWith<G: HeadState>: MathSide {}
impl<G: DiffOnCpu> UpdateWith<G> for HeadAtCpu {}
impl<G: DiffOnGpu> UpdateWith<G> for HeadAtGpu {}
impl<G: DiffOnGpu> UpdateWith<G> for Synced {}

/// Diff states current on the CPU, where `update()` of `HeadAtCpu` data reads the diff
/// (the same states as [`CpuReadable`], with a message that says it is the diff).
#[diagnostic::on_unimplemented(
    message = "the diff is not current on the CPU (diff state `{Self}`), where the data's head is",
    label = "`data -= diff` runs on the CPU here and reads the diff there",
    note = "call `.into_cpu_diff()` first (Caffe's `cpu_diff()`, which `Update()` calls: it copies the diff from the GPU when stale), or take the data to the GPU with `.into_gpu_data_mut()`"
)]
pub trait DiffOnCpu: CpuReadable {}
impl DiffOnCpu for HeadAtCpu {}
impl DiffOnCpu for Synced {}

/// Diff states current on the GPU, where `update()` of `HeadAtGpu` or `Synced` data reads
/// the diff (the same states as [`GpuReadable`], with a message that says it is the diff).
#[diagnostic::on_unimplemented(
    message = "the diff is not current on the GPU (diff state `{Self}`), where the data's head is",
    label = "`data -= diff` runs on the GPU here and reads the diff there",
    note = "call `.into_gpu_diff()` first (Caffe's `gpu_diff()`, which `Update()` calls: it copies the diff to the GPU when stale), or take the data to the CPU with `.into_cpu_data_mut()`"
)]
pub trait DiffOnGpu: GpuReadable {}
impl DiffOnGpu for HeadAtGpu {}
impl DiffOnGpu for Synced {}

/// Head states whose blob math writes leave the state as it is (`AfterWrite = Self`), so
/// the math has a `&mut self` form (`update_in_place`, `scale_data_in_place`, ...). Not
/// `Synced`: a write there makes the GPU side the head, which changes the type.
#[diagnostic::on_unimplemented(
    message = "a write in state `{Self}` changes the state, so it has no `&mut self` form",
    label = "math on `Synced` writes the GPU copy, which becomes the head (`HeadAtGpu`)",
    note = "take the GPU side first with `.into_gpu_data_mut()` / `.into_gpu_diff_mut()` (no copy from `Synced`) and keep the blob as `HeadAtGpu`, or call the consuming form (`update()`, `scale_data()`, `sgd_update()`), which returns the new state"
)]
pub trait InPlaceMath: MathSide<AfterWrite = Self> {}
impl InPlaceMath for Uninitialized {}
impl InPlaceMath for HeadAtCpu {}
impl InPlaceMath for HeadAtGpu {}

/// Caffe's `asum` / `sumsq` (the reduction `op`) of the first `count` elements of a side
/// whose math runs at `place`, on that side's device.
pub(super) fn reduce_at<T: BlobElement, R: Reduction<T, Output = T>>(
    raw: &Raw<T>,
    place: MathPlace,
    count: usize,
    op: R,
) -> Result<T, Error> {
    let layout = Layout::contiguous(&[count])?;
    match place {
        MathPlace::Nowhere => Ok(T::from_f64(0.0)),
        MathPlace::Cpu => TensorView::new(cpu_prefix(raw, count), layout, &Cpu)?
            .reduce(op, None, false)?
            .item(),
        MathPlace::Gpu => TensorView::new(gpu_of(raw), layout, gpu_of_raw(raw))?
            .reduce(op, None, false)?
            .item(),
    }
}

/// `w - (g + w * weight_decay) * lr`, the fused SGD step of [`Blob::sgd_update`].
#[allow(clippy::type_complexity)] // the expression's structure
fn sgd_step<'g, T: BlobElement, Dev: Backend>(
    w: Expr<T, Dev, Current<T, 0>>,
    g: &'g TensorView<'_, T, Dev>,
    lr: T,
    weight_decay: T,
) -> Expr<T, Dev, impl Node<Dev, Out = T> + 'g> {
    w.clone() - (g.lazy() + w.mul_scalar(weight_decay)).mul_scalar(lr)
}

/// An in-place write of blob math on one side's first `count` elements.
#[derive(Clone, Copy)]
pub(super) enum Write<'d, T: BlobElement> {
    /// `x *= factor` (Caffe's `scale_*`).
    Scale(T),
    /// `x -= diff` (Caffe's `Update()`); `diff` is current on the side the write runs on.
    SubDiff(&'d Raw<T>),
    /// `x -= lr * (diff + weight_decay * x)`, fused; `diff` as for `SubDiff`.
    Sgd {
        diff: &'d Raw<T>,
        lr: T,
        weight_decay: T,
    },
}

impl<'d, T: BlobElement> Write<'d, T> {
    /// Runs the write on `x` through the tensor ops of `x`'s device; `diff_view` views a
    /// diff on that device with `x`'s layout.
    fn run<Dev: Backend>(
        self,
        x: &mut TensorViewMut<'_, T, Dev>,
        diff_view: impl FnOnce(&'d Raw<T>) -> Result<TensorView<'d, T, Dev>, Error>,
    ) -> Result<(), Error> {
        match self {
            Write::Scale(factor) => x.mul_scalar_(factor),
            Write::SubDiff(diff) => x.sub_(&diff_view(diff)?),
            Write::Sgd {
                diff,
                lr,
                weight_decay,
            } => {
                let g = diff_view(diff)?;
                x.update(|w| sgd_step(w, &g, lr, weight_decay))
            }
        }
    }
}

/// Where Caffe runs math on a side whose head is `head` (its `switch (head())`).
pub(super) fn place_of(op: &'static str, head: Head) -> Result<MathPlace, Error> {
    match head {
        Head::Uninitialized => Ok(MathPlace::Nowhere),
        Head::HeadAtCpu => Ok(MathPlace::Cpu),
        Head::HeadAtGpu | Head::Synced => Ok(MathPlace::Gpu),
        Head::InFlight => Err(StateError::PushInFlight { op }.into()),
    }
}

/// Runs `write` on the first `count` elements of the side where math runs for `head`, and
/// returns the head Caffe's `mutable_*_data()` leaves: unchanged for `Uninitialized` (nothing
/// is written), `HeadAtCpu` on the CPU, `HeadAtGpu` on the GPU (taking the GPU side of
/// `Synced` copies nothing). On error nothing has changed: the engines fail before writing
/// (a shape check, a kernel that could not be compiled or launched), and the head moves only
/// after the write.
pub(super) fn write_raw<T: BlobElement>(
    op: &'static str,
    raw: &mut Raw<T>,
    head: Head,
    count: usize,
    write: Write<'_, T>,
) -> Result<Head, Error> {
    match place_of(op, head)? {
        MathPlace::Nowhere => Ok(head),
        MathPlace::Cpu => {
            let layout = Layout::contiguous(&[count])?;
            let x = match raw.host_mut().and_then(|h| h.get_mut(..count)) {
                Some(x) => x,
                None => unreachable!("a HeadAtCpu side holds at least count elements"),
            };
            let mut x = TensorViewMut::new(x, layout.clone(), &Cpu)?;
            write.run(&mut x, |diff| {
                TensorView::new(cpu_prefix(diff, count), layout, &Cpu)
            })?;
            Ok(Head::HeadAtCpu)
        }
        MathPlace::Gpu => {
            let layout = Layout::contiguous(&[count])?;
            // `HeadAtGpu` and `Synced` hold a device copy (and so a device, which queues on
            // the memory's stream).
            {
                let (x, accel) = raw.device_mut_and_accel();
                let mut x = TensorViewMut::<T, Gpu>::new(x, layout.clone(), accel.gpu())?;
                write.run(&mut x, |diff| {
                    TensorView::new(gpu_of(diff), layout, gpu_of_raw(diff))
                })?;
            }
            // No copy: the GPU copy is current in both states; the GPU side becomes the head.
            raw.make_gpu_head(head)
        }
    }
}

/// [`write_raw`] on a typed memory, retyped as its state after the write; on error the
/// memory comes back unchanged in `S`.
#[allow(clippy::type_complexity)] // the error hands the memory back in its state
fn write_side<T: BlobElement, S: MathSide>(
    op: &'static str,
    mut mem: SyncedMemory<T, S>,
    count: usize,
    write: Write<'_, T>,
) -> Result<SyncedMemory<T, S::AfterWrite>, (SyncedMemory<T, S>, Error)> {
    match write_raw(op, &mut mem.raw, S::HEAD, count, write) {
        Ok(next) => {
            debug_assert_eq!(next, <S::AfterWrite as HeadState>::HEAD);
            Ok(mem.retype())
        }
        Err(e) => Err((mem, e)),
    }
}

/// [`write_raw`] through `&mut` on a memory whose state a write keeps.
fn write_in_place<T: BlobElement, S: InPlaceMath>(
    op: &'static str,
    mem: &mut SyncedMemory<T, S>,
    count: usize,
    write: Write<'_, T>,
) -> Result<(), Error> {
    let next = write_raw(op, &mut mem.raw, S::HEAD, count, write)?;
    debug_assert_eq!(next, S::HEAD);
    Ok(())
}

impl<T: BlobElement, D: BlobSide, G: BlobSide> Blob<T, D, G> {
    /// Caffe `asum_data()`: the sum of absolute values of the data, computed where the
    /// data's head is (0 when uninitialized).
    pub fn asum_data(&self) -> Result<T, Error>
    where
        D::Base: MathSide,
    {
        reduce_at(D::raw(&self.data), D::Base::PLACE, self.count(), SumAbs)
    }

    /// Caffe `asum_diff()`.
    pub fn asum_diff(&self) -> Result<T, Error>
    where
        G::Base: MathSide,
    {
        reduce_at(G::raw(&self.diff), G::Base::PLACE, self.count(), SumAbs)
    }

    /// Caffe `sumsq_data()`: the sum of squares of the data, computed where its head is.
    pub fn sumsq_data(&self) -> Result<T, Error>
    where
        D::Base: MathSide,
    {
        reduce_at(D::raw(&self.data), D::Base::PLACE, self.count(), SumSq)
    }

    /// Caffe `sumsq_diff()`.
    pub fn sumsq_diff(&self) -> Result<T, Error>
    where
        G::Base: MathSide,
    {
        reduce_at(G::raw(&self.diff), G::Base::PLACE, self.count(), SumSq)
    }

    /// Caffe `scale_data(factor)`: multiplies the data where its head is; `Synced` data is
    /// scaled on the GPU, which becomes the head (no copy). A failure hands the blob back.
    /// [`scale_data_in_place`](Self::scale_data_in_place) is the `&mut self` form.
    #[allow(clippy::type_complexity)] // the next state is computed by the trait
    pub fn scale_data(
        self,
        factor: T,
    ) -> Result<Blob<T, <D::Base as MathSide>::AfterWrite, G>, TransitionError<Self>>
    where
        D: OwnedSide,
        D::Base: MathSide,
    {
        let count = self.count();
        let (mem, rest) = self.split_data();
        let mem = D::into_owned(mem);
        match write_side("Blob::scale_data", mem, count, Write::Scale(factor)) {
            Ok(m) => Ok(rest.put_data(m)),
            Err((m, e)) => Err(TransitionError::new(rest.put_data(D::from_owned(m)), e)),
        }
    }

    /// Caffe `scale_diff(factor)`. [`scale_diff_in_place`](Self::scale_diff_in_place) is
    /// the `&mut self` form.
    #[allow(clippy::type_complexity)] // the next state is computed by the trait
    pub fn scale_diff(
        self,
        factor: T,
    ) -> Result<Blob<T, D, <G::Base as MathSide>::AfterWrite>, TransitionError<Self>>
    where
        G: OwnedSide,
        G::Base: MathSide,
    {
        let count = self.count();
        let (mem, rest) = self.split_diff();
        let mem = G::into_owned(mem);
        match write_side("Blob::scale_diff", mem, count, Write::Scale(factor)) {
            Ok(m) => Ok(rest.put_diff(m)),
            Err((m, e)) => Err(TransitionError::new(rest.put_diff(G::from_owned(m)), e)),
        }
    }

    /// Plain SGD with L2 weight decay in one fused in-place pass, where the data's head is:
    /// `data -= lr * (diff + weight_decay * data)` (Caffe's `Regularize` with L2,
    /// `ComputeUpdateValue` without momentum, and `Update()`, which are three passes there),
    /// under the same state rules as [`update`](Self::update): the diff current on the
    /// data's side, `Synced` data becoming `HeadAtGpu`. Unlike Caffe it leaves the diff
    /// unchanged. Each element is rounded after each op, as the eager ops would. A failure
    /// hands the blob back. [`sgd_update_in_place`](Self::sgd_update_in_place) is the
    /// `&mut self` form. (With momentum, the history is a second output: take
    /// [`cpu_data_mut_with_diff`](Self::cpu_data_mut_with_diff) or the GPU form and call
    /// [`crate::tensor::expr::update`] on the data and the history.)
    #[allow(clippy::type_complexity)] // the next state is computed by the trait
    pub fn sgd_update(
        self,
        lr: T,
        weight_decay: T,
    ) -> Result<Blob<T, <D::Base as MathSide>::AfterWrite, G>, TransitionError<Self>>
    where
        D: OwnedSide,
        D::Base: UpdateWith<G::Base>,
    {
        let count = self.count();
        let (mem, rest) = self.split_data();
        // `UpdateWith` made the diff readable on the side the data's math runs on.
        let write = Write::Sgd {
            diff: G::raw(&rest.diff),
            lr,
            weight_decay,
        };
        match write_side("Blob::sgd_update", D::into_owned(mem), count, write) {
            Ok(m) => Ok(rest.put_data(m)),
            Err((m, e)) => Err(TransitionError::new(rest.put_data(D::from_owned(m)), e)),
        }
    }

    /// Caffe `Update()`: `data -= diff`, where the data's head is (CPU for `HeadAtCpu`, GPU
    /// for `HeadAtGpu` and `Synced`, which then becomes `HeadAtGpu`). The diff must already be
    /// current on that side ([`UpdateWith`]). A failure hands the blob back.
    /// [`update_in_place`](Self::update_in_place) is the `&mut self` form, for a solver loop
    /// over `&mut` blobs.
    #[allow(clippy::type_complexity)] // the next state is computed by the trait
    pub fn update(
        self,
    ) -> Result<Blob<T, <D::Base as MathSide>::AfterWrite, G>, TransitionError<Self>>
    where
        D: OwnedSide,
        D::Base: UpdateWith<G::Base>,
    {
        let count = self.count();
        let (mem, rest) = self.split_data();
        // `UpdateWith` made the diff readable on the side the data's math runs on.
        let write = Write::SubDiff(G::raw(&rest.diff));
        match write_side("Blob::update", D::into_owned(mem), count, write) {
            Ok(m) => Ok(rest.put_data(m)),
            Err((m, e)) => Err(TransitionError::new(rest.put_data(D::from_owned(m)), e)),
        }
    }

    /// Caffe `Update()` through `&mut self`: `data -= diff` where the data's head is, for data
    /// whose state the write keeps (`HeadAtCpu`, `HeadAtGpu`: [`InPlaceMath`]), so it fits a
    /// solver loop over `&mut` blobs. The diff must be current on the data's side
    /// ([`UpdateWith`]). On error the data is unchanged.
    ///
    /// ```
    /// use typestate_tensor::synced::{Blob, HeadAtCpu};
    ///
    /// # fn main() -> typestate_tensor::Result<()> {
    /// let mut params: Vec<Blob<f32, HeadAtCpu>> = vec![
    ///     Blob::from_vec(&[2], vec![1.0, 2.0])?.into_cpu_diff_mut()?,
    ///     Blob::from_vec(&[3], vec![3.0, 4.0, 5.0])?.into_cpu_diff_mut()?,
    /// ];
    /// for p in &mut params {
    ///     p.cpu_diff_mut().fill(0.5); // the gradient a backward pass would write
    ///     p.update_in_place()?;       // data -= diff
    /// }
    /// assert_eq!(params[0].cpu_data(), &[0.5, 1.5]);
    /// assert_eq!(params[1].cpu_data(), &[2.5, 3.5, 4.5]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn update_in_place(&mut self) -> Result<(), Error>
    where
        D: OwnedSide,
        D::Base: UpdateWith<G::Base> + InPlaceMath,
    {
        let count = self.count();
        let write = Write::SubDiff(G::raw(&self.diff));
        write_in_place(
            "Blob::update_in_place",
            D::owned_mut(&mut self.data),
            count,
            write,
        )
    }

    /// [`sgd_update`](Self::sgd_update) through `&mut self`: `data -= lr * (diff +
    /// weight_decay * data)` in one fused pass where the data's head is, for data whose state
    /// the write keeps ([`InPlaceMath`]). On error the data is unchanged.
    pub fn sgd_update_in_place(&mut self, lr: T, weight_decay: T) -> Result<(), Error>
    where
        D: OwnedSide,
        D::Base: UpdateWith<G::Base> + InPlaceMath,
    {
        let count = self.count();
        let write = Write::Sgd {
            diff: G::raw(&self.diff),
            lr,
            weight_decay,
        };
        write_in_place(
            "Blob::sgd_update_in_place",
            D::owned_mut(&mut self.data),
            count,
            write,
        )
    }

    /// [`scale_data`](Self::scale_data) through `&mut self`, for data whose state the write
    /// keeps ([`InPlaceMath`]: `HeadAtCpu`, `HeadAtGpu`, and `Uninitialized`, where it does
    /// nothing). On error the data is unchanged.
    pub fn scale_data_in_place(&mut self, factor: T) -> Result<(), Error>
    where
        D: OwnedSide,
        D::Base: InPlaceMath,
    {
        let count = self.count();
        let mem = D::owned_mut(&mut self.data);
        write_in_place(
            "Blob::scale_data_in_place",
            mem,
            count,
            Write::Scale(factor),
        )
    }

    /// [`scale_diff`](Self::scale_diff) through `&mut self`, e.g. a solver's learning rate
    /// on the gradient; for a diff whose state the write keeps ([`InPlaceMath`]).
    pub fn scale_diff_in_place(&mut self, factor: T) -> Result<(), Error>
    where
        G: OwnedSide,
        G::Base: InPlaceMath,
    {
        let count = self.count();
        let mem = G::owned_mut(&mut self.diff);
        write_in_place(
            "Blob::scale_diff_in_place",
            mem,
            count,
            Write::Scale(factor),
        )
    }
}
