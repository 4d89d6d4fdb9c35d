//! (being written)
pub mod compile;
pub mod pointwise;
