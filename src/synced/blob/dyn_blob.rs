//! [`DynBlob`]: a blob whose sides' states are known only at run time, for collections of
//! blobs in different states (a net's).
//!
//! It offers Caffe's own run-time `Blob` API (`cpu_data()`, `mutable_gpu_diff()`,
//! `update()`, `scale_data()`, `asum_diff()`, ...), which makes a side current or the head
//! as Caffe does (copying when stale) and returns errors instead of `CHECK` failures, and
//! converts back to a typed [`Blob`] with [`DynBlob::try_into_blob`].

use super::base::{cpu_prefix, gpu_of, Blob, Raw};
use super::math::{place_of, reduce_at, write_raw, BlobElement, MathPlace, Write};
use super::shape::BlobShape;
use super::side::{AnySide, BlobSide, SideState};
use crate::element::Element;
use crate::error::{Error, StateError};
use crate::ops::reduce::{Reduction, SumAbs, SumSq};
use crate::runtime::{GpuStorage, GpuStorageMut};
use crate::synced::state::Head;
use crate::synced::transition_error::TransitionError;
use crate::synced::TransferStats;

impl<T: Element, D: BlobSide, G: BlobSide> Blob<T, D, G> {
    /// Erases both sides' states for a collection of blobs (a net's).
    pub fn erase(self) -> DynBlob<T> {
        DynBlob::from_sides(
            self.shape,
            (D::HEAD, D::into_any(self.data)),
            (G::HEAD, G::into_any(self.diff)),
        )
    }
}

/// A [`Blob`] with its sides' states stored as values (stm32's `DynamicPin`, for blobs).
///
/// For collections of blobs in different states: a net's parameters, say. Its methods are
/// Caffe's run-time `Blob` API, checked at run time: a read makes the side current (copying
/// when stale), a write makes it the head, math runs where the head is, and a side that is
/// shared read-only ([`Frozen`](super::Frozen)) refuses writes and state changes with
/// [`StateError::FrozenSide`]. [`try_into_blob`](Self::try_into_blob) converts back to the
/// typed [`Blob`], whose methods these are not.
///
/// ```
/// use typestate_tensor::synced::{Blob, DynBlob, HeadAtCpu, Uninitialized};
///
/// # fn main() -> typestate_tensor::Result<()> {
/// // Parameters in different states in one collection: a solver step over all of them.
/// let mut params: Vec<DynBlob<f32>> = vec![
///     Blob::from_vec(&[2], vec![1.0f32, 2.0])?.into_cpu_diff_mut()?.erase(),
///     Blob::<f32>::new(&[3])?.into_cpu_data_mut()?.erase(),
/// ];
/// for p in &mut params {
///     p.mutable_cpu_diff()?.fill(0.5); // the gradient a backward pass would write
///     p.update()?;                     // Caffe's Update(): data -= diff, where the data is
/// }
/// assert_eq!(params[0].cpu_data()?, &[0.5, 1.5]);
/// assert_eq!(params[1].cpu_data()?, &[-0.5, -0.5, -0.5]);
/// let typed: Blob<f32, HeadAtCpu> = params.remove(0).try_into_blob()?;
/// assert_eq!(typed.cpu_diff(), &[0.5, 0.5]);
/// # let _ = Uninitialized;
/// # Ok(())
/// # }
/// ```
///
/// Invariants: each stored [`SideState`] is the truth about its memory, as the type
/// parameters of a [`Blob`] would be; the memories meet [`Blob`]'s invariants 1 and 3.
pub struct DynBlob<T: Element> {
    // Boxed: a failed conversion hands the blob back inside an error that stays small.
    inner: Box<DynInner<T>>,
}

struct DynInner<T: Element> {
    shape: BlobShape,
    data: (SideState, AnySide<T>),
    diff: (SideState, AnySide<T>),
}

impl<T: Element> DynBlob<T> {
    pub(super) fn from_sides(
        shape: BlobShape,
        data: (Head, AnySide<T>),
        diff: (Head, AnySide<T>),
    ) -> Self {
        let state = |(head, side): (Head, AnySide<T>)| {
            let frozen = matches!(side, AnySide::Shared(_));
            (SideState { head, frozen }, side)
        };
        DynBlob {
            inner: Box::new(DynInner {
                shape,
                data: state(data),
                diff: state(diff),
            }),
        }
    }

