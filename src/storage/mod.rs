//! (being written)
pub mod source;
pub mod allocator;
