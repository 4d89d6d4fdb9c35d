// The crate's front page is the README: the tour in it compiles and runs as a doctest (on a
// machine without a GPU it runs the CPU part and prints `Gpu::new`'s error), so the page a
// newcomer lands on and the README a repository shows say the same and stay correct.
#![doc = include_str!("../README.md")]

// The layers, bottom to top (docs/ARCHITECTURE.md; tests/it/architecture.rs checks that each
// folder imports only from the layers below it).
//
// base
pub mod element;
pub mod error;
mod fs_trust;
mod host_vec;
pub mod layout;
mod memory_location;
mod oom;
// op definitions
pub mod ops;
// tensor types and the backend contract
pub mod device;
pub mod tensor;
// allocator algorithms
pub mod storage;
// the GPU runtime
mod runtime;
// the engines (never import each other), and the collectives beside them
pub mod collective;
// issue 30 (dlpack): DLPack export and import, beside the engines (imports none).
pub mod dlpack;
mod engine_cpu;
mod engine_gpu;
// Caffe's SyncedMemory and Blob
pub mod synced;
// issue 30 (files): tensor files (safetensors, npy, npz), beside `synced` (it saves Blobs).
pub mod io;
// facades: public paths kept where users have them
pub mod gpu;

// The GPU engine's private tests (`engine_gpu/tests/`) name public items as users do.
#[cfg(test)]
extern crate self as typestate_tensor;

pub use device::{Cpu, Device};
pub use element::{DType, Element, FloatElement, Numeric, Signed};
pub use error::{Error, Result};
pub use layout::Layout;
pub use tensor::{Tensor, TensorView, TensorViewMut};

/// The `ndarray` this crate converts to and from (`Tensor::from_ndarray`, `to_ndarray`):
/// use it through this path to get the same version, whatever version your crate depends on.
/// With the `ndarray` feature (on by default).
#[cfg(feature = "ndarray")]
pub use ndarray;

// issue 30 (files)
/// The `half` crate whose `f16` and `bf16` are this crate's half-precision element types: use
/// it through this path (`typestate_tensor::half::f16`) to get the same version.
pub use half;
