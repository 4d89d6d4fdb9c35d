//! Collectives across GPUs through NCCL: all-reduce (sum, average, max, min, product),
//! broadcast, all-gather and reduce-scatter on GPU tensors and on the data and diffs of
//! [`Blob`](crate::synced::Blob)s, in place and out of place (docs/COLLECTIVES.md).
//!
//! NCCL is loaded at run time, like libcuda: the crate builds and its tests pass with no
//! NCCL installed, and a missing libnccl is [`NcclError::NoLibrary`](crate::error::NcclError::NoLibrary),
//! never a panic ([`available`] says whether it is there).
//!
//! Two ways to start:
//!
//! - **One process, every local GPU**: [`LocalGroup::new`] (`ncclCommInitAll`). Each
//!   collective takes one buffer per rank and issues all ranks' calls in one NCCL group.
//! - **One process per GPU**, on one host or several: [`Communicator::from_env`] reads
//!   `RANK`, `WORLD_SIZE` and `LOCAL_RANK` as `torchrun` sets them ([`RankEnv`]) and the
//!   unique id from a file written by rank 0 ([`ID_FILE_VAR`]) or a variable ([`ID_VAR`]);
//!   [`Communicator::init_rank`] takes them as arguments.
//!
//! Every collective runs on the stream of the memory it writes (or one set with
//! `set_stream`), ordered with the buffers' work on any other stream by the buffers' own
//! stream-order tracking (docs/STREAMS.md), and launches under THC's free lock, which every
//! `cuMemFree` also takes. Layer: above the GPU runtime and the tensors, beside the engines
//! (docs/ARCHITECTURE.md); all raw NCCL calls are in `nccl.rs`.
//!
//! ```no_run
//! use typestate_tensor::collective::{LocalGroup, ReduceOp};
//! use typestate_tensor::synced::{Blob, Uninitialized};
//!
//! # fn main() -> typestate_tensor::Result<()> {
//! let mut group = LocalGroup::all_gpus()?;
//! // One replica of a blob per GPU, its diff written on the GPU (here: zeros).
//! let mut blobs = Vec::new();
//! for gpu in group.gpus() {
//!     let blob = Blob::<f32, Uninitialized>::with_gpu(&gpu, &[256])?;
//!     blobs.push(blob.into_gpu_data()?.into_gpu_diff_mut()?);
//! }
//! // Average the diffs across the GPUs, then Caffe's update (data -= diff) on each.
//! let blobs = group.all_reduce_diffs(blobs, ReduceOp::Avg)?;
//! let updated = blobs.into_iter().map(|b| b.update()).collect::<Result<Vec<_>, _>>()?;
//! # Ok(()) }
//! ```

mod comm;
mod element;
mod env;
mod group;
mod id;
pub(crate) mod launch;
mod nccl;
mod op;
mod rank;
pub(crate) mod verbs;

pub use comm::Communicator;
pub use element::NcclElement;
pub use env::{RankEnv, DEFAULT_ID_TIMEOUT, ID_FILE_VAR, ID_TIMEOUT_VAR, ID_VAR};
pub use group::LocalGroup;
pub use id::UniqueId;
pub use op::ReduceOp;

/// Whether libnccl can be loaded here and is a version the collectives support (2.10 to
/// 2.30). Never panics.
pub fn available() -> bool {
    nccl::available()
}

/// The version of the NCCL library loaded, `(major, minor, patch)`, or why none can be used
/// ([`NcclError::NoLibrary`](crate::error::NcclError::NoLibrary),
/// [`NcclError::UnsupportedVersion`](crate::error::NcclError::UnsupportedVersion)).
pub fn version() -> Result<(u32, u32, u32), crate::error::NcclError> {
    nccl::version()
}
