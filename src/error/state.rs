//! [`StateError`]: the errors of run-time checked state conversions of blobs and their
//! memories (the synced layer), which `?` turns into [`Error::State`](super::Error::State).

use crate::element::DType;

/// Errors of run-time checked state conversions (the erased end of the type-state ladder).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// An erased value was asked to become a state it is not in.
    #[error("expected state {expected}, but the value is in state {actual}")]
    WrongState {
        /// The state asked for.
        expected: &'static str,
        /// The state it is in.
        actual: &'static str,
    },
    /// A GPU-side transition was asked of memory created without a GPU.
    #[error("{op}: this memory is not tied to a GPU; create it with `with_gpu(&gpu, ..)` to use the GPU side")]
    NoGpu {
        /// The operation.
        op: &'static str,
    },
    /// A transition was asked of memory whose asynchronous push may still be running.
    #[error("{op}: an asynchronous push is in flight; call `wait()` first")]
    PushInFlight {
        /// The operation.
        op: &'static str,
    },
    /// Shared (frozen) memory was asked back for exclusive use while other holders remain.
    #[error("{op}: the memory is still shared by {holders} other holder(s); drop them first")]
    StillShared {
        /// The operation.
        op: &'static str,
        /// Other holders alive.
        holders: usize,
    },
    /// A reshape in place was asked to grow past the capacity allocated.
    #[error("{op}: {requested} elements exceed the capacity of {capacity}; use `reshape` (which reallocates) instead")]
    ExceedsCapacity {
        /// The operation.
        op: &'static str,
        /// Elements asked for.
        requested: usize,
        /// Elements allocated.
        capacity: usize,
    },
    /// An erased blob holds another element type than the one asked for.
    #[error("expected element type {expected}, but the value holds {actual}")]
    WrongDType {
        /// Asked for.
        expected: DType,
        /// Held.
        actual: DType,
    },
    /// A run-time blob call ([`crate::synced::DynBlob`]) would write or change the state of
    /// a side that is shared read-only ([`crate::synced::Frozen`]).
    #[error("{op}: the blob's {side} is shared read-only (state {state}), and this call would write it or change its state; convert the blob with `try_into_blob()` and call `thaw_{side}()` first")]
    FrozenSide {
        /// The operation.
        op: &'static str,
        /// `"data"` or `"diff"`.
        side: &'static str,
        /// The side's state, e.g. `"Frozen<HeadAtCpu>"`.
        state: &'static str,
    },
    /// Blob math that needs an initialized side was asked of an uninitialized one (Caffe's
    /// `Update()` of uninitialized data is a fatal error).
    #[error("{op}: the blob's {side} is uninitialized; write it first (Caffe's `Update()` of uninitialized data is a fatal error)")]
    NotInitialized {
        /// The operation.
        op: &'static str,
        /// `"data"` or `"diff"`.
        side: &'static str,
    },
}
