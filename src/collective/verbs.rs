//! The collective verbs, each written once for every front end.
//!
//! A verb is a [`Collective`] (all-reduce, broadcast, all-gather, reduce-scatter): its
//! buffer rules are `launch::place`, its NCCL call `nccl::collective`, and it reaches them
//! through [`launch::run`] only. The front ends ([`LocalGroup`](super::LocalGroup),
//! [`Communicator`](super::Communicator), the blob collectives of `synced::blob`) differ
//! only in which ranks they launch on ([`Ranks`]) and in how they lend buffers
//! ([`PerRank`]): one function per verb here takes both, so each public method is one call.

use super::element::NcclElement;
use super::launch::{self, Buffers, Dst, Src};
use super::nccl::Collective;
use super::op::ReduceOp;
use super::rank::Rank;
use crate::error::{Error, NcclError};
use crate::runtime::Gpu;
use crate::tensor::{AsView, AsViewMut, TensorView, TensorViewMut};

/// A set of this process's ranks a collective launches on.
///
/// Invariant (which `launch::run`'s NCCL calls rely on): [`ranks`](Self::ranks) returns every
/// rank of one communicator that lives in this process, in the order of the buffers a call
/// takes, so one call issues the collective for all of them. Implemented by
/// [`LocalGroup`](super::LocalGroup) (all ranks of its communicator) and
/// [`Communicator`](super::Communicator) (the one rank of its unique id in this process);
/// crate-private, so no other set can be passed.
pub(crate) trait Ranks {
    /// The ranks, in buffer order.
    fn ranks(&self) -> &[Rank];
}

/// One buffer (or input and output) per rank of a [`Ranks`], as a front end lends them.
pub(crate) trait PerRank<T: NcclElement> {
    /// Checks the buffers, then runs `what` on `ranks`, `ranks[i]` taking buffer `i`.
    fn run(self, ranks: &[Rank], op: &'static str, what: Collective) -> Result<(), Error>;
}

/// Tensors (anything that lends a view), one per rank, read and written (NCCL's in-place
/// forms).
pub(crate) struct InPlace<'b, O>(pub(crate) &'b mut [O]);

/// An input and an output tensor per rank.
pub(crate) struct OutOfPlace<'b, I, O>(pub(crate) &'b [I], pub(crate) &'b mut [O]);

impl<T: NcclElement, O: AsViewMut<T, Gpu>> PerRank<T> for InPlace<'_, O> {
    /// Refuses a non-contiguous view ([`NcclError::NotContiguous`]) and all that
    /// [`launch::run`] refuses, before anything is queued.
    fn run(self, ranks: &[Rank], op: &'static str, what: Collective) -> Result<(), Error> {
        let mut views: Vec<TensorViewMut<'_, T, Gpu>> =
            self.0.iter_mut().map(|b| b.view_mut()).collect();
        let buffers = views
            .iter_mut()
            .map(|v| Dst::of_view(op, v).map(Buffers::InPlace))
            .collect::<Result<Vec<_>, _>>()?;
        launch::run(op, what, ranks, buffers)
    }
}

impl<T: NcclElement, I: AsView<T, Gpu>, O: AsViewMut<T, Gpu>> PerRank<T> for OutOfPlace<'_, I, O> {
    /// Refuses as many outputs as inputs ([`NcclError::WrongBufferCount`]), a
    /// non-contiguous view ([`NcclError::NotContiguous`]) and all that [`launch::run`]
    /// refuses, before anything is queued.
    fn run(self, ranks: &[Rank], op: &'static str, what: Collective) -> Result<(), Error> {
        let OutOfPlace(inputs, outputs) = self;
        if inputs.len() != outputs.len() {
            // Name the list whose length is wrong: the outputs when the inputs fit.
            let got = if inputs.len() == ranks.len() {
                outputs.len()
            } else {
                inputs.len()
            };
            return Err(NcclError::WrongBufferCount {
                op,
                got,
                world_size: ranks.len(),
            }
            .into());
        }
        let ins: Vec<TensorView<'_, T, Gpu>> = inputs.iter().map(|b| b.view()).collect();
        let mut outs: Vec<TensorViewMut<'_, T, Gpu>> =
            outputs.iter_mut().map(|b| b.view_mut()).collect();
        let buffers = ins
            .iter()
            .zip(outs.iter_mut())
            .map(|(i, o)| {
                Ok(Buffers::OutOfPlace(
                    Src::of_view(op, i)?,
                    Dst::of_view(op, o)?,
                ))
            })
            .collect::<Result<Vec<_>, NcclError>>()?;
        launch::run(op, what, ranks, buffers)
    }
}

/// Buffers the front end placed itself (a blob's memory), one per rank.
impl<T: NcclElement> PerRank<T> for Vec<Buffers<'_, T>> {
    fn run(self, ranks: &[Rank], op: &'static str, what: Collective) -> Result<(), Error> {
        launch::run(op, what, ranks, self)
    }
}

/// All-reduce (`ncclAllReduce`) with `reduce` over `args`, one buffer (pair) per rank of
/// `ranks`: every rank's output holds the reduction of all ranks' inputs.
pub(crate) fn all_reduce<T: NcclElement>(
    ranks: &impl Ranks,
    op: &'static str,
    bufs: impl PerRank<T>,
    reduce: ReduceOp,
) -> Result<(), Error> {
    bufs.run(ranks.ranks(), op, Collective::AllReduce(reduce))
}

/// Broadcast (`ncclBroadcast`) of rank `root`'s input into every rank's output.
pub(crate) fn broadcast<T: NcclElement>(
    ranks: &impl Ranks,
    op: &'static str,
    bufs: impl PerRank<T>,
    root: usize,
) -> Result<(), Error> {
    bufs.run(ranks.ranks(), op, Collective::Broadcast(root))
}

/// All-gather (`ncclAllGather`): rank `r`'s input into chunk `r` of every rank's output.
pub(crate) fn all_gather<T: NcclElement>(
    ranks: &impl Ranks,
    op: &'static str,
    bufs: impl PerRank<T>,
) -> Result<(), Error> {
    bufs.run(ranks.ranks(), op, Collective::AllGather)
}

/// Reduce-scatter (`ncclReduceScatter`) with `reduce`: chunk `r` of the reduction of all
/// ranks' inputs into rank `r`'s output.
pub(crate) fn reduce_scatter<T: NcclElement>(
    ranks: &impl Ranks,
    op: &'static str,
    bufs: impl PerRank<T>,
    reduce: ReduceOp,
) -> Result<(), Error> {
    bufs.run(ranks.ranks(), op, Collective::ReduceScatter(reduce))
}
