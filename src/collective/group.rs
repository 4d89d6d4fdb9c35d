//! [`LocalGroup`]: every rank of a communicator in this process, one per local GPU
//! (`ncclCommInitAll`), each collective issued for all ranks in one NCCL group.

use super::element::NcclElement;
use super::nccl;
use super::op::ReduceOp;
use super::rank::Rank;
use super::verbs::{self, InPlace, OutOfPlace, Ranks};
use crate::error::{Error, NcclError};
use crate::runtime::{Gpu, Stream};
use crate::tensor::{AsView, AsViewMut};

/// All ranks of an NCCL communicator, driven by this process: rank `r` on the `r`-th GPU
/// given to [`new`](Self::new) (`ncclCommInitAll`). The one-process start: one thread
/// drives every local GPU.
///
/// Each collective takes one buffer per rank, in rank order, checks them all (each on its
/// rank's GPU, contiguous, the same count on every rank, counts that fit the collective)
/// before anything is queued, and issues the NCCL calls of all ranks in one group
/// (`ncclGroupStart` / `ncclGroupEnd`), as NCCL requires when one thread drives several
/// devices, under THC's free lock (docs/COLLECTIVES.md). Buffers are anything that lends a
/// view: `Vec<Tensor<T, Gpu>>`, `[TensorViewMut<T, Gpu>; 2]`, ... Streams and ordering are
/// as for [`Communicator`](super::Communicator): each rank's collective runs on the stream
/// of the memory it writes, or on the rank's stream from
/// [`set_streams`](Self::set_streams).
///
/// ```no_run
/// use typestate_tensor::collective::{LocalGroup, ReduceOp};
/// use typestate_tensor::gpu::Gpu;
/// use typestate_tensor::tensor::Tensor;
///
/// # fn main() -> typestate_tensor::Result<()> {
/// let gpus = [Gpu::new(0)?, Gpu::new(1)?];
/// let mut group = LocalGroup::new(&gpus)?;
/// let mut grads = vec![
///     Tensor::full_on(&[1024], 1.0f32, &gpus[0])?,
///     Tensor::full_on(&[1024], 3.0f32, &gpus[1])?,
/// ];
/// group.all_reduce_in_place(&mut grads, ReduceOp::Avg)?;
/// assert_eq!(grads[1].to_cpu()?.to_vec()[0], 2.0);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LocalGroup {
    ranks: Vec<Rank>,
}

impl LocalGroup {
    /// One rank per GPU of `gpus`, rank `r` on `gpus[r]` (`ncclCommInitAll`).
    ///
    /// Errors: [`NcclError::BadDevices`] for an empty list or a GPU given twice,
    /// [`NcclError::NoLibrary`] without libnccl, [`NcclError::Call`] when NCCL fails.
    pub fn new(gpus: &[Gpu]) -> Result<LocalGroup, Error> {
        const OP: &str = "LocalGroup::new";
        if gpus.is_empty() {
            return Err(NcclError::BadDevices {
                op: OP,
                reason: "no GPU given".to_owned(),
            }
            .into());
        }
        let ordinals: Vec<usize> = gpus.iter().map(Gpu::ordinal).collect();
        for (i, o) in ordinals.iter().enumerate() {
            if ordinals[..i].contains(o) {
                return Err(NcclError::BadDevices {
                    op: OP,
                    reason: format!("GPU {o} is given twice; a communicator has one rank per GPU"),
                }
                .into());
            }
        }
        let raws = nccl::comm_init_all(&ordinals)?;
        let n = gpus.len();
        let mut ranks = Vec::with_capacity(n);
        let mut raws = raws.into_iter();
        for (r, gpu) in gpus.iter().enumerate() {
            let Some(raw) = raws.next() else { break };
            match Rank::new("ncclCommInitAll", raw, gpu, r, n, None) {
                Ok(rank) => ranks.push(rank),
                Err(e) => {
                    for raw in raws {
                        let _ = nccl::comm_destroy(raw);
                    }
                    return Err(e);
                }
            }
        }
        Ok(LocalGroup { ranks })
    }

    /// One rank per GPU the driver sees (GPU `r` as rank `r`).
    pub fn all_gpus() -> Result<LocalGroup, Error> {
        let count = Gpu::device_count()?;
        let gpus = (0..count).map(Gpu::new).collect::<Result<Vec<_>, _>>()?;
        LocalGroup::new(&gpus)
    }

    /// The number of ranks (GPUs).
    pub fn world_size(&self) -> usize {
        self.ranks.len()
    }

    /// The GPU of rank `rank`.
    pub fn gpu(&self, rank: usize) -> Option<&Gpu> {
        self.ranks.get(rank).map(Rank::gpu)
    }

    /// The GPUs, in rank order.
    pub fn gpus(&self) -> Vec<Gpu> {
        self.ranks.iter().map(|r| r.gpu().clone()).collect()
    }

    /// The stream rank `rank`'s collectives run on, if one is set.
    pub fn stream(&self, rank: usize) -> Option<&Stream> {
        self.ranks.get(rank).and_then(Rank::stream)
    }

