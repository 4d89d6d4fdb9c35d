//! Block metadata of the caching allocator, kept in a slab indexed by [`BlockId`].
//!
//! Blocks of a segment form a doubly linked list in address order (PyTorch's `prev` /
//! `next` pointers). Ids instead of pointers keep the structure in safe code, and the slab
//! reuses vacated slots, so steady-state allocation and freeing allocate no memory.

use crate::storage::source::StreamId;

/// Index of a block in the [`Arena`].
pub(crate) type BlockId = usize;

/// What a block is doing (see [`crate::storage::snapshot::BlockState`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// Handed out.
    Allocated,
    /// Freed, waiting for `event_count` events.
    AwaitingEvents,
    /// In its pool.
    Free,
}

/// One block: a piece of a segment.
#[derive(Debug)]
pub(crate) struct BlockMeta {
    pub(crate) addr: u64,
    pub(crate) size: usize,
    /// Bytes asked for (while allocated or awaiting events).
    pub(crate) requested: usize,
    /// The segment's stream; every block of a segment shares it.
    pub(crate) stream: StreamId,
    /// Whether the segment belongs to the small pool.
    pub(crate) small: bool,
    /// Neighbour at lower addresses in the same segment.
    pub(crate) prev: Option<BlockId>,
    /// Neighbour at higher addresses in the same segment.
    pub(crate) next: Option<BlockId>,
    pub(crate) state: Use,
    /// Events still to complete before the block may return to its pool.
    pub(crate) event_count: usize,
    /// Streams other than `stream` the block was used on (`record_stream`), without repeats.
    pub(crate) stream_uses: Vec<StreamId>,
    /// The pool's `get_free_block` call count when the block entered the pool (its age for
    /// garbage collection is the count now minus this).
    pub(crate) gc_base: u64,
}

impl BlockMeta {
    /// A whole fresh segment as one free-to-use block.
    pub(crate) fn segment(addr: u64, size: usize, stream: StreamId, small: bool) -> Self {
        Self {
            addr,
            size,
            requested: 0,
            stream,
            small,
            prev: None,
            next: None,
            state: Use::Free,
            event_count: 0,
            stream_uses: Vec::new(),
            gc_base: 0,
        }
    }

    /// Whether the block is a whole segment (not split).
    pub(crate) fn is_whole_segment(&self) -> bool {
        self.prev.is_none() && self.next.is_none()
    }
}

/// Slab of [`BlockMeta`].
///
/// Invariant: every id stored anywhere in the allocator (pools, address map, event queues,
/// `prev` / `next`) names an occupied slot.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    slots: Vec<Option<BlockMeta>>,
    vacant: Vec<BlockId>,
}

impl Arena {
    /// Stores `meta`, returning its id.
    #[inline]
    pub(crate) fn insert(&mut self, meta: BlockMeta) -> BlockId {
        if let Some(id) = self.vacant.pop() {
            self.slots[id] = Some(meta);
            id
        } else {
            self.slots.push(Some(meta));
            self.slots.len() - 1
        }
    }

    /// Removes block `id`, returning its metadata.
    #[inline]
    pub(crate) fn remove(&mut self, id: BlockId) -> BlockMeta {
        let meta = self.slots[id].take().expect(DANGLING);
        self.vacant.push(id);
        meta
    }

    /// Block `id`.
    #[inline]
    pub(crate) fn get(&self, id: BlockId) -> &BlockMeta {
        self.slots[id].as_ref().expect(DANGLING)
    }

    /// Block `id`, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: BlockId) -> &mut BlockMeta {
        self.slots[id].as_mut().expect(DANGLING)
    }

    /// Every block with its id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (BlockId, &BlockMeta)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(id, slot)| slot.as_ref().map(|m| (id, m)))
    }
}

/// The arena invariant is internal: breaking it is a bug in this module, not a user error.
const DANGLING: &str = "caching allocator bug: block id names an empty slot";
