//! A [`Blob`]'s state transitions, one side at a time: making a side readable or writable on
//! the CPU or the GPU (Caffe's `cpu_data()`, `mutable_gpu_diff()`, ...), its writable
//! borrows, and read-only sharing (`freeze_*`, `with_shared_*`, `thaw_*`: Caffe's
//! `ShareData` / `ShareDiff`).

use super::base::Blob;
use super::side::{BlobSide, Frozen, OwnedSide};
use crate::element::Element;
use crate::error::{Error, GpuError, LayoutError, StateError};
use crate::runtime::{Gpu, GpuStorageMut};
use crate::synced::accel::GpuAccel;
use crate::synced::shared::{SameElement, SharedMemory};
use crate::synced::state::{
    CpuWritable, GpuWritable, HeadAtCpu, HeadAtGpu, HeadState, Settled, ToCpu, ToGpu,
};
use crate::synced::transition_error::TransitionError;

/// Whether `shared` may replace a side of a blob of `count` elements tied to `gpu`
/// (invariants 1 and 3): the same count, and the same GPU or none on both.
fn check_shareable<T: Element, S: HeadState>(
    op: &'static str,
    count: usize,
    gpu: Option<&Gpu>,
    shared: &SharedMemory<T, S>,
) -> Result<(), Error> {
    if shared.len() != count {
        return Err(LayoutError::ShapeMismatch {
            op,
            expected: vec![count],
            got: vec![shared.len()],
        }
        .into());
    }
    match (gpu, shared.raw.accel().map(GpuAccel::gpu)) {
        (Some(a), Some(b)) if a.ordinal() != b.ordinal() => Err(GpuError::DeviceMismatch {
            op,
            lhs: a.ordinal(),
            rhs: b.ordinal(),
        }
        .into()),
        (Some(_), None) | (None, Some(_)) => Err(StateError::NoGpu { op }.into()),
        _ => Ok(()),
    }
}

/// Generates one side's (data's or diff's) transitions, writable borrows and sharing.
///
/// The bounds are on the side's `Base` state behind [`OwnedSide`], so misuse reports the
/// capability or ownership that is missing, with its message, rather than a bare "method
/// not found".
macro_rules! side_methods {
    ($side:ident, $Side:ident, $put:ident, $split:ident,
     $into_cpu:ident, $into_gpu:ident, $into_cpu_mut:ident, $into_gpu_mut:ident,
     $mut_cpu:ident, $mut_gpu:ident, $freeze:ident, $with_shared:ident, $name:literal,
     [$($pre:tt)*] [$($post:tt)*]) => {
        impl<T: Element, D: BlobSide, G: BlobSide> Blob<T, D, G> {
            #[doc = concat!("Makes the ", $name, " readable on the CPU (Caffe `cpu_", $name, "()`; see [`SyncedMemory::into_cpu`](crate::synced::SyncedMemory::into_cpu)).")]
            #[allow(clippy::type_complexity)] // the next state is computed by the trait
            pub fn $into_cpu(
                self,
            ) -> Result<Blob<T, $($pre)* <$Side::Base as ToCpu>::Next $($post)*>, TransitionError<Self>>
            where
                $Side: OwnedSide,
                $Side::Base: ToCpu,
            {
                let (mem, rest) = self.$split();
                match $Side::into_owned(mem).into_cpu() {
                    Ok(m) => Ok(rest.$put(m)),
                    Err(e) => Err(e.map(|m| rest.$put($Side::from_owned(m)))),
                }
            }

            #[doc = concat!("Makes the ", $name, " readable on the GPU (Caffe `gpu_", $name, "()`; see [`SyncedMemory::into_gpu`](crate::synced::SyncedMemory::into_gpu)).")]
            #[allow(clippy::type_complexity)] // the next state is computed by the trait
            pub fn $into_gpu(
                self,
            ) -> Result<Blob<T, $($pre)* <$Side::Base as ToGpu>::Next $($post)*>, TransitionError<Self>>
            where
                $Side: OwnedSide,
                $Side::Base: ToGpu,
            {
                let (mem, rest) = self.$split();
                match $Side::into_owned(mem).into_gpu() {
                    Ok(m) => Ok(rest.$put(m)),
                    Err(e) => Err(e.map(|m| rest.$put($Side::from_owned(m)))),
                }
            }

            #[doc = concat!("Takes the ", $name, " for writing on the CPU (Caffe `mutable_cpu_", $name, "()`).")]
            pub fn $into_cpu_mut(self) -> Result<Blob<T, $($pre)* HeadAtCpu $($post)*>, TransitionError<Self>>
            where
                $Side: OwnedSide,
                $Side::Base: Settled,
            {
                let (mem, rest) = self.$split();
                match $Side::into_owned(mem).into_cpu_mut() {
                    Ok(m) => Ok(rest.$put(m)),
                    Err(e) => Err(e.map(|m| rest.$put($Side::from_owned(m)))),
                }
            }

            #[doc = concat!("Takes the ", $name, " for writing on the GPU (Caffe `mutable_gpu_", $name, "()`).")]
            pub fn $into_gpu_mut(self) -> Result<Blob<T, $($pre)* HeadAtGpu $($post)*>, TransitionError<Self>>
            where
                $Side: OwnedSide,
                $Side::Base: Settled,
            {
                let (mem, rest) = self.$split();
                match $Side::into_owned(mem).into_gpu_mut() {
                    Ok(m) => Ok(rest.$put(m)),
                    Err(e) => Err(e.map(|m| rest.$put($Side::from_owned(m)))),
                }
            }

            #[doc = concat!("The ", $name, " on the CPU, writable (Caffe `mutable_cpu_", $name, "()` once the CPU side is the head): `count()` elements.")]
            pub fn $mut_cpu(&mut self) -> &mut [T]
            where
                $Side: OwnedSide,
                $Side::Base: CpuWritable,
            {
                let count = self.shape.count();
                match $Side::owned_mut(&mut self.$side).cpu_mut().get_mut(..count) {
                    Some(h) => h,
                    None => unreachable!("invariant 1: a side holds at least count elements"),
                }
            }

            #[doc = concat!("The ", $name, " on the GPU, writable (Caffe `mutable_gpu_", $name, "()` once the GPU side is the head); it holds `capacity()` elements.")]
            pub fn $mut_gpu(&mut self) -> GpuStorageMut<'_, T>
            where
                $Side: OwnedSide,
                $Side::Base: GpuWritable,
            {
                $Side::owned_mut(&mut self.$side).gpu_mut()
            }

            #[doc = concat!("Freezes the ", $name, " for read-only sharing with other blobs (the first half of Caffe's `Share", $name, "`); `shared_", $name, "()` then hands out the shared memory.")]
            pub fn $freeze(self) -> Blob<T, $($pre)* Frozen<$Side::Base> $($post)*>
            where
                $Side: OwnedSide,
                $Side::Base: Settled,
            {
                let (mem, rest) = self.$split();
                rest.$put($Side::into_owned(mem).freeze())
            }

            #[doc = concat!("Replaces the ", $name, " with `shared` (Caffe `Share", $name, "`, which `CHECK`s equal counts): the old memory is dropped. A count mismatch ([`LayoutError::ShapeMismatch`]), memories on two GPUs ([`GpuError::DeviceMismatch`]) or on a GPU and none ([`StateError::NoGpu`]) hand both back. The memory must hold the blob's element type ([`SameElement`]: sharing memory of another type does not compile).")]
            #[allow(clippy::type_complexity, clippy::result_large_err)] // hands back both inputs
            pub fn $with_shared<U: SameElement<T>, S: HeadState>(
                self,
                shared: SharedMemory<U, S>,
            ) -> Result<Blob<T, $($pre)* Frozen<S> $($post)*>, TransitionError<(Self, SharedMemory<T, S>)>> {
                const OP: &str = concat!("Blob::", stringify!($with_shared));
                let shared = U::same(shared);
                if let Err(error) = check_shareable(OP, self.count(), self.gpu_device(), &shared) {
                    return Err(TransitionError::new((self, shared), error));
                }
                let (_, rest) = self.$split();
                Ok(rest.$put(shared))
            }
        }
    };
}

