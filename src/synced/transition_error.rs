//! The error of a consuming transition: the value comes back unchanged with the reason.

/// A transition that failed (out of memory, a driver error, a state mismatch) hands its
/// input back unchanged in `value`, so nothing is lost: retry, free memory, or fall back.
/// The crate's [`Handback`](crate::error::Handback) under the name the type-state API uses.
pub type TransitionError<M> = crate::error::Handback<M>;
