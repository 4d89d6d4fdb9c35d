//! The crate's error type: [`Error`], with one enum per layer that can fail.
//!
//! [`Error`] is `#[non_exhaustive]` and names one enum per layer, each in its own file:
//! [`LayoutError`] (shapes, views and op arguments: `layout.rs`), [`AllocError`] (allocators
//! and memory sources: `alloc.rs`), [`GpuError`] (the driver, NVRTC, streams and graphs:
//! `gpu.rs`), [`StateError`] (run-time checked blob states: `state.rs`) and [`NcclError`]
//! (collectives: `nccl.rs`). A caller can match a whole layer at once, `?` turns each into
//! [`Error`] (`From`, written by `thiserror`'s `#[from]`), and every variant carries what is
//! needed to fix the call: the op, the shapes, the dims, the sizes.
//!
//! The enums live here, in the base layer, rather than in the layers that raise them:
//! [`Error`] names every one of them, and the base layer imports nothing above it
//! (docs/ARCHITECTURE.md), so an enum defined in `storage/` or `collective/` would make
//! `Error` import upward. Each file holds one layer's enum and is used by that layer; the
//! files import nothing of each other but what a variant carries (`GpuError` wraps an
//! [`AllocError`]).

mod alloc;
// issue 30 (dlpack): DLPack import and export errors.
mod dlpack;
mod gpu;
// issue 30 (files): tensor files.
mod io;
mod layout;
mod nccl;
mod state;

pub use alloc::{AllocError, ConfigValueError};
pub use dlpack::DlpackError;
pub use gpu::GpuError;
pub use io::IoError; // issue 30 (files)
pub use layout::LayoutError;
pub use nccl::NcclError;
pub use state::StateError;

use crate::element::DType;
pub use crate::oom::{OomHint, OutOfMemoryError};

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error this crate returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A shape, stride, view or broadcast was invalid.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// An allocator could not satisfy a request.
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// The GPU, its driver or NVRTC failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A run-time checked state conversion (erased blobs) did not match.
    #[error(transparent)]
    State(#[from] StateError),
    /// NCCL, a communicator or a collective's arguments failed (docs/COLLECTIVES.md).
    #[error(transparent)]
    Nccl(#[from] NcclError),
    /// Two operands have different element types where one was required (run-time paths only;
    /// typed paths make this a compile error).
    #[error("{op}: element type mismatch, expected {expected}, got {got}")]
    DTypeMismatch {
        /// The operation.
        op: &'static str,
        /// The type the operation needed.
        expected: DType,
        /// The type it got.
        got: DType,
    },
    // issue 30 (files): tensor files (`crate::io`).
    /// A tensor file could not be read or written (safetensors, npy, npz: `crate::io`).
    /// Boxed: its variants carry paths, names and shapes, and `Error` stays small for every
    /// `Result` of the crate.
    #[error(transparent)]
    Io(#[from] Box<IoError>),
    // issue 30 (dlpack)
    /// A DLPack tensor could not be imported or exported as asked (`crate::dlpack`). Boxed:
    /// its layout variant would make every `Result` of the crate larger.
    #[error(transparent)]
    Dlpack(Box<DlpackError>),
}

// issue 30 (files): `?` on an `IoError`.
impl From<IoError> for Error {
    fn from(e: IoError) -> Error {
        Error::Io(Box::new(e))
    }
}

// issue 30 (dlpack): `?` on a `DlpackError`.
impl From<DlpackError> for Error {
    fn from(e: DlpackError) -> Self {
        Error::Dlpack(Box::new(e))
    }
}

/// A consuming call that failed (a transition that ran out of memory, hit a driver error or
/// a state mismatch; a constructor given parts that do not fit) hands its input back
/// unchanged in `value`, so nothing is lost: retry, free memory, or fall back.
///
/// `?` converts it into the crate's [`Error`] (dropping the value) for callers that do not
/// want it back. [`crate::synced::TransitionError`] is this type under the name the
/// type-state API uses.
pub struct Handback<M> {
    /// The value the call consumed, in its state before the call.
    pub value: M,
    /// Why it failed.
    pub error: Error,
}

impl<M> Handback<M> {
    /// Pairs a value with the error that stopped the call.
    pub fn new(value: M, error: impl Into<Error>) -> Self {
        Handback {
            value,
            error: error.into(),
        }
    }

    /// The value, unchanged.
    pub fn into_inner(self) -> M {
        self.value
    }

    /// Why the call failed.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The value and the error.
    pub fn into_parts(self) -> (M, Error) {
        (self.value, self.error)
    }

    /// Applies `f` to the value, keeping the error (e.g. to rewrap a blob's memory).
    pub fn map<N>(self, f: impl FnOnce(M) -> N) -> Handback<N> {
        Handback {
            value: f(self.value),
            error: self.error,
        }
    }
}

impl<M> std::fmt::Debug for Handback<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handback")
            .field("value", &std::any::type_name::<M>())
            .field("error", &self.error)
            .finish()
    }
}

impl<M> std::fmt::Display for Handback<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (the value is handed back unchanged)", self.error)
    }
}

impl<M> std::error::Error for Handback<M> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<M> From<Handback<M>> for Error {
    fn from(e: Handback<M>) -> Self {
        e.error
    }
}