    /// The shape.
    pub fn shape(&self) -> &BlobShape {
        &self.inner.shape
    }

    /// Number of elements.
    pub fn count(&self) -> usize {
        self.inner.shape.count()
    }

    /// The data side's state.
    pub fn data_state(&self) -> SideState {
        self.inner.data.0
    }

    /// The diff side's state.
    pub fn diff_state(&self) -> SideState {
        self.inner.diff.0
    }

    /// Copies and allocations made by the data memory.
    pub fn data_stats(&self) -> TransferStats {
        self.inner.data.1.raw().stats()
    }

    /// Copies and allocations made by the diff memory.
    pub fn diff_stats(&self) -> TransferStats {
        self.inner.diff.1.raw().stats()
    }

    /// Converts back to the typed `Blob<T, D, G>`, or hands the value back with
    /// [`StateError::WrongState`] naming the first side that does not match.
    pub fn try_into_blob<D: BlobSide, G: BlobSide>(
        self,
    ) -> Result<Blob<T, D, G>, TransitionError<Self>> {
        for (want, have) in [
            (SideState::of::<D>(), self.inner.data.0),
            (SideState::of::<G>(), self.inner.diff.0),
        ] {
            if want != have {
                let error = StateError::WrongState {
                    expected: want.name(),
                    actual: have.name(),
                };
                return Err(TransitionError::new(self, error));
            }
        }
        let DynInner { shape, data, diff } = *self.inner;
        // The states matched, so the ownerships (owned vs shared) match too.
        match (D::from_any(data.1), G::from_any(diff.1)) {
            (Ok(data), Ok(diff)) => Ok(Blob { shape, data, diff }),
            _ => unreachable!("the frozen flags were compared above"),
        }
    }
}

/// One side of a [`DynBlob`]: its state and its memory.
type Side<T> = (SideState, AnySide<T>);

/// Runs a machine step on `side`: an owned side steps and records its new head; a shared
/// one cannot change, so it passes only when `frozen_ok` says its head needs no step.
fn step_side<T: Element>(
    side: &mut Side<T>,
    op: &'static str,
    name: &'static str,
    frozen_ok: fn(Head) -> bool,
    f: impl FnOnce(&mut Raw<T>, Head) -> Result<Head, Error>,
) -> Result<(), Error> {
    match &mut side.1 {
        AnySide::Owned(raw) => {
            side.0.head = f(raw, side.0.head)?;
            Ok(())
        }
        AnySide::Shared(_) if frozen_ok(side.0.head) => Ok(()),
        AnySide::Shared(_) => Err(frozen(op, name, side.0)),
    }
}

fn frozen(op: &'static str, side: &'static str, state: SideState) -> Error {
    StateError::FrozenSide {
        op,
        side,
        state: state.name(),
    }
    .into()
}

/// The side's memory for writing, if it is owned.
fn owned_mut<'s, T: Element>(
    side: &'s mut Side<T>,
    op: &'static str,
    name: &'static str,
) -> Result<&'s mut Raw<T>, Error> {
    match &mut side.1 {
        AnySide::Owned(raw) => Ok(raw),
        AnySide::Shared(_) => Err(frozen(op, name, side.0)),
    }
}

/// Caffe's `cpu_data()` / `cpu_diff()` on one side: the first `count` elements, current.
fn cpu_read<'s, T: Element>(
    side: &'s mut Side<T>,
    count: usize,
    op: &'static str,
    name: &'static str,
) -> Result<&'s [T], Error> {
    step_side(side, op, name, Head::cpu_readable, Raw::ensure_cpu_readable)?;
    Ok(cpu_prefix(side.1.raw(), count))
}

/// Caffe's `mutable_cpu_data()` / `mutable_cpu_diff()` on one side.
fn cpu_write<'s, T: Element>(
    side: &'s mut Side<T>,
    count: usize,
    op: &'static str,
    name: &'static str,
) -> Result<&'s mut [T], Error> {
    step_side(side, op, name, |_| false, Raw::make_cpu_head)?;
    let raw = owned_mut(side, op, name)?;
    match raw.host_mut().and_then(|h| h.get_mut(..count)) {
        Some(h) => Ok(h),
        None => unreachable!("blob invariants 1 and 2: a HeadAtCpu side holds count elements"),
    }
}

