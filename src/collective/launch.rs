//! The one path every collective takes: buffers checked and placed, the stream ordered
//! after what the buffers are waiting for, then the NCCL calls of all of this process's
//! ranks in one group under THC's free lock.

use super::element::NcclElement;
use super::nccl::{self, Call, Collective};
use super::rank::Rank;
use crate::error::{Error, GpuError, NcclError};
use crate::runtime::graph::state;
use crate::runtime::{free_lock, Gpu, GpuStorage, Stream};
use crate::tensor::{TensorView, TensorViewMut};

/// Why a collective cannot be captured into a CUDA graph of this crate.
const NOT_CAPTURABLE: &str = "NCCL collectives are not captured into graphs here (a replay \
                              would need every rank to replay in step); run them outside \
                              `Gpu::capture`";

/// Elements a collective reads: `len` elements of `storage` from element `offset`.
pub(crate) struct Src<'a, T: NcclElement> {
    pub(crate) storage: &'a GpuStorage<T>,
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

/// Elements a collective writes (and, in place, reads).
pub(crate) struct Dst<'a, T: NcclElement> {
    pub(crate) storage: &'a mut GpuStorage<T>,
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

fn contiguous(
    op: &'static str,
    layout: &crate::layout::Layout,
) -> Result<(usize, usize), NcclError> {
    if !layout.is_contiguous() {
        return Err(NcclError::NotContiguous {
            op,
            shape: layout.shape().to_vec(),
            strides: layout.strides().to_vec(),
        });
    }
    Ok((layout.offset(), layout.numel()))
}

impl<'a, T: NcclElement> Src<'a, T> {
    /// The elements of a contiguous view, or [`NcclError::NotContiguous`].
    pub(crate) fn of_view(
        op: &'static str,
        view: &TensorView<'a, T, Gpu>,
    ) -> Result<Self, NcclError> {
        let (offset, len) = contiguous(op, view.layout())?;
        Ok(Src {
            storage: view.storage(),
            offset,
            len,
        })
    }
}

impl<'a, T: NcclElement> Dst<'a, T> {
    /// The elements of a contiguous writable view, or [`NcclError::NotContiguous`].
    pub(crate) fn of_view(
        op: &'static str,
        view: &'a mut TensorViewMut<'_, T, Gpu>,
    ) -> Result<Self, NcclError> {
        let (offset, len) = contiguous(op, view.layout())?;
        Ok(Dst {
            storage: view.slice_mut(),
            offset,
            len,
        })
    }
}

/// One rank's buffers.
pub(crate) enum Buffers<'a, T: NcclElement> {
    /// One buffer, read and written (NCCL's in-place forms).
    InPlace(Dst<'a, T>),
    /// An input and an output.
    OutOfPlace(Src<'a, T>, Dst<'a, T>),
}

impl<T: NcclElement> Buffers<'_, T> {
    fn output(&self) -> &GpuStorage<T> {
        match self {
            Buffers::InPlace(d) | Buffers::OutOfPlace(_, d) => d.storage,
        }
    }
}

/// `what` the buffers of one rank must satisfy, in words, for [`NcclError::CountMismatch`].
fn mismatch(op: &'static str, what: String, expected: usize, got: usize) -> NcclError {
    NcclError::CountMismatch {
        op,
        what,
        expected,
        got,
    }
}

/// NCCL's count, and where input and output start (in elements from each storage's start),
/// for one rank's buffers.
fn place<T: NcclElement>(
    op: &'static str,
    what: Collective,
    world: usize,
    rank: usize,
    buffers: &Buffers<'_, T>,
) -> Result<(usize, usize, usize), NcclError> {
    // `world` is at least 1 (NCCL confirmed it at creation).
    match (what, buffers) {
        (Collective::AllReduce(_) | Collective::Broadcast(_), Buffers::InPlace(d)) => {
            Ok((d.len, d.offset, d.offset))
        }
        (Collective::AllReduce(_) | Collective::Broadcast(_), Buffers::OutOfPlace(s, d)) => {
            if s.len != d.len {
                return Err(mismatch(
                    op,
                    "the output holds as many elements as the input".to_owned(),
                    s.len,
                    d.len,
                ));
            }
            Ok((d.len, s.offset, d.offset))
        }
        (Collective::AllGather | Collective::ReduceScatter(_), Buffers::InPlace(d)) => {
            if d.len % world != 0 {
                return Err(mismatch(
                    op,
                    format!("the buffer holds one equal chunk per rank ({world} ranks)"),
                    d.len.div_ceil(world) * world,
                    d.len,
                ));
            }
            let count = d.len / world;
            let mine = d.offset + rank * count;
            Ok(match what {
                // Input: this rank's chunk; output: the whole buffer.
                Collective::AllGather => (count, mine, d.offset),
                // Input: the whole buffer; output: this rank's chunk.
                _ => (count, d.offset, mine),
            })
        }
        (Collective::AllGather, Buffers::OutOfPlace(s, d)) => {
            let expected = s.len.saturating_mul(world);
            if d.len != expected {
                return Err(mismatch(
                    op,
                    format!("the output holds the input of each of the {world} ranks"),
                    expected,
                    d.len,
                ));
            }
            Ok((s.len, s.offset, d.offset))
        }
        (Collective::ReduceScatter(_), Buffers::OutOfPlace(s, d)) => {
            let expected = d.len.saturating_mul(world);
            if s.len != expected {
                return Err(mismatch(
                    op,
                    format!("the input holds one output-sized chunk per rank ({world} ranks)"),
                    expected,
                    s.len,
                ));
            }
            Ok((d.len, s.offset, d.offset))
        }
    }
}

