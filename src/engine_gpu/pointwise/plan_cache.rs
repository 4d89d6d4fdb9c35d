//! Plans of repeated eager launches, by layout signature: the hot path of a small op.
//!
//! A training loop launches the same op over the same layouts again and again, with new
//! buffers at most. Everything a launch computes from its layouts (the collapse, the form, the
//! index and vector widths, the grid, the kernel, the packed count and offset calculator) is
//! then the same each time; only the operand addresses and the scalars change. So the first
//! launch of a [`Signature`] stores its plan here, and later ones patch the cached arguments
//! in place and launch: no collapse, no planning, no heap allocation, no lock (the cache is
//! per thread; the kernels in it are shared `Arc`s from the process-wide kernel cache).
//!
//! What a signature holds decides what may be cached: the device, the op (name and CUDA
//! expression, by address: a `&'static str` of the op table), the element types, and per
//! operand the view (offset, strides) and the buffer address modulo 16 (vector alignment
//! depends on it); the shape is the output's. Two launches with equal signatures get equal
//! plans. The buffers' lengths are not in it: every launch still checks each view against its
//! buffer. Launches with more than [`MAX_OPERANDS`] operands or a rank above [`MAX_RANK`] are
//! not cached.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::layout::Layout;

use super::args::KernelArgs;
use super::kernel_cache::{LoadedKernel, WordHasher};
use super::source::Operand;

/// Most operands of a cached eager launch (an output and three inputs).
pub(crate) const MAX_OPERANDS: usize = 4;
/// Most operands of any cached launch (a fused kernel's outputs and inputs).
pub(crate) const MAX_LAUNCH_OPERANDS: usize = 12;
/// Highest rank of a cached launch.
pub(crate) const MAX_RANK: usize = 8;
/// Entries kept per thread; the cache is emptied when it would grow past this.
const CAPACITY: usize = 256;
/// Header words, then the shape, then per operand its offset, its address modulo 16 and
/// its strides.
const WORDS: usize = 6 + MAX_RANK + MAX_OPERANDS * (2 + MAX_RANK);

/// Everything a launch's plan depends on, as words (see the module docs).
#[derive(Clone, Copy)]
pub(crate) struct Signature {
    words: [u64; WORDS],
    len: usize,
}

impl Signature {
    /// The signature of a launch of the op named `name` with CUDA expression `expr` on device
    /// `ordinal`, scalars of type `scalar`, over `operands` (type, buffer address, view;
    /// output first, all of one shape); `None` when the launch is too large to cache.
    pub(crate) fn of(
        ordinal: usize,
        name: &'static str,
        expr: &'static str,
        scalar: Operand,
        operands: &[(Operand, u64, &Layout)],
    ) -> Option<Signature> {
        let shape = operands.first()?.2.shape();
        if operands.len() > MAX_OPERANDS || shape.len() > MAX_RANK {
            return None;
        }
        let mut s = Signature {
            words: [0; WORDS],
            len: 0,
        };
        // Element types, one byte each: the scalar's, then each operand's.
        let mut types = u64::from(scalar.dtype as u8);
        for (k, (t, _, _)) in operands.iter().enumerate() {
            types |= u64::from(t.dtype as u8 + 1) << (8 * (k + 1));
        }
        s.push(ordinal as u64);
        s.push(name.as_ptr() as usize as u64);
        s.push(expr.as_ptr() as usize as u64);
        s.push(((name.len() as u64) << 32) | expr.len() as u64);
        s.push(types);
        s.push(((operands.len() as u64) << 8) | shape.len() as u64);
        for &n in shape {
            s.push(n as u64);
        }
        for (_, ptr, layout) in operands {
            s.push(layout.offset() as u64);
            s.push(ptr % 16);
            for &st in layout.strides() {
                s.push(st as u64);
            }
        }
        Some(s)
    }