    /// Runs later collectives on `streams[r]` for rank `r` (one stream of each rank's GPU,
    /// in rank order), or on the streams of the memory they write (`None`, the default).
    /// On error nothing changes.
    pub fn set_streams(&mut self, streams: Option<Vec<Stream>>) -> Result<(), Error> {
        const OP: &str = "LocalGroup::set_streams";
        match streams {
            None => {
                for rank in &mut self.ranks {
                    rank.set_stream(OP, None)?;
                }
            }
            Some(streams) => {
                if streams.len() != self.ranks.len() {
                    return Err(NcclError::WrongBufferCount {
                        op: OP,
                        got: streams.len(),
                        world_size: self.ranks.len(),
                    }
                    .into());
                }
                for (rank, s) in self.ranks.iter().zip(&streams) {
                    rank.gpu().check_stream(OP, s)?;
                }
                for (rank, s) in self.ranks.iter_mut().zip(streams) {
                    rank.set_stream(OP, Some(s))?;
                }
            }
        }
        Ok(())
    }

    /// The first asynchronous error NCCL met on any rank (`ncclCommGetAsyncError`).
    pub fn check_async_errors(&self) -> Result<(), Error> {
        for rank in &self.ranks {
            rank.check_async()?;
        }
        Ok(())
    }

    /// Waits for every rank's collectives and destroys the communicators, returning the
    /// first error instead of recording it as the drop does.
    pub fn destroy(self) -> Result<(), Error> {
        let mut first = Ok(());
        for rank in self.ranks {
            let closed = rank.close(false);
            if first.is_ok() {
                first = closed;
            }
        }
        first
    }

    /// [`Communicator::all_reduce_in_place`](super::Communicator::all_reduce_in_place) for
    /// every rank: `bufs[r]` on rank `r`'s GPU.
    pub fn all_reduce_in_place<T: NcclElement>(
        &mut self,
        bufs: &mut [impl AsViewMut<T, Gpu>],
        op: ReduceOp,
    ) -> Result<(), Error> {
        verbs::all_reduce(self, "LocalGroup::all_reduce_in_place", InPlace(bufs), op)
    }

    /// [`Communicator::all_reduce`](super::Communicator::all_reduce) for every rank.
    pub fn all_reduce<T: NcclElement>(
        &mut self,
        inputs: &[impl AsView<T, Gpu>],
        outputs: &mut [impl AsViewMut<T, Gpu>],
        op: ReduceOp,
    ) -> Result<(), Error> {
        verbs::all_reduce(
            self,
            "LocalGroup::all_reduce",
            OutOfPlace(inputs, outputs),
            op,
        )
    }

    /// [`Communicator::broadcast_in_place`](super::Communicator::broadcast_in_place) for
    /// every rank: rank `root`'s buffer into the others'.
    pub fn broadcast_in_place<T: NcclElement>(
        &mut self,
        bufs: &mut [impl AsViewMut<T, Gpu>],
        root: usize,
    ) -> Result<(), Error> {
        verbs::broadcast(self, "LocalGroup::broadcast_in_place", InPlace(bufs), root)
    }

    /// [`Communicator::broadcast`](super::Communicator::broadcast) for every rank.
    pub fn broadcast<T: NcclElement>(
        &mut self,
        inputs: &[impl AsView<T, Gpu>],
        outputs: &mut [impl AsViewMut<T, Gpu>],
        root: usize,
    ) -> Result<(), Error> {
        verbs::broadcast(
            self,
            "LocalGroup::broadcast",
            OutOfPlace(inputs, outputs),
            root,
        )
    }

    /// [`Communicator::all_gather_in_place`](super::Communicator::all_gather_in_place) for
    /// every rank.
    pub fn all_gather_in_place<T: NcclElement>(
        &mut self,
        bufs: &mut [impl AsViewMut<T, Gpu>],
    ) -> Result<(), Error> {
        verbs::all_gather(self, "LocalGroup::all_gather_in_place", InPlace(bufs))
    }

    /// [`Communicator::all_gather`](super::Communicator::all_gather) for every rank.
    pub fn all_gather<T: NcclElement>(
        &mut self,
        inputs: &[impl AsView<T, Gpu>],
        outputs: &mut [impl AsViewMut<T, Gpu>],
    ) -> Result<(), Error> {
        verbs::all_gather(self, "LocalGroup::all_gather", OutOfPlace(inputs, outputs))
    }

    /// [`Communicator::reduce_scatter_in_place`](super::Communicator::reduce_scatter_in_place)
    /// for every rank.
    pub fn reduce_scatter_in_place<T: NcclElement>(
        &mut self,
        bufs: &mut [impl AsViewMut<T, Gpu>],
        op: ReduceOp,
    ) -> Result<(), Error> {
        verbs::reduce_scatter(
            self,
            "LocalGroup::reduce_scatter_in_place",
            InPlace(bufs),
            op,
        )
    }

    /// [`Communicator::reduce_scatter`](super::Communicator::reduce_scatter) for every rank.
    pub fn reduce_scatter<T: NcclElement>(
        &mut self,
        inputs: &[impl AsView<T, Gpu>],
        outputs: &mut [impl AsViewMut<T, Gpu>],
        op: ReduceOp,
    ) -> Result<(), Error> {
        verbs::reduce_scatter(
            self,
            "LocalGroup::reduce_scatter",
            OutOfPlace(inputs, outputs),
            op,
        )
    }
}

impl Ranks for LocalGroup {
    /// Every rank of the communicator: `ncclCommInitAll` made them all in this process.
    fn ranks(&self) -> &[Rank] {
        &self.ranks
    }
}

static_assertions::assert_impl_all!(LocalGroup: Send, Sync);
