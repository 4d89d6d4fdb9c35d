//! NCCL collectives on a blob's data and diff (Caffe's multi-GPU solver: each GPU holds a
//! replica, the diffs are all-reduced, every replica calls `Update()`).
//!
//! In place, the type state applies: the side must be current on the GPU
//! ([`CollectiveSide`]: `HeadAtGpu` or `Synced`; anything else does not compile, with a
//! message naming `.into_gpu_diff()` / `.into_gpu_data()`), and afterwards it is the GPU
//! head (`HeadAtGpu`): the collective wrote the GPU copy, so the CPU copy is stale. The
//! collective covers the blob's `count()` elements. A failure hands the blob back in its
//! state, with its data unchanged: everything that can be refused is refused before
//! anything is queued (docs/COLLECTIVES.md), and an NCCL call that fails queues nothing.
//!
//! Out of place (`*_into`), the side is only read: it must be readable on the GPU
//! (`GpuReadable`), and the result goes to a GPU tensor.
//!
//! One rank per process ([`Communicator`]) takes one blob; a [`LocalGroup`] takes one blob
//! per rank, in rank order, and issues all ranks' calls in one NCCL group.

use super::{Blob, BlobSide, OwnedSide};
use crate::collective::launch::{Buffers, Dst};
use crate::collective::verbs;
use crate::collective::{Communicator, LocalGroup, NcclElement, ReduceOp};
use crate::error::Error;
use crate::runtime::Gpu;
use crate::synced::state::{GpuReadable, HeadAtGpu, Settled, Synced};
use crate::synced::synced_memory::SyncedMemory;
use crate::synced::transition_error::TransitionError;
use crate::tensor::AsViewMut;

mod sealed {
    pub trait Sealed {}
}

/// Head states in which a collective may read and write a blob side in place: the GPU copy
/// current and nothing in flight (`HeadAtGpu`, `Synced`). Sealed.
#[diagnostic::on_unimplemented(
    message = "a collective needs this blob side current on the GPU, but it is in state `{Self}`",
    label = "NCCL reads and writes the GPU copy, which is stale or not allocated here",
    note = "call `.into_gpu_diff()` (or `.into_gpu_data()`) first: it copies from the CPU only when the GPU copy is stale; after `async_gpu_push`, `.wait()` first"
)]
pub trait CollectiveSide: GpuReadable + Settled + sealed::Sealed {}
impl sealed::Sealed for HeadAtGpu {}
impl sealed::Sealed for Synced {}
impl CollectiveSide for HeadAtGpu {}
impl CollectiveSide for Synced {}

/// The memories as the GPU head (no copy: each is current on the GPU), then `verb` in place
/// on the first `counts[i]` elements of memory `i` (`verb` is one of [`verbs`] on the front
/// end's ranks, which refuses unequal counts before anything is queued). On error every
/// memory comes back in state `S`, its data unchanged.
#[allow(clippy::type_complexity)] // the error hands the memories back
fn in_place<T: NcclElement, S: CollectiveSide>(
    verb: impl for<'b> FnOnce(Vec<Buffers<'b, T>>) -> Result<(), Error>,
    mems: Vec<SyncedMemory<T, S>>,
    counts: &[usize],
) -> Result<Vec<SyncedMemory<T, HeadAtGpu>>, (Vec<SyncedMemory<T, S>>, Error)> {
    let mut heads = Vec::with_capacity(mems.len());
    let mut rest = mems.into_iter();
    while let Some(mem) = rest.next() {
        match mem.into_gpu_mut() {
            Ok(head) => heads.push(head),
            Err(e) => {
                let (mem, error) = e.into_parts();
                // Taking the GPU head of a memory current on the GPU copied nothing, so the
                // memories taken so far still hold their data in state `S`.
                let mut back: Vec<_> = heads.into_iter().map(SyncedMemory::retype).collect();
                back.push(mem);
                back.extend(rest);
                return Err((back, error));
            }
        }
    }
    let result = {
        let buffers = heads
            .iter_mut()
            .zip(counts)
            .map(|(head, &len)| {
                let (storage, _) = head.raw.device_mut_and_accel();
                Buffers::InPlace(Dst {
                    storage,
                    offset: 0,
                    len,
                })
            })
            .collect();
        verb(buffers)
    };
    match result {
        Ok(()) => Ok(heads),
        // Nothing was queued (see the module docs), so the data is as it was in `S`.
        Err(e) => Err((heads.into_iter().map(SyncedMemory::retype).collect(), e)),
    }
}

