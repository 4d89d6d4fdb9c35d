//! The copy: checks, the route, and the local and direct (`cuMemcpyPeerAsync`) ways; the
//! staged way is `super::staged`.

use super::access::link;
use super::order::order_after;
use super::path::{PeerPath, PeerRoute};
use super::staged::staged;
use crate::element::Element;
use crate::error::{Error, GpuError, LayoutError};
use crate::runtime::buffer::GpuStorage;
use crate::runtime::driver;
use crate::runtime::graph::state;
use crate::runtime::stream::Stream;

/// Checks that `offset..offset + len` lies in a buffer of `storage_len` elements.
pub(super) fn check_range(
    op: &'static str,
    offset: usize,
    len: usize,
    storage_len: usize,
) -> Result<(), LayoutError> {
    match offset.checked_add(len) {
        Some(end) if end <= storage_len => Ok(()),
        _ => Err(LayoutError::OutOfStorage {
            op,
            shape: vec![len],
            strides: vec![1],
            offset,
            storage_len,
        }),
    }
}

/// The stream `buffer`'s side of a copy runs on: `stream` if it belongs to the buffer's GPU,
/// else the buffer's home stream (its proxy, see the module docs).
fn side<'a, T: Element>(buffer: &'a GpuStorage<T>, stream: &'a Stream) -> &'a Stream {
    if stream.ordinal() == buffer.gpu().ordinal() {
        stream
    } else {
        buffer.stream()
    }
}

/// Queues a copy of `len` elements of `src` from element `src_offset` into `dst` from element
/// `dst_offset`, on `stream` (a stream of either memory's GPU), going as `path` says, and
/// returns once it is queued. Both memories order it (see the module docs): later work on
/// `dst`, on any stream of its GPU, runs after it, and a later write of `src` waits for it.
///
/// # Errors
/// [`GpuError::DeviceMismatch`] for a stream of a third GPU (naming the source's GPU and the
/// stream's); [`LayoutError::OutOfStorage`] for a range outside either memory;
/// [`GpuError::NotCapturable`] inside a CUDA graph capture; driver and allocation errors.
/// On error nothing was queued, or whatever was queued has finished (the streams were
/// synchronised), so the memories stay valid; `dst` may hold part of the copy.
#[allow(clippy::too_many_arguments)] // two (memory, offset) pairs, the length, where and how
pub(crate) fn copy_range<T: Element>(
    op: &'static str,
    dst: &mut GpuStorage<T>,
    dst_offset: usize,
    src: &GpuStorage<T>,
    src_offset: usize,
    len: usize,
    stream: &Stream,
    path: PeerPath,
) -> Result<PeerRoute, Error> {
    let (j, k) = (src.gpu().ordinal(), dst.gpu().ordinal());
    if stream.ordinal() != j && stream.ordinal() != k {
        return Err(GpuError::DeviceMismatch {
            op,
            lhs: j,
            rhs: stream.ordinal(),
        }
        .into());
    }
    check_range(op, src_offset, len, src.len())?;
    check_range(op, dst_offset, len, dst.len())?;
    let (src_s, dst_s) = if j == k && path == PeerPath::Staged {
        // A staged copy on one GPU (a test of the fallback) reads on the source's home
        // stream and writes on `stream`, so that its two streams are ordered by events as
        // between two GPUs whenever the two differ.
        (src.stream().clone(), stream.clone())
    } else {
        (side(src, stream).clone(), side(dst, stream).clone())
    };
    for s in [stream, &src_s, &dst_s] {
        state::check_host_sync(op, s.capture_owner(), state::EVENTS)?;
    }
    let size = size_of::<T>();
    // Cannot overflow: the ranges lie inside live buffers, whose byte sizes were checked.
    let (bytes, src_byte, dst_byte) = (len * size, src_offset * size, dst_offset * size);
    let route = match path {
        PeerPath::Staged => PeerRoute::Staged,
        PeerPath::Auto if j == k => PeerRoute::Local,
        PeerPath::Auto => {
            // Both directions, as NVIDIA's peer-to-peer samples and NCCL do; asked once.
            let forth = link(src.gpu(), dst.gpu())?;
            let back = link(dst.gpu(), src.gpu())?;
            if forth && back {
                PeerRoute::Direct
            } else {
                PeerRoute::Staged
            }
        }
    };
    match route {
        PeerRoute::Local => {
            src.access_read(op, stream)?;
            dst.access_write(op, stream)?;
            if bytes > 0 {
                // SAFETY: both ranges lie inside live blocks of the stream's GPU (same
                // ordinal, checked; ranges checked above) and do not overlap (`&mut dst`
                // and `&src` are distinct storages). `access_read`/`access_write` ordered
                // the copy after the last write of `src` and every pending use of `dst`;
                // both blocks are freed only in stream order after `stream`'s work (an
                // access on another stream than a block's home was recorded with its
                // allocator). The source's elements are initialised `T`s.
                unsafe {
                    driver::memcpy_dtod_async(
                        dst.device_ptr_mut() + dst_byte as u64,
                        src.device_ptr() + src_byte as u64,
                        bytes,
                        stream.cuda(),
                    )
                }?;
            }
        }
        PeerRoute::Direct => direct(
            op, dst, dst_byte, src, src_byte, bytes, stream, &src_s, &dst_s,
        )?,
        PeerRoute::Staged => staged(op, dst, dst_byte, src, src_byte, bytes, &src_s, &dst_s)?,
    }
    Ok(route)
}