/// `len` elements from `offset` lie inside `storage`.
fn check_within<T: NcclElement>(
    op: &'static str,
    storage: &GpuStorage<T>,
    offset: usize,
    len: usize,
) -> Result<(), NcclError> {
    match offset.checked_add(len) {
        Some(end) if end <= storage.len() => Ok(()),
        _ => Err(mismatch(
            op,
            format!("a region from element {offset} inside the storage"),
            storage.len().saturating_sub(offset),
            len,
        )),
    }
}

/// The device address of element `index` of `storage` (inside it: checked by the caller).
fn address<T: NcclElement>(base: u64, index: usize) -> u64 {
    // Cannot overflow: the element lies inside a live allocation (byte size checked at
    // allocation).
    base + (index * size_of::<T>()) as u64
}

/// Runs collective `what` for this process's ranks `ranks` (every rank of one communicator
/// in this process, as [`Ranks`](super::verbs::Ranks) gives them: all ranks for a
/// [`LocalGroup`](super::LocalGroup), one for a [`Communicator`](super::Communicator)),
/// `buffers[i]` being rank `ranks[i]`'s.
///
/// Everything that can be refused is refused before anything is queued: a buffer on
/// another GPU, a stream of another GPU, counts that do not fit the collective or differ
/// between ranks, a root out of range, a CUDA graph capture in progress.
pub(crate) fn run<T: NcclElement>(
    op: &'static str,
    what: Collective,
    ranks: &[Rank],
    buffers: Vec<Buffers<'_, T>>,
) -> Result<(), Error> {
    let Some(first) = ranks.first() else {
        return Ok(());
    };
    let world = first.world_size();
    if buffers.len() != ranks.len() {
        return Err(NcclError::WrongBufferCount {
            op,
            got: buffers.len(),
            world_size: ranks.len(),
        }
        .into());
    }
    if let Collective::Broadcast(root) = what {
        if root >= world {
            return Err(NcclError::RankOutOfRange {
                op,
                rank: root,
                world_size: world,
            }
            .into());
        }
    }
    // Checks and places every rank's buffers.
    let mut plans = Vec::with_capacity(ranks.len());
    for (rank, buffers) in ranks.iter().zip(buffers) {
        let ordinal = rank.gpu().ordinal();
        let on_gpu = |s: usize| -> Result<(), GpuError> {
            if s == ordinal {
                Ok(())
            } else {
                Err(GpuError::DeviceMismatch {
                    op,
                    lhs: ordinal,
                    rhs: s,
                })
            }
        };
        match &buffers {
            Buffers::InPlace(d) => on_gpu(d.storage.gpu().ordinal())?,
            Buffers::OutOfPlace(s, d) => {
                on_gpu(s.storage.gpu().ordinal())?;
                on_gpu(d.storage.gpu().ordinal())?;
            }
        }
        let (count, send_at, recv_at) = place(op, what, world, rank.rank(), &buffers)?;
        let (input_len, output_len) = lens(what, world, count);
        match &buffers {
            Buffers::InPlace(d) => {
                check_within(op, d.storage, send_at, input_len)?;
                check_within(op, d.storage, recv_at, output_len)?;
            }
            Buffers::OutOfPlace(s, d) => {
                check_within(op, s.storage, send_at, input_len)?;
                check_within(op, d.storage, recv_at, output_len)?;
            }
        }
        let stream = rank.stream_for(buffers.output());
        rank.gpu().check_stream(op, &stream)?;
        state::check_host_sync(op, stream.capture_owner(), NOT_CAPTURABLE)?;
        plans.push(Plan {
            rank,
            buffers,
            stream,
            count,
            send_at,
            recv_at,
        });
    }
    let count = plans[0].count;
    for (i, plan) in plans.iter().enumerate() {
        if plan.count != count {
            return Err(mismatch(
                op,
                format!("rank {i} moves as many elements as rank 0"),
                count,
                plan.count,
            )
            .into());
        }
    }
    if count == 0 {
        return Ok(());
    }
    // Order each rank's stream after what its buffers wait for, and record the collective
    // as a read of the input and a write of the output (docs/STREAMS.md), so later work on
    // any stream waits for it and the allocator reuses neither before it has run.
    let mut addresses = Vec::with_capacity(plans.len());
    for plan in &mut plans {
        let stream = &plan.stream;
        addresses.push(match &mut plan.buffers {
            Buffers::InPlace(d) => {
                d.storage.access_write(op, stream)?;
                let base = d.storage.device_ptr_mut();
                (
                    address::<T>(base, plan.send_at),
                    address::<T>(base, plan.recv_at),
                )
            }
            Buffers::OutOfPlace(s, d) => {
                s.storage.access_read(op, stream)?;
                d.storage.access_write(op, stream)?;
                (
                    address::<T>(s.storage.device_ptr(), plan.send_at),
                    address::<T>(d.storage.device_ptr_mut(), plan.recv_at),
                )
            }
        });
        plan.rank.note_stream(stream);
    }
    let calls: Vec<Call<'_>> = plans
        .iter()
        .zip(addresses)
        .map(|(plan, (send, recv))| Call {
            comm: plan.rank.raw(),
            stream: &plan.stream,
            dtype: T::DTYPE,
            send,
            recv,
            count,
        })
        .collect();
    launch(what, &calls)?;
    Ok(())
}