/// Caffe's `gpu_data()` / `gpu_diff()` on one side.
fn gpu_read<'s, T: Element>(
    side: &'s mut Side<T>,
    op: &'static str,
    name: &'static str,
) -> Result<&'s GpuStorage<T>, Error> {
    step_side(side, op, name, Head::gpu_readable, Raw::ensure_gpu_readable)?;
    Ok(gpu_of(side.1.raw()))
}

/// Caffe's `mutable_gpu_data()` / `mutable_gpu_diff()` on one side.
fn gpu_write<'s, T: Element>(
    side: &'s mut Side<T>,
    op: &'static str,
    name: &'static str,
) -> Result<GpuStorageMut<'s, T>, Error> {
    step_side(side, op, name, |_| false, Raw::make_gpu_head)?;
    let (d, accel) = owned_mut(side, op, name)?.device_mut_and_accel();
    Ok(GpuStorageMut::new(d, accel.gpu()))
}

/// Caffe's `asum_*` / `sumsq_*` on one side, where its head is.
fn reduce_side<T: BlobElement, R: Reduction<T, Output = T>>(
    side: &Side<T>,
    count: usize,
    op: &'static str,
    reduction: R,
) -> Result<T, Error> {
    let place = place_of(op, side.0.head)?;
    reduce_at(side.1.raw(), place, count, reduction)
}

/// Caffe's `scale_*` on one side: `x *= factor` where its head is.
fn scale_side<T: BlobElement>(
    side: &mut Side<T>,
    count: usize,
    op: &'static str,
    name: &'static str,
    factor: T,
) -> Result<(), Error> {
    let head = side.0.head;
    let next = write_raw(
        op,
        owned_mut(side, op, name)?,
        head,
        count,
        Write::Scale(factor),
    )?;
    side.0.head = next;
    Ok(())
}

macro_rules! side_accessors {
    ($side:ident, $name:literal, $cpu:ident, $mut_cpu:ident, $gpu:ident, $mut_gpu:ident,
     $asum:ident, $sumsq:ident, $scale:ident) => {
        #[doc = concat!("Caffe `", stringify!($cpu), "()`: makes the ", $name, " current on the CPU (allocating it zero-filled, or copying from the GPU when stale) and borrows its `count()` elements. A frozen ", $name, " must already be current there.")]
        pub fn $cpu(&mut self) -> Result<&[T], Error> {
            let count = self.count();
            cpu_read(&mut self.inner.$side, count, concat!("DynBlob::", stringify!($cpu)), $name)
        }

        #[doc = concat!("Caffe `", stringify!($mut_cpu), "()`: syncs the ", $name, " to the CPU if stale, makes the CPU side the head, and lends its `count()` elements for writing. A frozen ", $name, " is refused ([`StateError::FrozenSide`]).")]
        pub fn $mut_cpu(&mut self) -> Result<&mut [T], Error> {
            let count = self.count();
            cpu_write(&mut self.inner.$side, count, concat!("DynBlob::", stringify!($mut_cpu)), $name)
        }

        #[doc = concat!("Caffe `", stringify!($gpu), "()`: makes the ", $name, " current on the GPU (copying from the CPU when stale) and borrows its storage (`capacity()` elements; the blob's are the first `count()`). Needs a blob made with a GPU.")]
        pub fn $gpu(&mut self) -> Result<&GpuStorage<T>, Error> {
            gpu_read(&mut self.inner.$side, concat!("DynBlob::", stringify!($gpu)), $name)
        }

        #[doc = concat!("Caffe `", stringify!($mut_gpu), "()`: syncs the ", $name, " to the GPU if stale, makes the GPU side the head, and lends it for writing.")]
        pub fn $mut_gpu(&mut self) -> Result<GpuStorageMut<'_, T>, Error> {
            gpu_write(&mut self.inner.$side, concat!("DynBlob::", stringify!($mut_gpu)), $name)
        }

        #[doc = concat!("Caffe `", stringify!($asum), "()`: the sum of absolute values of the ", $name, ", computed where its head is (0 when uninitialized).")]
        pub fn $asum(&self) -> Result<T, Error>
        where
            T: BlobElement,
        {
            reduce_side(&self.inner.$side, self.count(), concat!("DynBlob::", stringify!($asum)), SumAbs)
        }

        #[doc = concat!("Caffe `", stringify!($sumsq), "()`: the sum of squares of the ", $name, ", computed where its head is.")]
        pub fn $sumsq(&self) -> Result<T, Error>
        where
            T: BlobElement,
        {
            reduce_side(&self.inner.$side, self.count(), concat!("DynBlob::", stringify!($sumsq)), SumSq)
        }

        #[doc = concat!("Caffe `", stringify!($scale), "(factor)`: multiplies the ", $name, " where its head is; `Synced` is scaled on the GPU, which becomes the head (no copy). On error the ", $name, " is unchanged.")]
        pub fn $scale(&mut self, factor: T) -> Result<(), Error>
        where
            T: BlobElement,
        {
            let count = self.count();
            scale_side(&mut self.inner.$side, count, concat!("DynBlob::", stringify!($scale)), $name, factor)
        }
    };
}

