//! Caffe's `SyncedMemory` and `Blob` with each head state a type.
//!
//! A [`SyncedMemory<T, S>`] holds a CPU copy and a GPU copy, each allocated on first use and
//! copied only when stale, exactly as Caffe's does; its head state `S` ([`Uninitialized`],
//! [`HeadAtCpu`], [`HeadAtGpu`], [`Synced`], [`InFlight`]) is a type, so reading a stale side,
//! writing a side that is not the head, or touching a buffer during an asynchronous copy does
//! not compile, and the error names the call to make. Transitions consume the memory and
//! return it in its next state; a failed one hands it back in a [`TransitionError`].
//!
//! ```
//! use typestate_tensor::synced::{HeadAtCpu, SyncedMemory, Uninitialized};
//!
//! # fn main() -> typestate_tensor::Result<()> {
//! let m = SyncedMemory::<f32, Uninitialized>::new(4)?; // nothing allocated yet
//! let mut m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut()?; // zero-filled CPU copy
//! m.cpu_mut().copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
//! assert_eq!(m.cpu(), &[1.0, 2.0, 3.0, 4.0]);
//! assert_eq!(m.stats().copies(), 0);
//! # Ok(())
//! # }
//! ```
//!
//! On top: [`Blob`] (data and diff, each with its own state, Caffe's shape arithmetic and
//! blob math), read-only sharing ([`SharedMemory`], [`Frozen`]), borrowed external buffers
//! ([`BorrowedSyncedMemory`]) and the erased end of the ladder ([`AnySyncedMemory`],
//! [`DynBlob`]). `docs/TYPESTATE.md` teaches the states with a diagram and maps every Caffe
//! call.

mod accel;
mod any;
pub mod blob;
mod gpu_side;
pub mod host;
mod peer;
mod push;
mod raw;
mod shared;
pub mod state;
mod synced_memory;
mod transition_error;

pub use any::AnySyncedMemory;
pub use blob::{
    Blob, BlobElement, BlobShape, BlobSide, CollectiveSide, DiffOnCpu, DiffOnGpu, DynBlob, Frozen,
    InPlaceMath, MathPlace, MathSide, OwnedSide, Reshaped, SideState, TypedBlobOnly, UpdateWith,
};
pub use host::{HostBuffer, HostSlot, OwnedHost, OwnsHost};
pub use raw::TransferStats;
pub use shared::{SameElement, SharedMemory};
pub use state::{
    CpuReadable, CpuWritable, GpuReadable, GpuWritable, Head, HeadAtCpu, HeadAtGpu, HeadState,
    InFlight, Settled, Synced, ToCpu, ToGpu, Uninitialized,
};
pub use synced_memory::{BorrowedSyncedMemory, SyncedMemory};
pub use transition_error::TransitionError;
