//! [`Communicator`]: one rank of a communicator whose other ranks live in other processes
//! (one process per GPU, as `torchrun` starts them, on one host or many).

use super::element::NcclElement;
use super::env::RankEnv;
use super::id::UniqueId;
use super::nccl;
use super::op::ReduceOp;
use super::rank::{IdClaim, Rank};
use super::verbs::{self, InPlace, OutOfPlace, Ranks};
use crate::error::{Error, NcclError};
use crate::runtime::{Gpu, Stream};
use crate::tensor::{AsView, AsViewMut};

/// This process's rank of an NCCL communicator whose other ranks run in other processes:
/// the per-process start (one process per GPU), which is also how NCCL spans hosts.
///
/// Made by [`init_rank`](Self::init_rank) with a [`UniqueId`] every rank shares, or by
/// [`from_env`](Self::from_env) from the variables `torchrun` sets (`RANK`, `WORLD_SIZE`,
/// `LOCAL_RANK`) and the id passed through a file or a variable ([`RankEnv::unique_id`]).
/// Every rank must call the same collectives in the same order with the same counts, as
/// NCCL requires; the calls take `&mut self`, so one thread issues a communicator's
/// collectives, in program order.
///
/// Collectives run on the stream of the memory they write (its home stream,
/// [`GpuStorage::stream`](crate::gpu::GpuStorage::stream)), or on the stream set with
/// [`set_stream`](Self::set_stream). Either way they are ordered with the buffers' other
/// work on any stream (docs/STREAMS.md): a collective waits for the pending writes of what
/// it reads and for the pending reads and writes of what it writes, and later work on them
/// waits for it. Tensors must be contiguous ([`NcclError::NotContiguous`] names
/// `contiguous()`); elements are [`NcclElement`]s, anything else does not compile.
///
/// Dropping it waits for its collectives and destroys it (`ncclCommDestroy`, which waits
/// for the other ranks too); [`abort`](Self::abort) stops it without waiting, for error
/// paths. At most one rank of a communicator lives in a process
/// ([`NcclError::RankAlreadyInProcess`]): to drive several GPUs from one process, use a
/// [`LocalGroup`](super::LocalGroup).
///
/// ```no_run
/// use typestate_tensor::collective::{Communicator, ReduceOp};
/// use typestate_tensor::tensor::Tensor;
///
/// # fn main() -> typestate_tensor::Result<()> {
/// // Started by `torchrun --nproc-per-node 2` or `data_parallel --spawn 2`, with
/// // TYPESTATE_TENSOR_NCCL_ID_FILE set to a fresh path.
/// let mut comm = Communicator::from_env()?;
/// let gpu = comm.gpu().clone();
/// let mut grad = Tensor::full_on(&[1024], comm.rank() as f32 + 1.0, &gpu)?;
/// comm.all_reduce_in_place(&mut grad, ReduceOp::Avg)?;
/// // Every rank now holds the mean of 1, 2, ..., world_size.
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Communicator {
    rank: Rank,
}

impl Communicator {
    /// Joins as rank `rank` of `world_size` on `gpu` (`ncclCommInitRank`), meeting the other
    /// ranks through `id` (rank 0's [`UniqueId::new`]). Blocks until every rank has joined.
    ///
    /// Errors: [`NcclError::NoLibrary`] without libnccl, [`NcclError::RankOutOfRange`],
    /// [`NcclError::RankAlreadyInProcess`] if this process already holds a rank of `id`,
    /// [`NcclError::Call`] when NCCL fails.
    pub fn init_rank(
        gpu: &Gpu,
        rank: usize,
        world_size: usize,
        id: &UniqueId,
    ) -> Result<Communicator, Error> {
        const OP: &str = "Communicator::init_rank";
        if rank >= world_size {
            return Err(NcclError::RankOutOfRange {
                op: OP,
                rank,
                world_size,
            }
            .into());
        }
        nccl::version()?;
        let claim = IdClaim::take(OP, *id.as_bytes())?;
        let raw = nccl::comm_init_rank(gpu, world_size, id.as_bytes(), rank)?;
        Ok(Communicator {
            rank: Rank::new("ncclCommInitRank", raw, gpu, rank, world_size, Some(claim))?,
        })
    }

    /// The per-process start from the environment, as `torchrun` sets it: rank and world
    /// size from `RANK` and `WORLD_SIZE`, the GPU from `LOCAL_RANK` ([`RankEnv::from_env`],
    /// then [`Gpu::new`]), the unique id from [`ID_VAR`](super::ID_VAR) or
    /// [`ID_FILE_VAR`](super::ID_FILE_VAR) ([`RankEnv::unique_id`]).
    ///
    /// Errors: [`NcclError::BadEnv`] naming the variable, [`NcclError::IdTimeout`] when
    /// rank 0 does not write the id file in time, and those of
    /// [`init_rank`](Self::init_rank) and [`Gpu::new`].
    pub fn from_env() -> Result<Communicator, Error> {
        let env = RankEnv::from_env()?;
        nccl::version()?;
        let gpu = Gpu::new(env.local_rank)?;
        let id = env.unique_id()?;
        Communicator::init_rank(&gpu, env.rank, env.world_size, &id)
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank.rank()
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.rank.world_size()
    }

    /// The GPU this rank runs on.
    pub fn gpu(&self) -> &Gpu {
        self.rank.gpu()
    }

    /// The stream collectives run on, if one is set ([`set_stream`](Self::set_stream)).
    pub fn stream(&self) -> Option<&Stream> {
        self.rank.stream()
    }

