//! [`AllocError`] and its [`ConfigValueError`]: the errors of allocators, memory sources and
//! their configuration (the storage layer), which `?` turns into
//! [`Error::Alloc`](super::Error::Alloc).

use crate::oom::OutOfMemoryError;

/// Errors from allocators and memory sources.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocError {
    /// The request could not be met even after freeing cached memory and retrying.
    ///
    /// The message reads like PyTorch's: how much was asked, the device's total and free
    /// memory, what this allocator holds (allocated, and reserved but unallocated), then
    /// the [`OomHint`](super::OomHint)s that apply, each naming a setting to try. (Boxed: the numbers and
    /// hints would otherwise make every `Result` of the crate larger.)
    #[error(transparent)]
    OutOfMemory(Box<OutOfMemoryError>),
    /// A host buffer of `elements` elements of `elem_size` bytes would exceed `isize::MAX`
    /// bytes, the most one allocation may hold.
    #[error(
        "{device}: a buffer of {elements} elements of {elem_size} bytes exceeds isize::MAX bytes"
    )]
    TooLarge {
        /// Which device or source.
        device: String,
        /// Elements asked for.
        elements: usize,
        /// Bytes per element.
        elem_size: usize,
    },
    /// The requested size overflows when rounded up.
    #[error("allocation of {requested} bytes overflows when rounded")]
    SizeOverflow {
        /// Bytes asked for.
        requested: usize,
    },
    /// A configuration string could not be parsed (its `key:value,key:value` syntax is
    /// broken).
    #[error("invalid allocator configuration {input:?}: {reason}")]
    InvalidConfig {
        /// The text given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A configuration entry this allocator cannot use: an unknown key, a key of another
    /// allocator or pool type, or a key given twice (the earlier value would be dropped).
    #[error("invalid allocator configuration {input:?}: key {key:?} {reason}")]
    UnusableConfigKey {
        /// The configuration text (for settings made in code, `key:value`).
        input: String,
        /// The key.
        key: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A configuration setting, from text or from a builder, has a value out of its range
    /// (boxed: the key, the value and the text would make every error larger).
    #[error(transparent)]
    InvalidConfigValue(Box<ConfigValueError>),
    /// A block was returned that this allocator does not own (a double free or foreign block).
    #[error("block at {addr:#x} is not owned by this allocator")]
    UnknownBlock {
        /// The block's address.
        addr: u64,
    },
    /// An allocator handed out a block that breaks the
    /// [`DeviceAllocator`](crate::storage::DeviceAllocator) contract in a way that can be
    /// seen (smaller than asked, at address 0, on another stream); the block was given back.
    #[error("allocator {allocator} broke its contract: {reason}")]
    BrokenAllocator {
        /// The allocator's name.
        allocator: &'static str,
        /// What was wrong with the block.
        reason: String,
    },
    /// The memory source (driver) failed for a reason other than out-of-memory.
    #[error("memory source failed: {0}")]
    Source(String),
}

/// A configuration setting with a value out of its range
/// ([`AllocError::InvalidConfigValue`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid allocator configuration {input:?}: {key} = {value}: {reason}")]
pub struct ConfigValueError {
    /// The configuration text (for settings made in code, `key:value`).
    pub input: String,
    /// The setting.
    pub key: String,
    /// The value given, as written.
    pub value: String,
    /// The rule it breaks.
    pub reason: String,
}
