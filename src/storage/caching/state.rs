//! The caching allocator's state and the steps of its algorithm (PyTorch's
//! `DeviceCachingAllocator` methods of the same names), all run under the allocator's one
//! mutex.

use super::arena::{Arena, BlockId, BlockMeta, Use};
use super::config::CachingConfig;
use super::pool::{FreeKey, FreePool};
use super::sizes::{MIN_BLOCK_SIZE, SMALL_SIZE};
use crate::error::AllocError;
use crate::storage::addr_map::AddrMap;
use crate::storage::allocator::Block;
use crate::storage::arith::to_u64;
use crate::storage::events::{add_stream_use, EventGuarded, StreamEvents};
use crate::storage::failure::{source_failure, try_allocate};
use crate::storage::history::record::{record, Recorder, TraceAction};
use crate::storage::snapshot::{BlockSnapshot, BlockState, SegmentPool, SegmentSnapshot};
use crate::storage::source::{MemorySource, StreamId};
use crate::storage::stats::AllocatorStats;

/// Settings fixed when the allocator is built.
#[derive(Debug)]
pub(crate) struct Limits {
    pub(crate) config: CachingConfig,
    /// Most bytes the allocator may hold (memory fraction of the source's total), if limited.
    pub(crate) allowed_max: Option<usize>,
    /// Reserved bytes above which garbage collection runs, if it is on.
    pub(crate) gc_threshold: Option<usize>,
}

/// Everything behind the allocator's mutex.
///
/// Invariants (besides those of [`Arena`] and [`FreePool`]):
/// - The blocks of a segment tile it: following `next` from the block with no `prev`
///   visits blocks at increasing, adjacent addresses whose sizes sum to the segment's
///   size; all share the segment's stream and pool.
/// - No two neighbouring blocks are both `Free` (freeing merges them).
/// - `allocated` maps the address of every `Allocated` block, and only those, to its id.
/// - A block is `AwaitingEvents` exactly while `event_count > 0` events naming it are
///   queued in `events` (or it is leaked after a failed event record and synchronize).
/// - `stats` current values equal a recount over the blocks.
pub(crate) struct State<E> {
    pub(crate) blocks: Arena,
    pub(crate) small: FreePool,
    pub(crate) large: FreePool,
    pub(crate) allocated: AddrMap<u64, BlockId>,
    pub(crate) events: StreamEvents<E, BlockId>,
    pub(crate) stats: AllocatorStats,
    /// Reused buffer for segments collected before releasing them (no allocation per
    /// call).
    scratch: Vec<BlockId>,
    /// First error recorded by `record_err`.
    pub(crate) error: Option<AllocError>,
    /// The event history, while recording is on (`None`: off, one branch per event).
    pub(crate) recorder: Option<Box<Recorder>>,
}

impl<E> State<E> {
    pub(crate) fn new() -> Self {
        Self {
            blocks: Arena::default(),
            small: FreePool::default(),
            large: FreePool::default(),
            allocated: AddrMap::default(),
            events: StreamEvents::new(),
            stats: AllocatorStats::default(),
            scratch: Vec::new(),
            error: None,
            recorder: None,
        }
    }

    fn pool_mut(&mut self, small: bool) -> &mut FreePool {
        if small {
            &mut self.small
        } else {
            &mut self.large
        }
    }

    /// Takes the best-fitting free block for `size` bytes on `stream` out of its pool, if
    /// one may serve the request (PyTorch's `get_free_block`): blocks of at least
    /// `max_split_size` serve only requests of at least that size, and only when they
    /// exceed the request by less than `max_non_split_rounding`.
    pub(crate) fn get_free_block(
        &mut self,
        limits: &Limits,
        small: bool,
        stream: StreamId,
        size: usize,
    ) -> Option<BlockId> {
        let pool = self.pool_mut(small);
        if limits.gc_threshold.is_some() {
            pool.get_free_calls += 1;
        }
        let (key, id) = pool.lower_bound(stream, size)?;
        let (block_stream, block_size, _) = key;
        if block_stream != stream {
            return None;
        }
        if let Some(max_split) = limits.config.max_split_size() {
            // Do not hand an oversize block to a small request.
            if size < max_split && block_size >= max_split {
                return None;
            }
            // Do not hand an oversize request a block much larger than it.
            let slack = limits.config.max_non_split_rounding();
            if size >= max_split && block_size >= size.saturating_add(slack) {
                return None;
            }
        }
        pool.remove_key(&key);
        Some(id)
    }