impl<T: Element> DynBlob<T> {
    side_accessors!(
        data,
        "data",
        cpu_data,
        mutable_cpu_data,
        gpu_data,
        mutable_gpu_data,
        asum_data,
        sumsq_data,
        scale_data
    );
    side_accessors!(
        diff,
        "diff",
        cpu_diff,
        mutable_cpu_diff,
        gpu_diff,
        mutable_gpu_diff,
        asum_diff,
        sumsq_diff,
        scale_diff
    );

    /// Caffe `Update()`: `data -= diff` where the data's head is (CPU for `HeadAtCpu`, GPU
    /// for `HeadAtGpu` and `Synced`, which becomes `HeadAtGpu`), making the diff current
    /// there first as Caffe's `cpu_diff()` / `gpu_diff()` would (a copy when it is stale:
    /// the typed [`Blob::update`] makes that copy the caller's explicit call). Uninitialized
    /// data is [`StateError::NotInitialized`]; frozen data, or a frozen diff that is stale
    /// there, is [`StateError::FrozenSide`]. On error the data is unchanged.
    pub fn update(&mut self) -> Result<(), Error>
    where
        T: BlobElement,
    {
        self.write_data_from_diff("DynBlob::update", |diff| Write::SubDiff(diff))
    }

    /// [`Blob::sgd_update`] at run time: `data -= lr * (diff + weight_decay * data)` in one
    /// fused pass where the data's head is, under [`update`](Self::update)'s rules.
    pub fn sgd_update(&mut self, lr: T, weight_decay: T) -> Result<(), Error>
    where
        T: BlobElement,
    {
        self.write_data_from_diff("DynBlob::sgd_update", |diff| Write::Sgd {
            diff,
            lr,
            weight_decay,
        })
    }

    /// Writes the data from the diff where the data's head is, after making the diff
    /// current there.
    fn write_data_from_diff(
        &mut self,
        op: &'static str,
        write: impl for<'d> FnOnce(&'d Raw<T>) -> Write<'d, T>,
    ) -> Result<(), Error>
    where
        T: BlobElement,
    {
        let count = self.count();
        let inner = &mut *self.inner;
        let head = inner.data.0.head;
        let place = place_of(op, head)?;
        if matches!(inner.data.1, AnySide::Shared(_)) {
            return Err(frozen(op, "data", inner.data.0));
        }
        match place {
            MathPlace::Nowhere => {
                return Err(StateError::NotInitialized { op, side: "data" }.into());
            }
            MathPlace::Cpu => step_side(
                &mut inner.diff,
                op,
                "diff",
                Head::cpu_readable,
                Raw::ensure_cpu_readable,
            )?,
            MathPlace::Gpu => step_side(
                &mut inner.diff,
                op,
                "diff",
                Head::gpu_readable,
                Raw::ensure_gpu_readable,
            )?,
        }
        let data = owned_mut(&mut inner.data, op, "data")?;
        let next = write_raw(op, data, head, count, write(inner.diff.1.raw()))?;
        inner.data.0.head = next;
        Ok(())
    }
}