side_methods!(
    data, D, put_data, split_data, into_cpu_data, into_gpu_data, into_cpu_data_mut,
    into_gpu_data_mut, cpu_data_mut, gpu_data_mut, freeze_data, with_shared_data,
    "data", [] [, G]
);
side_methods!(
    diff, G, put_diff, split_diff, into_cpu_diff, into_gpu_diff, into_cpu_diff_mut,
    into_gpu_diff_mut, cpu_diff_mut, gpu_diff_mut, freeze_diff, with_shared_diff,
    "diff", [D,] []
);

impl<T: Element, S: HeadState, G: BlobSide> Blob<T, Frozen<S>, G> {
    /// A handle on the frozen data, to share with other blobs
    /// ([`with_shared_data`](Self::with_shared_data)).
    pub fn shared_data(&self) -> SharedMemory<T, S> {
        self.data.clone()
    }

    /// Gives the data back in its head state once no other blob shares it; otherwise hands
    /// the blob back with [`StateError::StillShared`].
    pub fn thaw_data(self) -> Result<Blob<T, S, G>, TransitionError<Self>> {
        let (mem, rest) = self.split_data();
        match mem.thaw() {
            Ok(m) => Ok(rest.put_data(m)),
            Err(e) => Err(e.map(|m| rest.put_data(m))),
        }
    }
}

impl<T: Element, D: BlobSide, S: HeadState> Blob<T, D, Frozen<S>> {
    /// A handle on the frozen diff, to share with other blobs
    /// ([`with_shared_diff`](Self::with_shared_diff)).
    pub fn shared_diff(&self) -> SharedMemory<T, S> {
        self.diff.clone()
    }

    /// Gives the diff back in its head state once no other blob shares it; otherwise hands
    /// the blob back with [`StateError::StillShared`].
    pub fn thaw_diff(self) -> Result<Blob<T, D, S>, TransitionError<Self>> {
        let (mem, rest) = self.split_diff();
        match mem.thaw() {
            Ok(m) => Ok(rest.put_diff(m)),
            Err(e) => Err(e.map(|m| rest.put_diff(m))),
        }
    }
}
