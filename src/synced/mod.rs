//! Caffe's `SyncedMemory` and `Blob` with each head state a type.

mod accel;
mod any;
pub mod host;
mod raw;
pub mod state;
mod synced_memory;
mod transition_error;

pub use any::AnySyncedMemory;
pub use host::{HostBuffer, HostSlot, OwnedHost};
pub use raw::TransferStats;
pub use state::{
    CpuReadable, CpuWritable, GpuReadable, GpuWritable, Head, HeadAtCpu, HeadAtGpu, HeadState,
    InFlight, Settled, Synced, ToCpu, ToGpu, Uninitialized,
};
pub use synced_memory::{BorrowedSyncedMemory, SyncedMemory};
pub use transition_error::TransitionError;
