//! (being written)
pub mod allocator;
pub mod source;