    /// Whether serving `size` bytes from free block `id` leaves a remainder worth keeping
    /// (PyTorch's `should_split`): in the small pool one of at least 512 bytes; in the
    /// large pool one of more than 1 MiB, and never from an oversize request.
    pub(crate) fn should_split(&self, id: BlockId, size: usize, limits: &Limits) -> bool {
        let block = self.blocks.get(id);
        let remaining = block.size - size;
        if block.small {
            remaining >= MIN_BLOCK_SIZE
        } else {
            limits.config.max_split_size().is_none_or(|m| size < m) && remaining > SMALL_SIZE
        }
    }

    /// Hands out free block `id` (already out of its pool) for a request of `requested`
    /// bytes rounded to `size`, first splitting off the rest into the pool if `split`
    /// (PyTorch's `alloc_found_block`).
    pub(crate) fn alloc_found_block(
        &mut self,
        id: BlockId,
        size: usize,
        requested: usize,
        split: bool,
    ) -> Block {
        let id = if split {
            self.split_front(id, size)
        } else {
            id
        };
        let block = self.blocks.get_mut(id);
        block.state = Use::Allocated;
        block.requested = requested;
        let handed_out = Block::new(block.addr, block.size, requested, block.stream);
        self.allocated.insert(handed_out.addr(), id);
        self.stats.block_handed_out(handed_out.size(), requested);
        record(
            &mut self.recorder,
            TraceAction::Alloc,
            handed_out.addr(),
            requested,
            handed_out.stream(),
        );
        handed_out
    }

    /// Splits the first `size` bytes of free block `rest` into a new block, puts what
    /// remains of `rest` back in its pool, and returns the new block's id.
    fn split_front(&mut self, rest: BlockId, size: usize) -> BlockId {
        let old = self.blocks.get(rest);
        let mut front = BlockMeta::segment(old.addr, size, old.stream, old.small);
        front.prev = old.prev;
        front.next = Some(rest);
        let front_prev = old.prev;
        let front_id = self.blocks.insert(front);
        if let Some(p) = front_prev {
            self.blocks.get_mut(p).next = Some(front_id);
        }
        let remainder = self.blocks.get_mut(rest);
        remainder.prev = Some(front_id);
        remainder.addr += to_u64(size);
        remainder.size -= size;
        let pool = if remainder.small {
            &mut self.small
        } else {
            &mut self.large
        };
        pool.insert(remainder, rest);
        front_id
    }

