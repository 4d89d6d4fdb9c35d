//! [`Blob`]: Caffe's N-D array of data and gradients (diff), each a synced memory with its
//! own head state in the type.
//!
//! `Blob<T, D, G>` has the data side in state `D` and the diff side in state `G` (which
//! defaults to `D`), so `Blob<f32, HeadAtCpu>` is a blob whose data and diff are both current
//! on the CPU. A side may also be [`Frozen`]: shared read-only with other blobs (Caffe's
//! `ShareData` / `ShareDiff`).
//!
//! | Caffe | here |
//! |---|---|
//! | `Blob(shape)`, `Blob(n, c, h, w)` | [`Blob::new`], [`Blob::legacy`] (CPU-only) |
//! | `cpu_data()`, `gpu_data()` | [`into_cpu_data()`](Blob::into_cpu_data) / `into_gpu_data()`, then [`cpu_data()`](Blob::cpu_data) / `gpu_data()` |
//! | `mutable_cpu_data()` | [`into_cpu_data_mut()`](Blob::into_cpu_data_mut), then [`cpu_data_mut()`](Blob::cpu_data_mut) |
//! | `cpu_diff()`, `mutable_cpu_diff()`, ... | the same with `diff` |
//! | `Reshape(shape)` | [`reshape`](Blob::reshape) (may reallocate: returns [`Reshaped`]), [`reshape_in_place`](Blob::reshape_in_place) |
//! | `ShareData(other)`, `ShareDiff(other)` | [`freeze_data`](Blob::freeze_data) + [`with_shared_data`](Blob::with_shared_data) (and `diff`) |
//! | `shape()`, `count()`, `num()`, `offset()`, `CanonicalAxisIndex()` | [`shape()`](Blob::shape) ([`BlobShape`]) |
//! | `Update()`, `scale_data()`, `asum_diff()`, ... | [`update()`](Blob::update), [`scale_data()`](Blob::scale_data), [`asum_diff()`](Blob::asum_diff), ...; through `&mut` where the state stays: [`update_in_place()`](Blob::update_in_place), [`scale_data_in_place()`](Blob::scale_data_in_place), [`sgd_update_in_place()`](Blob::sgd_update_in_place) |
//! | `caffe_cpu_gemm(.., mutable_cpu_data())`, `caffe_gpu_gemm(.., mutable_gpu_diff())` | [`cpu_gemm_data`](Blob::cpu_gemm_data), [`gpu_gemm_diff`](Blob::gpu_gemm_diff), ...; on any views [`caffe_gemm`] |
//! | a net's blobs in any state, Caffe's run-time calls | [`DynBlob`] (`erase()`, then `cpu_data()`, `update()`, ...; [`try_into_blob`](DynBlob::try_into_blob) back) |

mod base;
mod collective;
mod construct;
mod dyn_blob;
// Caffe's gemm on views and blobs (issue 27).
mod gemm;
mod math;
mod peer;
mod shape;
mod side;
mod transitions;
mod views;

pub use base::Blob;
pub use collective::CollectiveSide;
pub use construct::Reshaped;
pub use dyn_blob::{DynBlob, TypedBlobOnly};
pub use gemm::{caffe_gemm, Transpose};
pub use math::{BlobElement, DiffOnCpu, DiffOnGpu, InPlaceMath, MathPlace, MathSide, UpdateWith};
pub use shape::BlobShape;
pub use side::{BlobSide, Frozen, OwnedSide, SideState};
