//! (being written)
pub mod source;
