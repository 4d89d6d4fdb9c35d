//! (being written)
pub mod compile;
