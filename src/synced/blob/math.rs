//! Caffe's blob math: `asum`, `sumsq`, `scale` of data or diff, and `Update()`
//! (`data -= diff`), each run where the side's head is, as Caffe's `switch (head())` does:
//! on the CPU for `HeadAtCpu`, on the GPU for `HeadAtGpu` and `Synced`, and not at all for
//! `Uninitialized` (sums are 0, a scale does nothing). The state after a write is the type
//! Caffe's `mutable_*_data()` leaves: a scale of `Synced` data makes the GPU side the head.
//!
//! `update()` and `scale_*` are one in-place pass each already (the engines' in-place ops:
//! one kernel that reads and writes the side through one layout, no temporary), which is all
//! a fused kernel would do for a single op, so they stay so. [`Blob::sgd_update`] is where
//! fusion pays: Caffe's L2 regularization, learning-rate scaling and `Update()` (three
//! passes, two of them writing the diff) become one fused in-place pass over the data
//! ([`crate::tensor::Tensor::update`]). `asum` / `sumsq` stay reductions. For other fused
//! steps (momentum, Adam), `cpu_data_mut_with_diff` / `gpu_data_mut_with_diff` lend the
//! data writable and the diff readable at once, under the same state bounds (and
//! `*_diff_mut_with_data`, `*_data_diff_mut` the other splits, `views.rs`).

use super::{cpu_prefix, gpu_of, Blob, BlobSide, OwnedSide};
use crate::device::Cpu;
use crate::element::FloatElement;
use crate::engine_gpu::pointwise;
use crate::engine_gpu::reduce::{self as gpu_reduce, Term};
use crate::error::Error;
use crate::layout::Layout;
use crate::ops::table::{MulScalar, Sub};
use crate::runtime::Gpu;
use crate::runtime::{GpuStorage, Stream};
use crate::synced::accel::GpuAccel;
use crate::synced::host::OwnedHost;
use crate::synced::raw::RawSynced;
use crate::synced::state::{
    CpuReadable, GpuReadable, HeadAtCpu, HeadAtGpu, HeadState, Settled, Synced, Uninitialized,
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
pub trait BlobElement: FloatElement + cudarc::driver::DeviceRepr + sealed::Sealed {}
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
impl<G: CpuReadable> UpdateWith<G> for HeadAtCpu {}
impl<G: GpuReadable> UpdateWith<G> for HeadAtGpu {}
impl<G: GpuReadable> UpdateWith<G> for Synced {}

type Raw<T> = RawSynced<T, OwnedHost<T>, GpuAccel>;

/// The memory's stream; a GPU-side state implies the memory is tied to a GPU.
fn stream_of<T: BlobElement>(raw: &Raw<T>) -> &Stream {
    match raw.accel() {
        Some(a) => a.stream(),
        None => unreachable!("a GPU-side state implies a GPU"),
    }
}

/// Caffe's `asum` / `sumsq` of the first `count` elements of a side in state `S`.
fn reduce_side<T: BlobElement, S: MathSide>(
    raw: &Raw<T>,
    count: usize,
    term: Term,
) -> Result<T, Error> {
    let sum = match S::PLACE {
        MathPlace::Nowhere => 0.0,
        MathPlace::Cpu => cpu_reduce(cpu_prefix(raw, count), term)?,
        MathPlace::Gpu => gpu_reduce::reduce(gpu_of(raw), count, term, stream_of(raw))?,
    };
    Ok(T::from_f64(sum))
}

/// The sum in double of `|x|` or `x²`, by the CPU engine.
fn cpu_reduce<T: BlobElement>(x: &[T], term: Term) -> Result<f64, Error> {
    let view = TensorView::<T, Cpu>::new(x, Layout::contiguous(&[x.len()])?, &Cpu)?;
    Ok(match term {
        Term::Abs => view.abs_sum(),
        Term::Square => view.sq_sum(),
    })
}

/// `x` as a writable 1-D CPU tensor view.
fn cpu_view_mut<T: BlobElement>(x: &mut [T]) -> Result<TensorViewMut<'_, T, Cpu>, Error> {
    let layout = Layout::contiguous(&[x.len()])?;
    TensorViewMut::new(x, layout, &Cpu)
}

/// `x[..count] *= factor` on the CPU engine.
fn cpu_scale<T: BlobElement>(x: &mut [T], factor: T) -> Result<(), Error> {
    Cpu.unary_inplace(MulScalar(factor), &mut cpu_view_mut(x)?)
}

