//! The error of a consuming transition: the value comes back unchanged with the reason.

use crate::error::Error;

/// A transition that failed (out of memory, a driver error, a state mismatch) hands its
/// input back unchanged in `value`, so nothing is lost: retry, free memory, or fall back.
///
/// `?` converts it into the crate's [`Error`] (dropping the value) for callers that do not
/// want it back.
pub struct TransitionError<M> {
    /// The value the transition consumed, in its state before the call.
    pub value: M,
    /// Why it failed.
    pub error: Error,
}

impl<M> TransitionError<M> {
    /// Pairs a value with the error that stopped its transition.
    pub fn new(value: M, error: impl Into<Error>) -> Self {
        TransitionError {
            value,
            error: error.into(),
        }
    }

    /// The value, unchanged.
    pub fn into_inner(self) -> M {
        self.value
    }

    /// Why the transition failed.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The value and the error.
    pub fn into_parts(self) -> (M, Error) {
        (self.value, self.error)
    }

    /// Applies `f` to the value, keeping the error (e.g. to rewrap a blob's memory).
    pub fn map<N>(self, f: impl FnOnce(M) -> N) -> TransitionError<N> {
        TransitionError {
            value: f(self.value),
            error: self.error,
        }
    }
}

impl<M> std::fmt::Debug for TransitionError<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransitionError")
            .field("value", &std::any::type_name::<M>())
            .field("error", &self.error)
            .finish()
    }
}

impl<M> std::fmt::Display for TransitionError<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (the value is handed back unchanged)", self.error)
    }
}

impl<M> std::error::Error for TransitionError<M> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<M> From<TransitionError<M>> for Error {
    fn from(e: TransitionError<M>) -> Self {
        e.error
    }
}