/// `verb` in place on one side of each blob (`blobs[i]` on the front end's rank `i`): `split`
/// takes the side out, `put` puts the written side back, `back` the unchanged side on error.
#[allow(clippy::type_complexity)] // the next state and the hand-back
fn blobs_in_place<T, D, G, S, R, B>(
    verb: impl for<'b> FnOnce(Vec<Buffers<'b, T>>) -> Result<(), Error>,
    blobs: Vec<Blob<T, D, G>>,
    split: impl Fn(Blob<T, D, G>) -> (SyncedMemory<T, S>, R),
    put: impl Fn(R, SyncedMemory<T, HeadAtGpu>) -> B,
    back: impl Fn(R, SyncedMemory<T, S>) -> Blob<T, D, G>,
) -> Result<Vec<B>, TransitionError<Vec<Blob<T, D, G>>>>
where
    T: NcclElement,
    D: BlobSide,
    G: BlobSide,
    S: CollectiveSide,
{
    let counts: Vec<usize> = blobs.iter().map(Blob::count).collect();
    let (mems, rests): (Vec<_>, Vec<_>) = blobs.into_iter().map(split).unzip();
    match in_place(verb, mems, &counts) {
        Ok(mems) => Ok(rests
            .into_iter()
            .zip(mems)
            .map(|(r, m)| put(r, m))
            .collect()),
        Err((mems, e)) => Err(TransitionError::new(
            rests
                .into_iter()
                .zip(mems)
                .map(|(r, m)| back(r, m))
                .collect(),
            e,
        )),
    }
}

/// The one blob of a single-rank call, out of the vector [`blobs_in_place`] works on.
fn single<B, E>(result: Result<Vec<B>, TransitionError<Vec<E>>>) -> Result<B, TransitionError<E>> {
    match result {
        Ok(mut v) => match v.pop() {
            Some(b) => Ok(b),
            None => unreachable!("one blob in, one out"),
        },
        Err(e) => {
            let (mut v, error) = e.into_parts();
            match v.pop() {
                Some(b) => Err(TransitionError::new(b, error)),
                None => unreachable!("one blob in, one back"),
            }
        }
    }
}