/// `y -= x` on the CPU engine.
fn cpu_sub<T: BlobElement>(y: &mut [T], x: &[T]) -> Result<(), Error> {
    let x = TensorView::<T, Cpu>::new(x, Layout::contiguous(&[x.len()])?, &Cpu)?;
    Cpu.binary_inplace(Sub, &mut cpu_view_mut(y)?, &x)
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

/// Runs `cpu` or `gpu` on the first `count` elements of the side where `S`'s math runs and
/// retypes the memory as Caffe's `mutable_*_data()` leaves it. On error the memory comes back
/// in `S`: the engines fail before writing (a shape check, a kernel that could not be
/// compiled or launched), so its data is unchanged.
#[allow(clippy::type_complexity)] // the error hands the memory back in its state
fn write_side<T: BlobElement, S: MathSide>(
    mem: SyncedMemory<T, S>,
    count: usize,
    cpu: impl FnOnce(&mut [T]) -> Result<(), Error>,
    gpu: impl FnOnce(&mut GpuStorage<T>, &Layout, &Stream) -> Result<(), Error>,
) -> Result<SyncedMemory<T, S::AfterWrite>, (SyncedMemory<T, S>, Error)> {
    match S::PLACE {
        // `S` and `S::AfterWrite` are both `Uninitialized` here.
        MathPlace::Nowhere => Ok(mem.retype()),
        MathPlace::Cpu => {
            // `S` is `HeadAtCpu` (the only CPU place), which is also `S::AfterWrite`.
            let mut m = mem.retype::<HeadAtCpu>();
            let x = match m.cpu_mut().get_mut(..count) {
                Some(x) => x,
                None => unreachable!("a side holds at least count elements"),
            };
            match cpu(x) {
                Ok(()) => Ok(m.retype()),
                Err(e) => Err((m.retype(), e)),
            }
        }
        MathPlace::Gpu => {
            let layout = match Layout::contiguous(&[count]) {
                Ok(l) => l,
                Err(e) => return Err((mem, e.into())),
            };
            // Taking the GPU side of `Synced` or `HeadAtGpu` copies nothing.
            let mut m = match mem.into_gpu_mut() {
                Ok(m) => m,
                Err(e) => return Err(e.into_parts()),
            };
            let stream = stream_of(&m.raw).clone();
            match gpu(m.gpu_mut().into_inner(), &layout, &stream) {
                // `S::AfterWrite` is `HeadAtGpu` for both GPU places.
                Ok(()) => Ok(m.retype()),
                Err(e) => Err((m.retype(), e)),
            }
        }
    }
}

impl<T: BlobElement, D: BlobSide, G: BlobSide> Blob<T, D, G> {
    /// Caffe `asum_data()`: the sum of absolute values of the data, computed where the
    /// data's head is (0 when uninitialized).
    pub fn asum_data(&self) -> Result<T, Error>
    where
        D::Base: MathSide,
    {
        reduce_side::<T, D::Base>(D::raw(&self.data), self.count(), Term::Abs)
    }

    /// Caffe `asum_diff()`.
    pub fn asum_diff(&self) -> Result<T, Error>
    where
        G::Base: MathSide,
    {
        reduce_side::<T, G::Base>(G::raw(&self.diff), self.count(), Term::Abs)
    }

    /// Caffe `sumsq_data()`: the sum of squares of the data, computed where its head is.
    pub fn sumsq_data(&self) -> Result<T, Error>
    where
        D::Base: MathSide,
    {
        reduce_side::<T, D::Base>(D::raw(&self.data), self.count(), Term::Square)
    }

    /// Caffe `sumsq_diff()`.
    pub fn sumsq_diff(&self) -> Result<T, Error>
    where
        G::Base: MathSide,
    {
        reduce_side::<T, G::Base>(G::raw(&self.diff), self.count(), Term::Square)
    }

    /// Caffe `scale_data(factor)`: multiplies the data where its head is; `Synced` data is
    /// scaled on the GPU, which becomes the head (no copy). A failure hands the blob back.
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
        let written = write_side(
            D::into_owned(mem),
            count,
            |x| cpu_scale(x, factor),
            |x, layout, s| pointwise::unary_inplace(s, &MulScalar(factor), x, layout),
        );
        match written {
            Ok(m) => Ok(rest.put_data(m)),
            Err((m, e)) => Err(TransitionError::new(rest.put_data(D::from_owned(m)), e)),
        }
    }

    /// Caffe `scale_diff(factor)`.
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
        let written = write_side(
            G::into_owned(mem),
            count,
            |x| cpu_scale(x, factor),
            |x, layout, s| pointwise::unary_inplace(s, &MulScalar(factor), x, layout),
        );
        match written {
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
    /// hands the blob back. (With momentum, the history is a second output: take
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
        let diff = G::raw(&rest.diff);
        let written = write_side(
            D::into_owned(mem),
            count,
            // `UpdateWith` made the diff readable on the side the data's math runs on.
            |y| {
                let layout = Layout::contiguous(&[count])?;
                let g = TensorView::<T, Cpu>::new(cpu_prefix(diff, count), layout, &Cpu)?;
                cpu_view_mut(y)?.update(|w| sgd_step(w, &g, lr, weight_decay))
            },
            |y, layout, _| {
                let gpu = match diff.accel() {
                    Some(a) => a.gpu(),
                    None => unreachable!("a GPU-side state implies a GPU"),
                };
                let g = TensorView::<T, Gpu>::new(gpu_of(diff), layout.clone(), gpu)?;
                TensorViewMut::new(y, layout.clone(), gpu)?
                    .update(|w| sgd_step(w, &g, lr, weight_decay))
            },
        );
        match written {
            Ok(m) => Ok(rest.put_data(m)),
            Err((m, e)) => Err(TransitionError::new(rest.put_data(D::from_owned(m)), e)),
        }
    }

    /// Caffe `Update()`: `data -= diff`, where the data's head is (CPU for `HeadAtCpu`, GPU
    /// for `HeadAtGpu` and `Synced`, which then becomes `HeadAtGpu`). The diff must already be
    /// current on that side ([`UpdateWith`]). A failure hands the blob back.
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
        let diff = G::raw(&rest.diff);
        let written = write_side(
            D::into_owned(mem),
            count,
            // `UpdateWith` made the diff readable on the side the data's math runs on.
            |y| cpu_sub(y, cpu_prefix(diff, count)),
            |y, layout, s| pointwise::binary_inplace(s, &Sub, y, layout, (gpu_of(diff), layout)),
        );
        match written {
            Ok(m) => Ok(rest.put_data(m)),
            Err((m, e)) => Err(TransitionError::new(rest.put_data(D::from_owned(m)), e)),
        }
    }
}