    fn push(&mut self, w: u64) {
        // `of` checks the operand count and rank, which bound the words to `WORDS`.
        if let Some(slot) = self.words.get_mut(self.len) {
            *slot = w;
            self.len += 1;
        }
    }

    /// The words.
    pub(crate) fn words(&self) -> &[u64] {
        &self.words[..self.len]
    }
}

fn hash(words: &[u64]) -> u64 {
    let mut h = WordHasher::default();
    for &w in words {
        h.write_u64(w);
    }
    h.finish()
}

/// The cached plan of one signature.
pub(crate) struct CachedLaunch {
    /// The kernel, loaded in the signature's device.
    pub(crate) kernel: Arc<LoadedKernel>,
    /// Blocks launched.
    pub(crate) grid: u32,
    /// Threads per block.
    pub(crate) block: u32,
    /// The packed arguments of the launch that made the entry; slots `0..n` are the operand
    /// addresses and slots `n + 1`, `n + 2` the scalars, patched by each launch.
    pub(crate) args: KernelArgs,
    /// Each operand's first element in the collapsed layout, in bytes from its buffer's
    /// start: a launch's address is its buffer's plus this.
    pub(crate) first_byte: [u64; MAX_LAUNCH_OPERANDS],
}

impl CachedLaunch {
    /// The plan of a launch of `kernel` with `grid` blocks of `block` threads and arguments
    /// `args`, whose operands' first elements lie `offsets[k]` elements of `sizes[k]` bytes
    /// into their buffers (the collapsed layout's offsets; the launch computed each
    /// `ptr + offset * size` without overflow).
    pub(crate) fn new(
        kernel: Arc<LoadedKernel>,
        grid: u32,
        block: u32,
        args: KernelArgs,
        offsets: &[usize],
        sizes: &[usize],
    ) -> Self {
        let mut first_byte = [0u64; MAX_LAUNCH_OPERANDS];
        for ((f, &o), &z) in first_byte.iter_mut().zip(offsets).zip(sizes) {
            *f = (o as u64).wrapping_mul(z as u64);
        }
        CachedLaunch {
            kernel,
            grid,
            block,
            args,
            first_byte,
        }
    }
}

/// A bounded map from signatures to values: by hash, with the whole signature kept to tell
/// colliding signatures apart.
struct PlanMap<V> {
    map: HashMap<u64, (Box<[u64]>, V), BuildHasherDefault<IdentityHasher>>,
}

impl<V> PlanMap<V> {
    fn new() -> Self {
        PlanMap {
            map: HashMap::default(),
        }
    }

    fn get_mut(&mut self, words: &[u64]) -> Option<&mut V> {
        let (key, v) = self.map.get_mut(&hash(words))?;
        (**key == *words).then_some(v)
    }

    /// Stores `v` for the signature `words` (replacing a colliding signature's value),
    /// emptying the map first when it is full.
    fn insert(&mut self, words: &[u64], v: V) {
        if self.map.len() >= CAPACITY {
            self.map.clear();
        }
        self.map.insert(hash(words), (words.into(), v));
    }
}

thread_local! {
    static PLANS: RefCell<PlanMap<CachedLaunch>> = RefCell::new(PlanMap::new());
}

/// Runs `f` on the cached plan of the signature `words` (a [`Signature`]'s, or a fused
/// launch's, see `engine_gpu::fused::launch`), if this thread has one; `None` otherwise (and
/// when the cache is in use higher up this thread's stack, which launches never do).
/// Signatures of different kinds of launch never compare equal: a fused launch's words
/// start with a tag no device ordinal takes.
pub(crate) fn with_hit<R>(words: &[u64], f: impl FnOnce(&mut CachedLaunch) -> R) -> Option<R> {
    PLANS.with(|plans| {
        let mut plans = plans.try_borrow_mut().ok()?;
        plans.get_mut(words).map(f)
    })
}

