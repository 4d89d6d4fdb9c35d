//! A pool of free blocks ordered by (stream, size, address): best fit is one ordered lookup
//! (PyTorch's `BlockPool` with `BlockComparatorSize`).

use std::collections::BTreeMap;
use std::ops::Bound;

use super::arena::{BlockId, BlockMeta};
use crate::storage::source::StreamId;

/// Order of free blocks: per stream, smallest first, then lowest address.
pub(crate) type FreeKey = (StreamId, usize, u64);

/// The free blocks of one pool (small or large).
///
/// Invariant: holds exactly the blocks of its pool whose state is `Free`, each under the
/// key of its current (stream, size, address).
#[derive(Debug, Default)]
pub(crate) struct FreePool {
    blocks: BTreeMap<FreeKey, BlockId>,
    /// Calls to `get_free_block` on this pool while garbage collection is on: the clock
    /// block ages are measured in.
    pub(crate) get_free_calls: u64,
}

fn key(meta: &BlockMeta) -> FreeKey {
    (meta.stream, meta.size, meta.addr)
}

impl FreePool {
    /// Adds free block `id`, stamping its garbage-collection age base.
    #[inline]
    pub(crate) fn insert(&mut self, meta: &mut BlockMeta, id: BlockId) {
        meta.gc_base = self.get_free_calls;
        self.blocks.insert(key(meta), id);
    }

    /// Removes `meta`'s entry; whether it was there.
    #[inline]
    pub(crate) fn remove(&mut self, meta: &BlockMeta) -> bool {
        self.blocks.remove(&key(meta)).is_some()
    }

    /// Removes the entry under `key`.
    #[inline]
    pub(crate) fn remove_key(&mut self, key: &FreeKey) {
        self.blocks.remove(key);
    }

    /// The block under exactly `key`, if any.
    #[inline]
    pub(crate) fn get(&self, key: &FreeKey) -> Option<BlockId> {
        self.blocks.get(key).copied()
    }

    /// The first block at or after `(stream, size)`: on `stream`, the smallest of at least
    /// `size` bytes, if the returned key has that stream.
    #[inline]
    pub(crate) fn lower_bound(&self, stream: StreamId, size: usize) -> Option<(FreeKey, BlockId)> {
        self.blocks
            .range((stream, size, 0)..)
            .next()
            .map(|(k, id)| (*k, *id))
    }

    /// Blocks before `(stream, size)`, largest first.
    pub(crate) fn below(
        &self,
        stream: StreamId,
        size: usize,
    ) -> impl Iterator<Item = (FreeKey, BlockId)> + '_ {
        self.blocks
            .range((Bound::Unbounded, Bound::Excluded((stream, size, 0))))
            .rev()
            .map(|(k, id)| (*k, *id))
    }

    /// Every free block, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (FreeKey, BlockId)> + '_ {
        self.blocks.iter().map(|(k, id)| (*k, *id))
    }
}