    /// Asks the source for a new segment of `alloc_size` bytes (PyTorch's `alloc_block`).
    /// `Ok(None)` when the source (or the memory fraction) is out of memory.
    pub(crate) fn alloc_block<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        limits: &Limits,
        small: bool,
        stream: StreamId,
        alloc_size: usize,
        is_retry: bool,
    ) -> Result<Option<BlockId>, AllocError> {
        if is_retry {
            self.stats.num_alloc_retries += 1;
        }
        if let Some(max) = limits.allowed_max {
            if self.stats.reserved_bytes.current.saturating_add(alloc_size) > max {
                return Ok(None);
            }
        }
        let Some(addr) = try_allocate(source, alloc_size)? else {
            return Ok(None);
        };
        let id = self
            .blocks
            .insert(BlockMeta::segment(addr, alloc_size, stream, small));
        self.stats.segment_added(alloc_size);
        record(
            &mut self.recorder,
            TraceAction::SegmentAlloc,
            addr,
            alloc_size,
            stream,
        );
        Ok(Some(id))
    }

    /// The allocated block `block` names, checked against its size and stream.
    pub(crate) fn lookup(&self, block: &Block) -> Result<BlockId, AllocError> {
        let unknown = AllocError::UnknownBlock { addr: block.addr() };
        match self.allocated.get(&block.addr()) {
            Some(&id) => {
                let meta = self.blocks.get(id);
                if meta.size == block.size() && meta.stream == block.stream() {
                    Ok(id)
                } else {
                    Err(unknown)
                }
            }
            None => Err(unknown),
        }
    }

    /// Adds `stream` to the streams `block` is used on (PyTorch's `recordStream`); uses on
    /// the block's own stream need no event and are ignored.
    pub(crate) fn record_stream(
        &mut self,
        block: &Block,
        stream: StreamId,
    ) -> Result<(), AllocError> {
        let id = self.lookup(block)?;
        let meta = self.blocks.get_mut(id);
        add_stream_use(&mut meta.stream_uses, meta.stream, stream);
        Ok(())
    }

    /// Takes `block` back from its user: into the pool at once, or, if it was used on other
    /// streams, after an event recorded now on each of them completes (PyTorch's `free`).
    /// Returns the block's id (it may since have been merged into a neighbour).
    pub(crate) fn free<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        block: &Block,
    ) -> Result<BlockId, AllocError> {
        // One hash operation on the hot path: remove first, put back if it is not ours.
        let addr = block.addr();
        let id = self
            .allocated
            .remove(&addr)
            .ok_or(AllocError::UnknownBlock { addr })?;
        let meta = self.blocks.get(id);
        if meta.size != block.size() || meta.stream != block.stream() {
            self.allocated.insert(addr, id);
            return Err(AllocError::UnknownBlock { addr });
        }
        let meta = self.blocks.get_mut(id);
        meta.state = Use::AwaitingEvents;
        self.stats.block_given_back(meta.size);
        record(
            &mut self.recorder,
            TraceAction::FreeRequested,
            addr,
            meta.requested,
            meta.stream,
        );
        let recorded = self.events.record(source, None, &mut meta.stream_uses, id);
        self.hold_until_events(source, id, recorded)?;
        Ok(id)
    }

    /// Puts block `id` (freed, no events outstanding) into its pool, merged with free
    /// neighbours (PyTorch's `free_block`). The merged block keeps the id `id`.
    fn free_block(&mut self, id: BlockId) {
        let meta = self.blocks.get(id);
        let (size, requested) = (meta.size, meta.requested);
        record(
            &mut self.recorder,
            TraceAction::FreeCompleted,
            meta.addr,
            requested,
            meta.stream,
        );
        for neighbour in [meta.prev, meta.next].into_iter().flatten() {
            self.try_merge(id, neighbour);
        }
        let meta = self.blocks.get_mut(id);
        meta.state = Use::Free;
        meta.requested = 0;
        let pool = if meta.small {
            &mut self.small
        } else {
            &mut self.large
        };
        pool.insert(meta, id);
        self.stats.block_inactive(size, requested);
    }

    /// Absorbs neighbour `src` into `dst` if `src` is free (PyTorch's `try_merge_blocks`).
    fn try_merge(&mut self, dst: BlockId, src: BlockId) {
        let neighbour = self.blocks.get(src);
        if neighbour.state != Use::Free {
            return;
        }
        let pool = if neighbour.small {
            &mut self.small
        } else {
            &mut self.large
        };
        let removed = pool.remove(neighbour);
        debug_assert!(removed, "free neighbour missing from its pool");
        let neighbour = self.blocks.remove(src);
        let merged = self.blocks.get_mut(dst);
        if merged.prev == Some(src) {
            merged.addr = neighbour.addr;
            merged.prev = neighbour.prev;
            merged.size += neighbour.size;
            if let Some(p) = neighbour.prev {
                self.blocks.get_mut(p).next = Some(dst);
            }
        } else {
            merged.next = neighbour.next;
            merged.size += neighbour.size;
            if let Some(n) = neighbour.next {
                self.blocks.get_mut(n).prev = Some(dst);
            }
        }
    }

    /// Returns whole free segment `id` to the source (PyTorch's `release_block`).
    ///
    /// The caller has synchronized the source since the block was last used.
    fn release_block<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        id: BlockId,
    ) -> Result<(), AllocError> {
        let meta = self.blocks.get(id);
        debug_assert!(meta.is_whole_segment() && meta.state == Use::Free);
        // SAFETY: `meta` is a block with no neighbours, so it spans a whole segment: splits
        // and merges keep the union of a segment's blocks equal to the region `alloc_block`
        // got from `source.allocate(size)` at this address, and no other code path frees
        // it (the block leaves the arena below). It is `Free`: no user holds it and no
        // event guards it. The caller synchronized the source after the block's last use,
        // so no queued work still touches it.
        unsafe { source.free(meta.addr, meta.size) }.map_err(|e| source_failure(source, e))?;
        let meta = self.blocks.remove(id);
        self.pool_mut(meta.small).remove(&meta);
        self.stats.segment_released(meta.size);
        record(
            &mut self.recorder,
            TraceAction::SegmentFree,
            meta.addr,
            meta.size,
            meta.stream,
        );
        Ok(())
    }

    /// Releases the given whole free segments; stops at the first failure.
    fn release_all_of<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        ids: &[BlockId],
    ) -> Result<(), AllocError> {
        ids.iter()
            .try_for_each(|&id| self.release_block(source, id))
    }

    /// Synchronizes, returns every block awaiting events to its pool, then returns every
    /// whole free segment of both pools to the source (PyTorch's `release_cached_blocks`).
    pub(crate) fn release_cached_blocks<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
    ) -> Result<(), AllocError> {
        self.synchronize_and_drain(source)?;
        let mut ids = std::mem::take(&mut self.scratch);
        ids.extend(
            self.small
                .iter()
                .chain(self.large.iter())
                .map(|(_, id)| id)
                .filter(|&id| self.blocks.get(id).is_whole_segment()),
        );
        let result = self.release_all_of(source, &ids);
        ids.clear();
        self.scratch = ids;
        result
    }

    /// Frees cached oversize segments on `stream` to make room for `size` bytes: the
    /// smallest one that alone suffices, else the largest ones until they add up (PyTorch's
    /// `release_available_cached_blocks`). Whether enough was freed. Only with a
    /// `max_split_size`.
    pub(crate) fn release_available_cached_blocks<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        limits: &Limits,
        small: bool,
        stream: StreamId,
        size: usize,
    ) -> Result<bool, AllocError> {
        let Some(max_split) = limits.config.max_split_size() else {
            return Ok(false);
        };
        let want = size.max(max_split);
        let mut ids = std::mem::take(&mut self.scratch);
        let pool = if small { &self.small } else { &self.large };
        let whole = |id: BlockId| self.blocks.get(id).is_whole_segment();
        let mut enough = false;
        match pool.lower_bound(stream, want) {
            Some(((s, _, _), id)) if s == stream => {
                if whole(id) {
                    ids.push(id);
                    enough = true;
                }
            }
            _ => {
                let mut total = 0usize;
                for ((s, block_size, _), id) in pool.below(stream, want) {
                    if total >= want || s != stream || block_size < max_split {
                        break;
                    }
                    if whole(id) {
                        ids.push(id);
                        total += block_size;
                    }
                }
                enough = total >= want;
            }
        }
        let result = if ids.is_empty() {
            Ok(())
        } else {
            source
                .synchronize()
                .map_err(|e| source_failure(source, e))
                .and_then(|()| self.release_all_of(source, &ids))
        };
        ids.clear();
        self.scratch = ids;
        result.map(|()| enough)
    }

    /// Returns long-unused whole segments of the large pool to the source while the
    /// allocator holds more than `threshold` bytes (PyTorch's
    /// `garbage_collect_cached_blocks`): repeatedly frees every candidate at least as old as
    /// the candidates' average age (in `get_free_block` calls since it was cached), until
    /// the excess is reclaimed or nothing more can be freed.
    pub(crate) fn garbage_collect<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        threshold: usize,
    ) -> Result<(), AllocError> {
        let reserved = self.stats.reserved_bytes.current;
        if reserved <= threshold {
            return Ok(());
        }
        let target = reserved - threshold;
        let now = self.large.get_free_calls;
        // (id, age, size); the garbage-collection path may allocate.
        let mut candidates: Vec<(BlockId, u64, usize)> = self
            .large
            .iter()
            .map(|(_, id)| (id, self.blocks.get(id)))
            .filter(|(_, meta)| meta.is_whole_segment())
            .map(|(id, meta)| (id, now - meta.gc_base, meta.size))
            .collect();
        let mut total_age: u64 = candidates.iter().map(|c| c.1).sum();
        let mut reclaimed = 0usize;
        let mut synchronized = false;
        while reclaimed < target && !candidates.is_empty() {
            // Ages are call counts, far below 2^53: the float average is exact enough.
            let average_age = total_age as f64 / candidates.len() as f64;
            let (old, young): (Vec<_>, Vec<_>) = candidates
                .into_iter()
                .partition(|&(_, age, _)| age as f64 >= average_age);
            if old.is_empty() {
                break;
            }
            if !synchronized {
                source
                    .synchronize()
                    .map_err(|e| source_failure(source, e))?;
                synchronized = true;
            }
            for (id, age, size) in old {
                self.release_block(source, id)?;
                reclaimed += size;
                total_age -= age;
            }
            candidates = young;
        }
        Ok(())
    }

    /// The segment containing block `id`: its pool key if it were one whole free block.
    pub(crate) fn segment_key(&self, id: BlockId) -> (bool, FreeKey) {
        let mut head = id;
        while let Some(p) = self.blocks.get(head).prev {
            head = p;
        }
        let first = self.blocks.get(head);
        let mut size = 0;
        let mut cursor = Some(head);
        while let Some(c) = cursor {
            let meta = self.blocks.get(c);
            size += meta.size;
            cursor = meta.next;
        }
        (first.small, (first.stream, size, first.addr))
    }

    /// Releases the segment with pool key `key` if it is one whole free block.
    pub(crate) fn release_if_whole<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        small: bool,
        key: &FreeKey,
    ) -> Result<(), AllocError> {
        let pool = if small { &self.small } else { &self.large };
        match pool.get(key) {
            Some(id) if self.blocks.get(id).is_whole_segment() => self.release_block(source, id),
            _ => Ok(()),
        }
    }

    /// Every segment with its blocks, in address order.
    pub(crate) fn snapshot(&self) -> Vec<SegmentSnapshot> {
        let mut segments: Vec<SegmentSnapshot> = self
            .blocks
            .iter()
            .filter(|(_, meta)| meta.prev.is_none())
            .map(|(head, first)| {
                let mut blocks = Vec::new();
                let mut cursor = Some(head);
                while let Some(c) = cursor {
                    let meta = self.blocks.get(c);
                    blocks.push(BlockSnapshot {
                        addr: meta.addr,
                        size: meta.size,
                        requested: meta.requested,
                        stream: meta.stream,
                        state: match meta.state {
                            Use::Allocated => BlockState::Allocated,
                            Use::AwaitingEvents => BlockState::AwaitingEvents,
                            Use::Free => BlockState::Free,
                        },
                    });
                    cursor = meta.next;
                }
                SegmentSnapshot {
                    addr: first.addr,
                    size: blocks.iter().map(|b| b.size).sum(),
                    stream: first.stream,
                    pool: if first.small {
                        SegmentPool::Small
                    } else {
                        SegmentPool::Large
                    },
                    blocks,
                }
            })
            .collect();
        segments.sort_by_key(|s| s.addr);
        segments
    }
}

impl<E> EventGuarded<E> for State<E> {
    type Key = BlockId;

    fn events_mut(&mut self) -> &mut StreamEvents<E, BlockId> {
        &mut self.events
    }

    fn event_count_mut(&mut self, id: BlockId) -> Option<&mut usize> {
        Some(&mut self.blocks.get_mut(id).event_count)
    }

    fn reuse(&mut self, id: BlockId) {
        self.free_block(id);
    }
}
