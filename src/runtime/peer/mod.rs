//! Several GPUs: peer access between devices, and copies between the memory of two GPUs
//! (directly, or staged through pinned host memory), ordered on both devices' streams.
//!
//! # Peer access
//!
//! [`Gpu::enable_peer_access`] asks the driver once per ordered pair of devices
//! (`cuDeviceCanAccessPeer`, then `cuCtxEnablePeerAccess`) and remembers the answer for the
//! life of the process, as THC's `p2pAccessEnabled` table does; the contexts of a pair that
//! was enabled are kept retained, so the answer cannot go stale.
//!
//! # Copies between GPUs
//!
//! A copy from memory of GPU `j` into memory of GPU `k` goes one of three ways
//! ([`PeerRoute`]): on one GPU, a device-to-device copy; between two GPUs with peer access
//! enabled both ways, one `cuMemcpyPeerAsync` (NVLink or PCIe peer-to-peer, no host
//! involved); otherwise staged through pinned host memory from the destination GPU's caching
//! host allocator, in chunks of [`STAGE_CHUNK`] bytes that pipeline the device-to-host copies
//! on `j` with the host-to-device copies on `k`. [`PeerPath::Staged`] (or
//! `TYPESTATE_TENSOR_PEER_PATH=staged`, [`PEER_PATH_ENV`]) forces the staged way, also on one
//! GPU, so it is tested where peer access exists or only one GPU does.
//!
//! # Order across devices (docs/STREAMS.md)
//!
//! A buffer's stream order knows only streams of its own GPU (its allocator can record events
//! and synchronise only there). So a copy queued on a stream `S` of one GPU orders the buffer
//! of the *other* GPU through that buffer's home stream `P` (its proxy):
//!
//! 1. the buffer's access (a read of the source, a write of the destination) is asked on `P`,
//!    which waits for the buffer's pending work as any access does;
//! 2. `S` waits for `P` (an event recorded on `P` now);
//! 3. the copy is queued on `S`;
//! 4. `P` waits for `S` (an event recorded on `S` after the copy).
//!
//! After step 4, everything queued on `P` later, and everything that later waits for `P`
//! (every access the buffer orders after its recorded access on `P`), runs after the copy; the
//! buffer's allocator reuses its memory in order on `P` (its home stream) or after events on
//! streams of its own GPU, which again follow the copy. The buffer on `S`'s own GPU is ordered
//! on `S` directly. PyTorch's cross-device `copy_` makes the same two waits (on the current
//! streams of both devices). A staged copy needs no proxy: its device-to-host copies run on a
//! stream of the source's GPU and its host-to-device copies on one of the destination's.
//!
//! The events of steps 2 and 4 are reused: one per GPU context and thread (re-recording an
//! event does not change waits already queued on it).

mod access;
mod copy;
mod order;
mod path;
mod staged;
mod storage;

pub(crate) use copy::copy_range;
pub use path::{PeerPath, PeerRoute, PEER_PATH_ENV};
pub use staged::STAGE_CHUNK;
pub(crate) use storage::peer_copy_range;
