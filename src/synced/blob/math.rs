//! Caffe's blob math: `asum`, `sumsq`, `scale` of data or diff, and `Update()`
//! (`data -= diff`), each run where the side's head is, as Caffe's `switch (head())` does:
//! on the CPU for `HeadAtCpu`, on the GPU for `HeadAtGpu` and `Synced`, and not at all for
//! `Uninitialized` (sums are 0, a scale does nothing). The state after a write is the type
//! Caffe's `mutable_*_data()` leaves: a scale of `Synced` data makes the GPU side the head.

use super::gpu_math::{self, Term};
use super::{cpu_prefix, gpu_of, Blob, BlobSide, OwnedSide};
use crate::element::{Element, FloatElement};
use crate::error::Error;
use crate::synced::accel::GpuAccel;
use crate::synced::host::OwnedHost;
use crate::synced::raw::RawSynced;
use crate::synced::state::{
    CpuReadable, GpuReadable, HeadAtCpu, HeadAtGpu, HeadState, Settled, Synced, Uninitialized,
};
use crate::synced::synced_memory::SyncedMemory;
use crate::synced::transition_error::TransitionError;

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
fn stream_of<T: BlobElement>(raw: &Raw<T>) -> &crate::gpu::Stream {
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
        MathPlace::Cpu => cpu_reduce(cpu_prefix(raw, count), term),
        MathPlace::Gpu => gpu_math::reduce(gpu_of(raw), count, term, stream_of(raw))?,
    };
    Ok(T::from_f64(sum))
}

/// The sum in double of `|x|` or `x²` (the CPU engine's reductions accumulate the same way).
fn cpu_reduce<T: BlobElement>(x: &[T], term: Term) -> f64 {
    x.iter()
        .map(|&v| Element::to_f64(v))
        .map(|v| match term {
            Term::Abs => v.abs(),
            Term::Square => v * v,
        })
        .sum()
}

/// Runs `write` on the side where `S`'s math runs and retypes the memory as Caffe's
/// `mutable_*_data()` leaves it. On error the memory comes back in `S`: a failed launch ran
/// nothing, so its data is unchanged.
#[allow(clippy::type_complexity)] // the error hands the memory back in its state
fn write_side<T: BlobElement, S: MathSide>(
    mem: SyncedMemory<T, S>,
    count: usize,
    cpu: impl FnOnce(&mut [T]),
    gpu: impl FnOnce(&mut crate::gpu::GpuStorage<T>, &crate::gpu::Stream) -> Result<(), Error>,
) -> Result<SyncedMemory<T, S::AfterWrite>, (SyncedMemory<T, S>, Error)> {
    match S::PLACE {
        // `S` and `S::AfterWrite` are both `Uninitialized` here.
        MathPlace::Nowhere => Ok(mem.retype()),
        MathPlace::Cpu => {
            // `S` is `HeadAtCpu` (the only CPU place), which is also `S::AfterWrite`.
            let mut m = mem.retype::<HeadAtCpu>();
            match m.cpu_mut().get_mut(..count) {
                Some(x) => cpu(x),
                None => unreachable!("a side holds at least count elements"),
            }
            Ok(m.retype())
        }
        MathPlace::Gpu => {
            let mut m = match mem.into_gpu_mut() {
                Ok(m) => m,
                Err(e) => return Err(e.into_parts()),
            };
            let stream = stream_of(&m.raw).clone();
            match gpu(m.gpu_mut(), &stream) {
                // `S::AfterWrite` is `HeadAtGpu` for both GPU places.
                Ok(()) => Ok(m.retype()),
                // The write did not run: the memory is as it was in `S` (taking the GPU side
                // of `Synced` or `HeadAtGpu` copies nothing).
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
            |x| x.iter_mut().for_each(|v| *v = *v * factor),
            |x, s| gpu_math::scale(x, count, factor, s),
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
            |x| x.iter_mut().for_each(|v| *v = *v * factor),
            |x, s| gpu_math::scale(x, count, factor, s),
        );
        match written {
            Ok(m) => Ok(rest.put_diff(m)),
            Err((m, e)) => Err(TransitionError::new(rest.put_diff(G::from_owned(m)), e)),
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
            |y| {
                let x = cpu_prefix(diff, count);
                y.iter_mut().zip(x).for_each(|(y, &x)| *y = *y - x);
            },
            |y, s| gpu_math::sub_assign(y, gpu_of(diff), count, s),
        );
        match written {
            Ok(m) => Ok(rest.put_data(m)),
            Err((m, e)) => Err(TransitionError::new(rest.put_data(D::from_owned(m)), e)),
        }
    }
}