/// One rank's part of a collective, checked and placed.
struct Plan<'r, 'b, T: NcclElement> {
    rank: &'r Rank,
    buffers: Buffers<'b, T>,
    stream: Stream,
    count: usize,
    send_at: usize,
    recv_at: usize,
}

/// Elements of input and output for NCCL's `count`.
fn lens(what: Collective, world: usize, count: usize) -> (usize, usize) {
    // Cannot overflow: `place` derived `count` from lengths of live buffers.
    match what {
        Collective::AllReduce(_) | Collective::Broadcast(_) => (count, count),
        Collective::AllGather => (count, count * world),
        Collective::ReduceScatter(_) => (count * world, count),
    }
}

/// The NCCL calls of one collective, one per rank of this process, in one group when there
/// are several, under THC's free lock. After the first failed call the others are not
/// issued; `ncclGroupEnd` then launches nothing and reports the error.
fn launch(what: Collective, calls: &[Call<'_>]) -> Result<(), NcclError> {
    let grouped = calls.len() > 1;
    let _free = free_lock();
    if grouped {
        nccl::group_start()?;
    }
    let mut result = Ok(());
    for call in calls {
        // SAFETY: `run` established `collective`'s contract for every call:
        // - Each range lies inside its storage (`check_within`), which is live device memory
        //   of the rank's GPU (same ordinal as the communicator, checked), holding
        //   initialised elements (`GpuStorage`'s invariant) of `T`, whose `DTYPE` is the
        //   call's type.
        // - The storages are borrowed for the whole of `run`, and freed later only through
        //   their allocator, which reuses memory in stream order on their own stream and
        //   after the recorded streams' work on any other (`access_*` recorded this stream);
        //   `access_write` / `access_read` ordered this stream after earlier writes of the
        //   input and accesses of the output, and record this collective so that later work
        //   on the output, and later writes of the input, wait for it.
        // - In place, send and receive are placed as NCCL's in-place forms say (`place`);
        //   out of place, input and output are two distinct storages (`&` and `&mut`), so
        //   disjoint.
        // - Within this process every rank of the communicator is in `calls` (`ranks` comes
        //   from `Ranks`, whose invariant says so: a `LocalGroup` passes all; a per-process
        //   `Communicator` is the only rank of its id here, `IdClaim`) with the same
        //   collective, type and count (checked). Ranks in
        //   other processes read and write only their own memory: this crate registers no
        //   buffer with NCCL, so data crosses processes through NCCL's own buffers, and a
        //   peer that calls another collective can stall this one, not reach its memory.
        // - We hold the free lock.
        if let Err(e) = unsafe { nccl::collective(what, call) } {
            result = Err(e);
            break;
        }
    }
    if grouped {
        let ended = nccl::group_end();
        result = result.and(ended);
    }
    result
}
