//! The staged way: chunks through pinned host memory of the destination GPU, device to host
//! on a stream of the source's GPU, host to device on one of the destination's, pipelined.

use std::sync::Arc;

use crate::element::Element;
use crate::error::{Error, GpuError};
use crate::runtime::buffer::GpuStorage;
use crate::runtime::device::Gpu;
use crate::runtime::driver;
use crate::runtime::event::Event;
use crate::runtime::stream::Stream;
use crate::storage::allocator::{Block, DeviceAllocator};

/// Bytes per chunk of a staged copy (a multiple of every element size).
pub const STAGE_CHUNK: usize = 8 << 20;

/// Chunks of a staged copy in flight at once (the staging buffer holds this many).
const STAGE_SLOTS: usize = 4;

/// A staging block of the destination GPU's pinned-host allocator, never read or written by
/// the host: device-to-host copies fill it, host-to-device copies drain it.
struct Staging {
    block: Option<Block>,
    gpu: Gpu,
}

impl Staging {
    /// Gives the block back; the allocator reuses it once an event recorded now on its
    /// stream (the destination side's, where the last copy reading it was queued) completes.
    fn release(mut self) -> Result<(), Error> {
        match self.block.take() {
            Some(block) => Ok(self.gpu.host_allocator().free(block)?),
            None => Ok(()),
        }
    }

    /// Leaks the block (a copy may still use it and could not be waited for): it is never
    /// given back, so the allocator never hands its memory out again.
    fn leak(mut self) {
        self.block = None;
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            if let Err(e) = self.gpu.host_allocator().free(block) {
                self.gpu.errors().record(e);
            }
        }
    }
}

/// The copy staged through pinned host memory: for each chunk, device to host on `src_s` (a
/// stream of the source's GPU), then host to device on `dst_s` (of the destination's), with
/// [`STAGE_SLOTS`] chunks in flight.
#[allow(clippy::too_many_arguments)] // the two memories with their byte offsets, two streams
pub(super) fn staged<T: Element>(
    op: &'static str,
    dst: &mut GpuStorage<T>,
    dst_byte: usize,
    src: &GpuStorage<T>,
    src_byte: usize,
    bytes: usize,
    src_s: &Stream,
    dst_s: &Stream,
) -> Result<(), Error> {
    src.access_read(op, src_s)?;
    dst.access_write(op, dst_s)?;
    if bytes == 0 {
        return Ok(());
    }
    let chunk = STAGE_CHUNK.min(bytes);
    let slots = bytes.div_ceil(chunk).min(STAGE_SLOTS);
    let host = Arc::clone(dst.gpu().host_allocator());
    // Allocated on the destination side's stream: the allocator records an event there when
    // the block is given back and reuses it only after, which is after every copy below
    // (each host-to-device copy is queued there after its device-to-host copy completed).
    let staging = Staging {
        block: Some(host.allocate(chunk * slots, dst_s.id())?),
        gpu: dst.gpu().clone(),
    };
    let base = staging.block.as_ref().map_or(0, Block::addr);
    let queued = queue_staged(
        dst, dst_byte, src, src_byte, bytes, src_s, dst_s, base, chunk, slots,
    );
    match queued {
        Ok(()) => staging.release(),
        Err(e) => {
            // Copies queued before the failure may still use the staging memory: wait for
            // them before giving it back, or leak it if waiting fails.
            let settled = driver::stream_synchronize(src_s.cuda())
                .and_then(|()| driver::stream_synchronize(dst_s.cuda()));
            match settled {
                Ok(()) => staging.release()?,
                Err(_) => staging.leak(),
            }
            Err(e)
        }
    }
}

/// Queues the chunks of a staged copy through the staging memory at host address `base`
/// (`slots` chunks of `chunk` bytes).
#[allow(clippy::too_many_arguments)] // as `staged`, plus the staging memory's shape
fn queue_staged<T: Element>(
    dst: &mut GpuStorage<T>,
    dst_byte: usize,
    src: &GpuStorage<T>,
    src_byte: usize,
    bytes: usize,
    src_s: &Stream,
    dst_s: &Stream,
    base: u64,
    chunk: usize,
    slots: usize,
) -> Result<(), Error> {
    let one_stream = src_s == dst_s;
    // Per slot: "device-to-host copy done" (on the source side) and "host-to-device copy
    // done" (on the destination side). One stream needs none: it runs the chunks in order.
    let mut filled = Vec::new();
    let mut drained = Vec::new();
    if !one_stream {
        for _ in 0..slots {
            filled.push(Event::create(src_s.context(), false)?);
            drained.push(Event::create(dst_s.context(), false)?);
        }
    }
    let (src_addr, dst_addr) = (
        src.device_ptr() + src_byte as u64,
        dst.device_ptr_mut() + dst_byte as u64,
    );
    let mut done = 0usize;
    let mut index = 0usize;
    while done < bytes {
        let n = chunk.min(bytes - done);
        let slot = index % slots;
        let host = usize::try_from(base)
            .ok()
            .map(|a| std::ptr::with_exposed_provenance_mut::<u8>(a).wrapping_add(slot * chunk))
            .ok_or_else(|| GpuError::Driver {
                call: "cuMemHostAlloc",
                message: format!("pinned staging address {base:#x} is not a host address"),
            })?;
        if !one_stream && index >= slots {
            // The slot's previous chunk must have left the staging memory first.
            src_s.wait_event(&drained[slot])?;
        }
        // SAFETY: `host` addresses `n <= chunk` bytes of slot `slot` of the live staging
        // block (page-locked, `slots * chunk` bytes, owned by the caller until every copy
        // here has completed). No host code reads or writes it, and no other copy writes or
        // reads the slot meanwhile: the previous host-to-device copy out of it is complete
        // before this one runs (the wait above, or the same stream). The device range lies
        // in `src`'s live block (checked by `copy_range`), read after its last write
        // (`access_read` on `src_s`); the bytes land in a `u8` buffer, valid for any value.
        unsafe { driver::memcpy_dtoh_async(host, src_addr + done as u64, n, src_s.cuda()) }?;
        if !one_stream {
            filled[slot].record(src_s)?;
            dst_s.wait_event(&filled[slot])?;
        }
        // SAFETY: the host range is the slot just filled, complete before this copy runs
        // (the wait above, or the same stream), and not written again until this copy is
        // complete (the next fill of the slot waits for `drained`, or runs on this stream
        // after it); it stays allocated until an event on `dst_s` after this copy completes
        // (see `staged`). The device range lies in `dst`'s live block, written after its
        // pending uses (`access_write` on `dst_s`); the bytes are `src`'s, valid `T`s, and
        // chunks end on element boundaries (`STAGE_CHUNK` is a multiple of every element
        // size), so every element of `dst` is either old or new.
        unsafe { driver::memcpy_htod_async(dst_addr + done as u64, host, n, dst_s.cuda()) }?;
        if !one_stream {
            drained[slot].record(dst_s)?;
        }
        done += n;
        index += 1;
    }
    Ok(())
}