/// One `cuMemcpyPeerAsync` on `stream`, with the other GPU's memory ordered through its home
/// stream (module docs, steps 1 to 4). `src_s` and `dst_s` are each buffer's [`side`] of
/// `stream`, as [`copy_range`] chose them.
#[allow(clippy::too_many_arguments)]
fn direct<T: Element>(
    op: &'static str,
    dst: &mut GpuStorage<T>,
    dst_byte: usize,
    src: &GpuStorage<T>,
    src_byte: usize,
    bytes: usize,
    stream: &Stream,
    src_s: &Stream,
    dst_s: &Stream,
) -> Result<(), Error> {
    src.access_read(op, src_s)?;
    dst.access_write(op, dst_s)?;
    if bytes == 0 {
        return Ok(());
    }
    order_after(stream, src_s)?;
    order_after(stream, dst_s)?;
    // SAFETY: `src`'s range lies in its live block on GPU `src.gpu()` and `dst`'s in its
    // live block on `dst.gpu()` (ranges checked by `copy_range`); two GPUs' memories are
    // disjoint. The copy is ordered after the last write of `src` and every pending use of
    // `dst`: each access was asked on a stream of the buffer's own GPU (`stream`, or the
    // buffer's home stream, which `stream` now waits for). Neither block is freed before the
    // copy completes: the block on `stream`'s GPU is freed in order after `stream`'s work
    // (`stream` is its home or was recorded with its allocator), and the other one is freed
    // in order on its home stream, which waits for the copy right below before anything
    // else queued there (or, if that wait cannot be queued, the copy is finished before
    // returning). The source's elements are initialised `T`s.
    unsafe {
        driver::memcpy_peer_async(
            dst.device_ptr_mut() + dst_byte as u64,
            dst.gpu().context(),
            src.device_ptr() + src_byte as u64,
            src.gpu().context(),
            bytes,
            stream.cuda(),
        )
    }?;
    let after = order_after(src_s, stream).and_then(|()| order_after(dst_s, stream));
    if let Err(e) = after {
        // The proxies could not be ordered after the copy: finish it now, so that nothing
        // later can overtake it (if even this fails, the context is broken and runs no
        // more work).
        let _ = driver::stream_synchronize(stream.cuda());
        return Err(e.into());
    }
    Ok(())
}
