//! [`Rank`]: one NCCL communicator handle of this process, with its GPU, its place in the
//! world, the stream its collectives run on, and what its drop must wait for.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, PoisonError};

use super::nccl::{self, RawComm};
use crate::element::Element;
use crate::error::{Error, GpuError, NcclError};
use crate::runtime::{Gpu, GpuStorage, Stream};

/// Unique ids of the per-process communicators alive in this process (see [`IdClaim`]).
static CLAIMED: LazyLock<Mutex<HashSet<[u8; 128]>>> = LazyLock::new(|| Mutex::new(HashSet::new()));

fn claimed() -> std::sync::MutexGuard<'static, HashSet<[u8; 128]>> {
    // Nothing panics while it is held; the set is valid at every step.
    CLAIMED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This process's claim on a unique id: at most one rank of a per-process communicator
/// lives in one process, so the ranks NCCL may let read and write each other's buffers
/// directly (those of one process) are always the ranks of one
/// [`LocalGroup`](super::LocalGroup), whose calls are checked together.
#[derive(Debug)]
pub(crate) struct IdClaim([u8; 128]);

impl IdClaim {
    /// Claims `id` for this process, or [`NcclError::RankAlreadyInProcess`].
    pub(crate) fn take(op: &'static str, id: [u8; 128]) -> Result<IdClaim, NcclError> {
        if claimed().insert(id) {
            Ok(IdClaim(id))
        } else {
            Err(NcclError::RankAlreadyInProcess { op })
        }
    }
}

impl Drop for IdClaim {
    fn drop(&mut self) {
        claimed().remove(&self.0);
    }
}

/// One communicator handle of this process: rank `rank` of `world_size`, on `gpu`.
///
/// Invariants:
/// - `raw` is `Some` until drop (or [`Rank::abort`]) destroys it, and NCCL confirmed at
///   creation that it is rank `rank` of `world_size` on `gpu`'s device.
/// - `stream`, when set, is a stream of `gpu`'s device.
/// - `used` holds every stream a collective of this handle was queued on; the drop waits
///   for them before destroying the handle, so no kernel of it runs after.
#[derive(Debug)]
pub(crate) struct Rank {
    raw: Option<RawComm>,
    gpu: Gpu,
    rank: usize,
    world_size: usize,
    stream: Option<Stream>,
    used: Mutex<Vec<Stream>>,
    _claim: Option<IdClaim>,
}

impl Rank {
    /// Wraps a new handle after checking what NCCL says it is. On error the handle is
    /// destroyed.
    pub(crate) fn new(
        op: &'static str,
        raw: RawComm,
        gpu: &Gpu,
        rank: usize,
        world_size: usize,
        claim: Option<IdClaim>,
    ) -> Result<Rank, Error> {
        let info = nccl::comm_info(&raw);
        let this = Rank {
            raw: Some(raw),
            gpu: gpu.clone(),
            rank,
            world_size,
            stream: None,
            used: Mutex::new(Vec::new()),
            _claim: claim,
        };
        let (got_rank, device, count) = info?;
        if (got_rank, device, count) != (rank, gpu.ordinal(), world_size) {
            return Err(NcclError::Call {
                call: op,
                message: format!(
                    "NCCL made rank {got_rank} of {count} on GPU {device}, not rank {rank} of {world_size} on GPU {}",
                    gpu.ordinal()
                ),
            }
            .into());
        }
        Ok(this)
    }

    pub(crate) fn raw(&self) -> &RawComm {
        match &self.raw {
            Some(raw) => raw,
            None => unreachable!("invariant: the handle lives until drop"),
        }
    }

    pub(crate) fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    pub(crate) fn rank(&self) -> usize {
        self.rank
    }

    pub(crate) fn world_size(&self) -> usize {
        self.world_size
    }

    pub(crate) fn stream(&self) -> Option<&Stream> {
        self.stream.as_ref()
    }

    /// Sets the stream collectives run on (`None`: the output memory's own stream).
    pub(crate) fn set_stream(
        &mut self,
        op: &'static str,
        stream: Option<Stream>,
    ) -> Result<(), GpuError> {
        if let Some(s) = &stream {
            self.gpu.check_stream(op, s)?;
        }
        self.stream = stream;
        Ok(())
    }

    /// The stream a collective writing `output` runs on.
    pub(crate) fn stream_for<T: Element>(&self, output: &GpuStorage<T>) -> Stream {
        self.stream
            .clone()
            .unwrap_or_else(|| output.stream().clone())
    }

    /// Remembers that a collective is queued on `stream`, for the drop to wait for.
    pub(crate) fn note_stream(&self, stream: &Stream) {
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        if !used.contains(stream) {
            used.push(stream.clone());
        }
    }

    /// Waits for every stream a collective of this handle ran on.
    fn wait_streams(&self) -> Result<(), GpuError> {
        let used = std::mem::take(&mut *self.used.lock().unwrap_or_else(PoisonError::into_inner));
        let mut first = Ok(());
        for s in used {
            if let Err(e) = s.synchronize() {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// `ncclCommGetAsyncError`.
    pub(crate) fn check_async(&self) -> Result<(), NcclError> {
        nccl::async_error(self.raw())
    }

    /// Destroys the handle now, waiting for its work (`ncclCommDestroy`), or stopping it
    /// (`ncclCommAbort`) when `abort`; errors returned instead of recorded.
    pub(crate) fn close(mut self, abort: bool) -> Result<(), Error> {
        let raw = self.raw.take();
        let waited = if abort { Ok(()) } else { self.wait_streams() };
        let closed = match raw {
            Some(raw) if abort => nccl::comm_abort(raw),
            Some(raw) => nccl::comm_destroy(raw),
            None => Ok(()),
        };
        waited?;
        Ok(closed?)
    }
}

impl Drop for Rank {
    fn drop(&mut self) {
        let Some(raw) = self.raw.take() else {
            return;
        };
        if let Err(e) = self.wait_streams() {
            self.gpu.errors().record(e);
        }
        if let Err(e) = nccl::comm_destroy(raw) {
            self.gpu.errors().record(e);
        }
    }
}
