//! Caffe's `SyncedMemory` and `Blob` with each head state a type.

mod accel;
mod any;
pub mod blob;
mod gpu_side;
pub mod host;
mod push;
mod raw;
mod shared;
pub mod state;
mod synced_memory;
mod transition_error;

pub use any::AnySyncedMemory;
pub use blob::{
    Blob, BlobElement, BlobShape, BlobSide, DynBlob, Frozen, MathPlace, MathSide, OwnedSide,
    Reshaped, SideState, UpdateWith,
};
pub use host::{HostBuffer, HostSlot, OwnedHost, OwnsHost};
pub use raw::TransferStats;
pub use shared::SharedMemory;
pub use state::{
    CpuReadable, CpuWritable, GpuReadable, GpuWritable, Head, HeadAtCpu, HeadAtGpu, HeadState,
    InFlight, Settled, Synced, ToCpu, ToGpu, Uninitialized,
};
pub use synced_memory::{BorrowedSyncedMemory, SyncedMemory};
pub use transition_error::TransitionError;