/// Generates one side's collectives: in place for one rank and for a group (one body per
/// side, `$in_place`, taking the verb), and out of place (`*_into`).
macro_rules! side_collectives {
    ($Side:ident, $split:ident, $put:ident, $view:ident, $name:literal, $in_place:ident,
     [$($pre:tt)*] [$($post:tt)*],
     $all_reduce:ident, $broadcast:ident, $group_all_reduce:ident, $group_broadcast:ident,
     $all_reduce_into:ident, $all_gather_into:ident, $reduce_scatter_into:ident) => {
        impl<T: NcclElement, D: BlobSide, G: BlobSide> Blob<T, D, G> {
            #[doc = concat!("`verb` in place on the ", $name, " of each of `blobs` (blob `i` on the front end's rank `i`), which become the GPU head; on error every blob comes back unchanged.")]
            #[allow(clippy::type_complexity)] // the next state and the hand-back
            fn $in_place(
                blobs: Vec<Self>,
                verb: impl for<'b> FnOnce(Vec<Buffers<'b, T>>) -> Result<(), Error>,
            ) -> Result<Vec<Blob<T, $($pre)* HeadAtGpu $($post)*>>, TransitionError<Vec<Self>>>
            where
                $Side: OwnedSide,
                $Side::Base: CollectiveSide,
            {
                blobs_in_place(
                    verb,
                    blobs,
                    |b| {
                        let (mem, rest) = b.$split();
                        ($Side::into_owned(mem), rest)
                    },
                    |rest, mem| rest.$put(mem),
                    |rest, mem| rest.$put($Side::from_owned(mem)),
                )
            }

            #[doc = concat!("All-reduces the ", $name, " across the ranks of `comm` in place (`ncclAllReduce` over the blob's `count()` elements, on the memory's stream or the communicator's). The ", $name, " must be current on the GPU ([`CollectiveSide`]) and is the GPU head afterwards. A failure hands the blob back unchanged.")]
            #[allow(clippy::type_complexity)] // the next state
            pub fn $all_reduce(
                self,
                comm: &mut Communicator,
                op: ReduceOp,
            ) -> Result<Blob<T, $($pre)* HeadAtGpu $($post)*>, TransitionError<Self>>
            where
                $Side: OwnedSide,
                $Side::Base: CollectiveSide,
            {
                single(Self::$in_place(vec![self], |bufs| {
                    verbs::all_reduce(
                        &*comm,
                        concat!("Blob::", stringify!($all_reduce)),
                        bufs,
                        op,
                    )
                }))
            }

            #[doc = concat!("Copies rank `root`'s ", $name, " into this rank's (`ncclBroadcast`), e.g. to start every replica from rank 0's weights. The ", $name, " must be current on the GPU ([`CollectiveSide`]) and is the GPU head afterwards. A failure hands the blob back unchanged.")]
            #[allow(clippy::type_complexity)] // the next state
            pub fn $broadcast(
                self,
                comm: &mut Communicator,
                root: usize,
            ) -> Result<Blob<T, $($pre)* HeadAtGpu $($post)*>, TransitionError<Self>>
            where
                $Side: OwnedSide,
                $Side::Base: CollectiveSide,
            {
                single(Self::$in_place(vec![self], |bufs| {
                    verbs::broadcast(
                        &*comm,
                        concat!("Blob::", stringify!($broadcast)),
                        bufs,
                        root,
                    )
                }))
            }

            #[doc = concat!("All-reduces the ", $name, " across the ranks of `comm` into `output` (a contiguous GPU tensor of `count()` elements on this rank's GPU). The ", $name, " is only read: it must be readable on the GPU.")]
            pub fn $all_reduce_into(
                &self,
                comm: &mut Communicator,
                op: ReduceOp,
                output: &mut impl AsViewMut<T, Gpu>,
            ) -> Result<(), Error>
            where
                $Side::Base: GpuReadable,
            {
                comm.all_reduce(&self.$view()?, output, op)
            }

            #[doc = concat!("Gathers every rank's ", $name, " into `output` (`world_size × count()` elements, rank `r`'s at chunk `r`). The ", $name, " is only read.")]
            pub fn $all_gather_into(
                &self,
                comm: &mut Communicator,
                output: &mut impl AsViewMut<T, Gpu>,
            ) -> Result<(), Error>
            where
                $Side::Base: GpuReadable,
            {
                comm.all_gather(&self.$view()?, output)
            }

            #[doc = concat!("Reduces every rank's ", $name, " and writes chunk `rank` of the result (`count() / world_size` elements) to `output`. The ", $name, " is only read.")]
            pub fn $reduce_scatter_into(
                &self,
                comm: &mut Communicator,
                op: ReduceOp,
                output: &mut impl AsViewMut<T, Gpu>,
            ) -> Result<(), Error>
            where
                $Side::Base: GpuReadable,
            {
                comm.reduce_scatter(&self.$view()?, output, op)
            }
        }

        impl LocalGroup {
            #[doc = concat!("All-reduces the ", $name, " of one blob per rank (`blobs[r]` on rank `r`'s GPU, all of one count) in place, in one NCCL group: Caffe's multi-GPU gradient exchange for the diff. Each ", $name, " must be current on the GPU ([`CollectiveSide`]) and is the GPU head afterwards. A failure hands every blob back unchanged.")]
            #[allow(clippy::type_complexity)] // the next state and the hand-back
            pub fn $group_all_reduce<T: NcclElement, D: BlobSide, G: BlobSide>(
                &mut self,
                blobs: Vec<Blob<T, D, G>>,
                op: ReduceOp,
            ) -> Result<Vec<Blob<T, $($pre)* HeadAtGpu $($post)*>>, TransitionError<Vec<Blob<T, D, G>>>>
            where
                $Side: OwnedSide,
                $Side::Base: CollectiveSide,
            {
                Blob::$in_place(blobs, |bufs| {
                    verbs::all_reduce(
                        &*self,
                        concat!("LocalGroup::", stringify!($group_all_reduce)),
                        bufs,
                        op,
                    )
                })
            }

            #[doc = concat!("Copies rank `root`'s ", $name, " into every other blob's (`blobs[r]` on rank `r`), in one NCCL group: every replica starts from the same values. Each ", $name, " must be current on the GPU ([`CollectiveSide`]) and is the GPU head afterwards. A failure hands every blob back unchanged.")]
            #[allow(clippy::type_complexity)] // the next state and the hand-back
            pub fn $group_broadcast<T: NcclElement, D: BlobSide, G: BlobSide>(
                &mut self,
                blobs: Vec<Blob<T, D, G>>,
                root: usize,
            ) -> Result<Vec<Blob<T, $($pre)* HeadAtGpu $($post)*>>, TransitionError<Vec<Blob<T, D, G>>>>
            where
                $Side: OwnedSide,
                $Side::Base: CollectiveSide,
            {
                Blob::$in_place(blobs, |bufs| {
                    verbs::broadcast(
                        &*self,
                        concat!("LocalGroup::", stringify!($group_broadcast)),
                        bufs,
                        root,
                    )
                })
            }
        }
    };
}

side_collectives!(
    D, split_data, put_data, gpu_data_view, "data", data_in_place, [] [, G],
    all_reduce_data, broadcast_data, all_reduce_data, broadcast_data,
    all_reduce_data_into, all_gather_data_into, reduce_scatter_data_into
);
side_collectives!(
    G, split_diff, put_diff, gpu_diff_view, "diff", diff_in_place, [D,] [],
    all_reduce_diff, broadcast_diff, all_reduce_diffs, broadcast_diffs,
    all_reduce_diff_into, all_gather_diff_into, reduce_scatter_diff_into
);