/// Stores `launch` as this thread's plan of the signature `words`.
pub(crate) fn insert(words: &[u64], launch: CachedLaunch) {
    PLANS.with(|plans| {
        if let Ok(mut plans) = plans.try_borrow_mut() {
            plans.insert(words, launch);
        }
    });
}

/// The map's keys are already hashes: pass them through.
#[derive(Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(ptrs: [u64; 2], a: &Layout, name: &'static str) -> Option<Signature> {
        let out = Layout::contiguous(a.shape()).unwrap();
        let f = Operand::of::<f32>();
        Signature::of(
            0,
            name,
            "ts_exp(a)",
            f,
            &[(f, ptrs[0], &out), (f, ptrs[1], a)],
        )
    }

    #[test]
    fn signatures_separate_what_the_plan_depends_on() {
        let a = Layout::contiguous(&[4, 8]).unwrap();
        let base = sig([0x1000, 0x2000], &a, "exp").unwrap();
        // Other buffers with the same alignment: the same plan.
        let moved = sig([0x9000, 0x5010], &a, "exp").unwrap();
        assert_eq!(base.words(), moved.words());
        // Alignment, views, ops, types, devices: different plans.
        let misaligned = sig([0x1000, 0x2004], &a, "exp").unwrap();
        assert_ne!(base.words(), misaligned.words());
        let t = Layout::contiguous(&[8, 4]).unwrap().t();
        assert_ne!(
            base.words(),
            sig([0x1000, 0x2000], &t, "exp").unwrap().words()
        );
        let sliced = Layout::new(&[4, 8], &[8, 1], 8).unwrap();
        assert_ne!(
            base.words(),
            sig([0x1000, 0x2000], &sliced, "exp").unwrap().words()
        );
        assert_ne!(
            base.words(),
            sig([0x1000, 0x2000], &a, "log").unwrap().words()
        );
        let out = Layout::contiguous(&[4, 8]).unwrap();
        let (f, h) = (Operand::of::<f32>(), Operand::of::<half::f16>());
        let f16 = Signature::of(
            0,
            "exp",
            "ts_exp(a)",
            h,
            &[(h, 0x1000, &out), (h, 0x2000, &a)],
        )
        .unwrap();
        assert_ne!(base.words(), f16.words());
        let dev1 = Signature::of(
            1,
            "exp",
            "ts_exp(a)",
            f,
            &[(f, 0x1000, &out), (f, 0x2000, &a)],
        )
        .unwrap();
        assert_ne!(base.words(), dev1.words());
        assert_ne!(hash(base.words()), hash(dev1.words()));
        // Too large to cache.
        let deep = Layout::contiguous(&[1; MAX_RANK + 1]).unwrap();
        assert!(sig([0, 0], &deep, "exp").is_none());
    }

    #[test]
    fn hits_need_the_whole_signature_and_the_map_stays_bounded() {
        let a = Layout::contiguous(&[3, 5]).unwrap();
        let s = sig([0x100, 0x200], &a, "exp").unwrap();
        let mut map = PlanMap::new();
        assert!(map.get_mut(s.words()).is_none());
        map.insert(s.words(), 7u32);
        assert_eq!(map.get_mut(s.words()).copied(), Some(7));
        // Another signature under the same hash is a miss, not a wrong hit.
        let other = sig([0x100, 0x208], &a, "exp").unwrap();
        let (key, v) = map.map.remove(&hash(s.words())).unwrap();
        map.map.insert(hash(other.words()), (key, v));
        assert!(map.get_mut(other.words()).is_none());
        // Bounded: filling past the capacity empties it first.
        for i in 0..(CAPACITY + 3) {
            let l = Layout::new(&[3, 5], &[5, 1], i).unwrap();
            let s = sig([0x100, 0x200], &l, "exp").unwrap();
            map.insert(s.words(), 0);
            assert!(map.map.len() <= CAPACITY);
            assert_eq!(map.get_mut(s.words()).copied(), Some(0));
        }
    }
}
