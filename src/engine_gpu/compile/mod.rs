//! Run-time compilation of CUDA C kernels with NVRTC, and the caches that make each kernel
//! compile once per machine and load once per device.
//!
//! Layers, from the bottom:
//! - [`nvrtc`]: the NVRTC calls. Compiles for the device's own `sm_XY` and returns a CUBIN
//!   (loads with no driver JIT), or PTX for the newest older architecture when this NVRTC
//!   does not know the device ([`Target::choose`]).
//! - [`disk_cache`]: images on disk between processes, keyed by a stable 128-bit hash of
//!   source, options, NVRTC version and target; damaged entries are recompiled, and a
//!   folder or file another user could write is never read.
//! - [`KernelCache`]: process-wide, one image per [`KernelKey`] and one loaded function per
//!   (device ordinal, [`KernelKey`]), built once even when threads race.
//!

pub mod arch;
pub mod disk_cache;
mod disk_entry;
mod disk_sweep;
mod disk_trust;
mod fnv;
pub(crate) mod image;
mod key;
mod module_cache;
pub mod nvrtc;
mod once_map;

pub use arch::Arch;
pub use disk_cache::{Bypass, Distrust};
pub use fnv::Fnv128;
pub use key::KernelKey;
pub use module_cache::{
    device_arch, kernel_cache_stats, kernel_cache_warning, target_for, CacheStats, KernelCache,
};
pub use nvrtc::NvrtcOptions;