    /// Runs later collectives on `stream` (a stream of this rank's GPU), or on the stream of
    /// the memory they write (`None`, the default). A separate stream lets a collective
    /// overlap compute on the default stream; the buffers order the two (docs/STREAMS.md).
    pub fn set_stream(&mut self, stream: Option<Stream>) -> Result<(), Error> {
        Ok(self.rank.set_stream("Communicator::set_stream", stream)?)
    }

    /// An error NCCL met while running this communicator's work, if any
    /// (`ncclCommGetAsyncError`): a peer that failed, a network error.
    pub fn check_async_error(&self) -> Result<(), Error> {
        Ok(self.rank.check_async()?)
    }

    /// Waits for this rank's collectives, then destroys the communicator
    /// (`ncclCommDestroy`), returning errors instead of recording them as the drop does.
    pub fn destroy(self) -> Result<(), Error> {
        self.rank.close(false)
    }

    /// Stops the communicator without waiting (`ncclCommAbort`): kernels still waiting for
    /// a peer exit, leaving their outputs undefined. For error paths, where a peer may never
    /// call again.
    pub fn abort(self) -> Result<(), Error> {
        self.rank.close(true)
    }

    /// Reduces `buf` across the ranks in place: afterwards every rank's `buf` holds the
    /// sum (or the `op`) of all ranks' (`ncclAllReduce`).
    pub fn all_reduce_in_place<T: NcclElement>(
        &mut self,
        buf: &mut impl AsViewMut<T, Gpu>,
        op: ReduceOp,
    ) -> Result<(), Error> {
        verbs::all_reduce(
            self,
            "Communicator::all_reduce_in_place",
            InPlace(std::slice::from_mut(buf)),
            op,
        )
    }

    /// Reduces `input` across the ranks into `output` (as many elements).
    pub fn all_reduce<T: NcclElement>(
        &mut self,
        input: &impl AsView<T, Gpu>,
        output: &mut impl AsViewMut<T, Gpu>,
        op: ReduceOp,
    ) -> Result<(), Error> {
        verbs::all_reduce(
            self,
            "Communicator::all_reduce",
            OutOfPlace(std::slice::from_ref(input), std::slice::from_mut(output)),
            op,
        )
    }

    /// Copies rank `root`'s `buf` into every other rank's `buf` (`ncclBroadcast`).
    pub fn broadcast_in_place<T: NcclElement>(
        &mut self,
        buf: &mut impl AsViewMut<T, Gpu>,
        root: usize,
    ) -> Result<(), Error> {
        verbs::broadcast(
            self,
            "Communicator::broadcast_in_place",
            InPlace(std::slice::from_mut(buf)),
            root,
        )
    }

    /// Copies rank `root`'s `input` into every rank's `output` (other ranks' `input` is not
    /// read, but must have the same count).
    pub fn broadcast<T: NcclElement>(
        &mut self,
        input: &impl AsView<T, Gpu>,
        output: &mut impl AsViewMut<T, Gpu>,
        root: usize,
    ) -> Result<(), Error> {
        verbs::broadcast(
            self,
            "Communicator::broadcast",
            OutOfPlace(std::slice::from_ref(input), std::slice::from_mut(output)),
            root,
        )
    }

    /// Gathers every rank's chunk into every rank's `buf`, in place: `buf` holds
    /// `world_size` equal chunks in rank order, this rank's chunk is its input, and
    /// afterwards every chunk holds its rank's (`ncclAllGather`).
    pub fn all_gather_in_place<T: NcclElement>(
        &mut self,
        buf: &mut impl AsViewMut<T, Gpu>,
    ) -> Result<(), Error> {
        verbs::all_gather(
            self,
            "Communicator::all_gather_in_place",
            InPlace(std::slice::from_mut(buf)),
        )
    }

    /// Gathers every rank's `input` into `output`, which holds `world_size` times as many
    /// elements: rank `r`'s input at chunk `r`.
    pub fn all_gather<T: NcclElement>(
        &mut self,
        input: &impl AsView<T, Gpu>,
        output: &mut impl AsViewMut<T, Gpu>,
    ) -> Result<(), Error> {
        verbs::all_gather(
            self,
            "Communicator::all_gather",
            OutOfPlace(std::slice::from_ref(input), std::slice::from_mut(output)),
        )
    }

    /// Reduces every rank's `buf` and leaves chunk `r` of the result in chunk `r` of rank
    /// `r`'s `buf` (`buf` holds `world_size` equal chunks; the other chunks are left as
    /// NCCL leaves them) (`ncclReduceScatter`, in place).
    pub fn reduce_scatter_in_place<T: NcclElement>(
        &mut self,
        buf: &mut impl AsViewMut<T, Gpu>,
        op: ReduceOp,
    ) -> Result<(), Error> {
        verbs::reduce_scatter(
            self,
            "Communicator::reduce_scatter_in_place",
            InPlace(std::slice::from_mut(buf)),
            op,
        )
    }

    /// Reduces every rank's `input` (`world_size` chunks of `output`'s count) and writes
    /// chunk `r` of the result to rank `r`'s `output`.
    pub fn reduce_scatter<T: NcclElement>(
        &mut self,
        input: &impl AsView<T, Gpu>,
        output: &mut impl AsViewMut<T, Gpu>,
        op: ReduceOp,
    ) -> Result<(), Error> {
        verbs::reduce_scatter(
            self,
            "Communicator::reduce_scatter",
            OutOfPlace(std::slice::from_ref(input), std::slice::from_mut(output)),
            op,
        )
    }
}

impl Ranks for Communicator {
    /// This process's one rank of the communicator (`IdClaim` keeps any other out).
    fn ranks(&self) -> &[Rank] {
        std::slice::from_ref(&self.rank)
    }
}

static_assertions::assert_impl_all!(Communicator: Send, Sync);
