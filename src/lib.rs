//! # typestate-tensor
//!
//! CPU + NVIDIA GPU tensors in which the compiler catches what other libraries only catch at
//! run time: reading stale data, writing while a transfer is in flight, mixing element types
//! or devices, freeing borrowed memory early.
//!
//! The crate rebuilds three proven designs:
//! - Caffe's `SyncedMemory` / `Blob`, with each head state a type ([`synced`]).
//! - MXNet's `Storage` and PyTorch's caching allocators ([`storage`]).
//! - PyTorch THC's strided pointwise `Apply` kernels with `IntDivider` offsets
//!   ([`layout`], [`int_divider`], [`offset_calculator`], [`ops`], [`gpu`]).
//!
//! See the README for a tour and the table mapping Caffe / MXNet / PyTorch names to this API.

pub mod device;
pub mod element;
pub mod error;
pub mod gpu;
pub mod int_divider;
pub mod layout;
pub mod offset_calculator;
pub mod ops;
pub mod storage;
pub mod synced;
pub mod tensor;

pub use device::{Cpu, Device};
pub use element::{DType, Element, FloatElement, Numeric, Signed};
pub use error::{Error, Result};
pub use layout::Layout;
pub use tensor::{Tensor, TensorView, TensorViewMut};
