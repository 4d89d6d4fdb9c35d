//! [`Allocation`]: a block that gives itself back to its allocator when dropped.

use std::fmt;
use std::sync::Arc;

use super::allocator::{check_handed_out, Block, DeviceAllocator};
use super::source::StreamId;
use crate::error::AllocError;

/// An owned [`Block`] together with the allocator it came from; dropping it frees the
/// block to the allocator's cache. The storage behind a tensor.
///
/// A failed free in `Drop` cannot be returned; it is handed to the allocator's
/// [`record_err`](DeviceAllocator::record_err) and comes back from
/// [`check_err`](DeviceAllocator::check_err) (cudarc's pattern). `Drop` never panics.
///
/// Invariant: `block` is `Some` from construction until `into_block` or `Drop` takes it.
pub struct Allocation {
    block: Option<Block>,
    allocator: Arc<dyn DeviceAllocator>,
}

impl Allocation {
    /// Allocates `bytes` bytes on `stream` from `allocator`.
    ///
    /// The block is checked for what can be seen of the allocator's contract (at least
    /// `bytes` bytes, `requested() == bytes`, a non-zero address unless empty, on `stream`);
    /// a block that fails is given back to the allocator and the call returns
    /// [`AllocError::BrokenAllocator`].
    pub fn new(
        allocator: &Arc<dyn DeviceAllocator>,
        bytes: usize,
        stream: StreamId,
    ) -> Result<Self, AllocError> {
        let block = allocator.allocate(bytes, stream)?;
        if let Err(reason) = check_handed_out(&block, bytes, stream) {
            if let Err(err) = allocator.free(block) {
                allocator.record_err(err);
            }
            return Err(AllocError::BrokenAllocator {
                allocator: allocator.name(),
                reason,
            });
        }
        // SAFETY: `allocator` just handed `block` out, and nothing else holds it.
        Ok(unsafe { Self::from_block(block, Arc::clone(allocator)) })
    }

    /// Takes ownership of `block`, which `allocator` handed out.
    ///
    /// # Safety
    ///
    /// `block` came from `allocator`'s [`allocate`](DeviceAllocator::allocate) (for instance
    /// through [`into_block`](Self::into_block) of an allocation of that allocator), has not
    /// been given back since, and is owned by the caller alone. Code that trusts an
    /// `Allocation` (its address, its size, that dropping it frees memory no one else uses)
    /// relies on this pairing; the allocator refuses a block it does not know, but a block of
    /// another allocator that happens to name the same memory could not be told apart.
    pub unsafe fn from_block(block: Block, allocator: Arc<dyn DeviceAllocator>) -> Self {
        Self {
            block: Some(block),
            allocator,
        }
    }

    fn block_ref(&self) -> &Block {
        // The invariant guarantees `Some` while `self` exists.
        self.block.as_ref().unwrap_or(&EMPTY)
    }

    /// The block.
    pub fn block(&self) -> &Block {
        self.block_ref()
    }

    /// Start address.
    pub fn addr(&self) -> u64 {
        self.block_ref().addr()
    }

    /// Usable bytes.
    pub fn size(&self) -> usize {
        self.block_ref().size()
    }

    /// Bytes asked for.
    pub fn requested(&self) -> usize {
        self.block_ref().requested()
    }

    /// The stream it was allocated on.
    pub fn stream(&self) -> StreamId {
        self.block_ref().stream()
    }

    /// The allocator it returns to.
    pub fn allocator(&self) -> &Arc<dyn DeviceAllocator> {
        &self.allocator
    }

    /// Marks the memory as used on `stream` too (see
    /// [`DeviceAllocator::record_stream`]).
    pub fn record_stream(&self, stream: StreamId) -> Result<(), AllocError> {
        self.allocator.record_stream(self.block_ref(), stream)
    }

    /// Frees now, returning any error (instead of recording it as `Drop` would).
    pub fn free(mut self) -> Result<(), AllocError> {
        match self.block.take() {
            Some(block) => self.allocator.free(block),
            None => Ok(()),
        }
    }

    /// Gives up ownership: the caller must return the block to
    /// [`allocator`](Self::allocator) itself.
    pub fn into_block(mut self) -> Block {
        self.block.take().unwrap_or(EMPTY)
    }
}

/// Stand-in for the impossible empty case, so accessors need not panic.
const EMPTY: Block = Block::empty(StreamId(0));

impl Drop for Allocation {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            if let Err(err) = self.allocator.free(block) {
                self.allocator.record_err(err);
            }
        }
    }
}

impl fmt::Debug for Allocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Allocation")
            .field("block", self.block_ref())
            .field("allocator", &self.allocator.name())
            .finish()
    }
}

static_assertions::assert_impl_all!(Allocation: Send, Sync);