/// Methods of the typed [`Blob`] that a [`DynBlob`] does not have: never implemented. A
/// `DynBlob` method of the same name requires it, so calling one is a compile error that
/// names [`DynBlob::try_into_blob`] instead of "no method named ...".
#[diagnostic::on_unimplemented(
    message = "`{Self}` keeps its states at run time: this method belongs to the typed `Blob`",
    label = "a method of `Blob<T, D, G>`, whose states are types",
    note = "convert it first: `.try_into_blob::<D, G>()?` (e.g. `::<HeadAtCpu, HeadAtCpu>`) gives the typed `Blob`, or hands the blob back if its states differ; or use the run-time forms `DynBlob` has: `cpu_data()`, `mutable_cpu_data()`, `gpu_diff()`, `update()`, `scale_data(f)`, ..."
)]
pub trait TypedBlobOnly: sealed::Sealed {
    /// Never called: no type implements this trait.
    fn absurd<R>(&self) -> R;
}

mod sealed {
    pub trait Sealed {}
}

/// `DynBlob` methods named as the typed `Blob`'s that have no run-time form: each requires
/// [`TypedBlobOnly`], which `DynBlob` never implements, so a call fails to compile with a
/// message naming `try_into_blob`. Hidden: they can never be called.
macro_rules! typed_only {
    ($($name:ident($($arg:ident),*);)*) => {
        #[doc(hidden)]
        impl<T: Element> DynBlob<T> {
            $(
                #[doc(hidden)]
                pub fn $name<R>(&self, $($arg: impl Sized),*) -> R
                where
                    Self: TypedBlobOnly,
                {
                    $(let _ = $arg;)*
                    self.absurd()
                }
            )*
        }
    };
}

typed_only! {
    into_cpu_data(); into_gpu_data(); into_cpu_data_mut(); into_gpu_data_mut();
    into_cpu_diff(); into_gpu_diff(); into_cpu_diff_mut(); into_gpu_diff_mut();
    cpu_data_mut(); gpu_data_mut(); cpu_diff_mut(); gpu_diff_mut();
    cpu_data_view(); gpu_data_view(); cpu_diff_view(); gpu_diff_view();
    cpu_data_view_mut(); gpu_data_view_mut(); cpu_diff_view_mut(); gpu_diff_view_mut();
    cpu_data_mut_with_diff(); gpu_data_mut_with_diff(); cpu_diff_mut_with_data();
    gpu_diff_mut_with_data(); cpu_data_diff_mut(); gpu_data_diff_mut();
    update_in_place(); sgd_update_in_place(lr, weight_decay);
    scale_data_in_place(factor); scale_diff_in_place(factor);
    freeze_data(); freeze_diff(); shared_data(); shared_diff(); thaw_data(); thaw_diff();
    reshape(shape); reshape_in_place(shape); erase();
    into_gpu_of(gpu); into_gpu_of_via(gpu, path);
    all_reduce_data(comm, op); all_reduce_diff(comm, op);
    broadcast_data(comm, root); broadcast_diff(comm, root);
    all_reduce_data_into(comm, op, output); all_reduce_diff_into(comm, op, output);
    all_gather_data_into(comm, output); all_gather_diff_into(comm, output);
    reduce_scatter_data_into(comm, op, output); reduce_scatter_diff_into(comm, op, output);
}

impl<T: Element, D: BlobSide, G: BlobSide> From<Blob<T, D, G>> for DynBlob<T> {
    fn from(b: Blob<T, D, G>) -> Self {
        b.erase()
    }
}

impl<T: Element> std::fmt::Debug for DynBlob<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynBlob")
            .field("dtype", &T::DTYPE)
            .field("shape", &self.inner.shape.to_string())
            .field("data", &format_args!("{}", self.inner.data.0.name()))
            .field("diff", &format_args!("{}", self.inner.diff.0.name()))
            .finish()
    }
}

static_assertions::assert_impl_all!(DynBlob<f32>: Send, Sync);
