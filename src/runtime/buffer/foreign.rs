//! Device memory another library owns (issue 30, DLPack import): a [`GpuStorage`] whose block
//! never came from, and never goes back to, an allocator of this crate. It takes part in
//! stream order like any storage; when it drops, it waits for the work queued on it and then
//! drops its owner (which tells the producer it may free the memory).

use super::{ForeignOwner, GpuStorage};
use crate::element::Element;
use crate::error::Error;
use crate::runtime::byte_len;
use crate::runtime::device::Gpu;
use crate::runtime::foreign_stream::ForeignStream;
use crate::runtime::stream::Stream;
use crate::runtime::stream_order::StreamOrder;
use crate::storage::allocator::Block;

impl<T: Element> GpuStorage<T> {
    /// Foreign device memory as a storage of `len` elements whose home stream is `stream`.
    ///
    /// # Safety
    ///
    /// - `[addr, addr + len * size_of::<T>())` is device memory of `gpu`'s device (unified
    ///   addressing), aligned for `T`, holding `len` valid `T`s once the work queued on
    ///   `stream` so far is done, and it stays allocated until `owner` is dropped.
    /// - Nobody but this storage writes it until then, and any foreign writes queued before
    ///   are ordered before work queued on `stream` from now on (the producer's side of the
    ///   DLPack stream handshake). If this storage is ever written (through `&mut`), nobody
    ///   else reads it until `owner` is dropped either.
    pub(crate) unsafe fn from_foreign(
        gpu: &Gpu,
        addr: u64,
        len: usize,
        stream: &Stream,
        owner: ForeignOwner,
    ) -> Result<Self, Error> {
        const OP: &str = "dlpack import";
        gpu.check_stream(OP, stream)?;
        let bytes = byte_len::<T>(OP, len)?;
        let block = if bytes == 0 {
            Block::empty(stream.id())
        } else {
            Block::new(addr, bytes, bytes, stream.id())
        };
        Ok(GpuStorage {
            block,
            len,
            gpu: gpu.clone(),
            stream: stream.clone(),
            order: StreamOrder::new(),
            pool: None,
            foreign: Some(owner),
            _element: std::marker::PhantomData,
        })
    }

    /// Makes work queued on `consumer` from now on wait for the work on this memory that a
    /// consumer must wait for (DLPack export, the producer's side of the handshake): the last
    /// write, and for a consumer that may write (`write`), every read since too. The host
    /// does not block.
    pub(crate) fn order_foreign(&self, consumer: &ForeignStream, write: bool) -> Result<(), Error> {
        let pending = self.pending_streams();
        let count = if write { pending.len() } else { 1 };
        for s in pending.iter().take(count) {
            consumer.wait_for(s)?;
        }
        Ok(())
    }

    /// Drop's foreign path: waits (blocking) for every stream with work on the memory, the
    /// last writer and the readers since (every earlier reader is ordered before that
    /// writer), then drops `owner`. If a wait fails, `owner` is leaked rather than dropped:
    /// releasing memory a kernel may still read is worse than leaking it. Errors are recorded
    /// ([`Gpu::check_err`]).
    pub(super) fn release_foreign(&self, owner: ForeignOwner) {
        for s in self.pending_streams() {
            if let Err(e) = s.synchronize() {
                self.gpu.errors().record(e);
                std::mem::forget(owner);
                return;
            }
        }
        drop(owner);
    }
}
