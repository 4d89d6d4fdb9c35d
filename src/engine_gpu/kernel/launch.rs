//! The launch: a complete [`LaunchPlan`] (kernel, grid, block, frozen arguments), the
//! per-thread cache of plans that makes a repeated small op cheap, and the one driver call
//! every generated kernel goes through ([`launch_kernel`]).
//!
//! A training loop launches the same op over the same layouts again and again, with new
//! buffers at most. Everything a launch computes from its layouts (the collapse, the form, the
//! index and vector widths, the grid, the kernel, the packed count and offset calculator) is
//! then the same each time; only the operand addresses and the scalars change. So the first
//! launch of a signature (its words: `pointwise::signature`, `fused::signature`) keeps its
//! plan here, and later ones patch the plan's arguments in place and launch
//! ([`launch_cached`]): no collapse, no planning, no heap allocation, no lock (the cache is
//! per thread; the kernels in it are shared `Arc`s from the process-wide kernel cache).
//!
//! What a signature holds decides what may be cached: two launches with equal words get
//! equal plans. A plan also keeps, per operand, the shortest buffer its view fits in, so a hit
//! checks each buffer's length with one comparison (the view is the one the plan was made
//! for, checked in full then). Launches with more than [`MAX_LAUNCH_OPERANDS`] operands are
//! not cached.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::error::Error;
use crate::layout::Layout;
use crate::runtime::driver;

use super::args::{KernelArgs, LaunchArgs};
use super::cache::{LoadedKernel, WordHasher};
use super::profile::{Lap, Stage};

/// Most operands of any cached launch (a fused kernel's outputs and inputs).
pub(crate) const MAX_LAUNCH_OPERANDS: usize = 12;
/// Plans kept per thread; the cache is emptied when it would grow past this.
pub(crate) const CAPACITY: usize = 256;

/// A launch's signature words and their hash, computed once.
#[derive(Clone, Copy)]
pub(crate) struct PlanKey<'a> {
    hash: u64,
    words: &'a [u64],
}

impl<'a> PlanKey<'a> {
    /// The key of `words`.
    pub(crate) fn new(words: &'a [u64]) -> Self {
        let mut h = WordHasher::default();
        for &w in words {
            h.write_u64(w);
        }
        PlanKey {
            hash: h.finish(),
            words,
        }
    }

    /// The key of `words` whose [`WordHasher`] hash, word by word, the caller computed while
    /// writing them. A wrong hash costs only hits: the cache compares the words themselves.
    pub(crate) fn hashed(hash: u64, words: &'a [u64]) -> Self {
        PlanKey { hash, words }
    }

    /// The words.
    #[cfg(test)]
    pub(crate) fn words(&self) -> &[u64] {
        self.words
    }

    /// The hash.
    #[cfg(test)]
    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }
}

/// Everything one launch needs besides its stream: the loaded kernel, grid and block, and its
/// frozen arguments, with what a repeated launch patches (each operand's address is its
/// buffer's plus `first_byte`; the scalars follow the count) and checks (each buffer holds at
/// least `min_len` elements).
pub(crate) struct LaunchPlan {
    kernel: Arc<LoadedKernel>,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    args: LaunchArgs,
    operands: usize,
    first_byte: [u64; MAX_LAUNCH_OPERANDS],
    min_len: [usize; MAX_LAUNCH_OPERANDS],
}

impl LaunchPlan {
    /// The plan of a launch of `kernel` with `grid` blocks of `block` threads and arguments
    /// `args` (operand addresses first, then the count, then the scalars), over operands whose
    /// views are `views` (uncollapsed, one per operand) and whose first elements lie
    /// `offsets[k]` elements of `sizes[k]` bytes into their buffers (the collapsed layout's
    /// offsets; the launch computed each `ptr + offset * size` without overflow).
    pub(crate) fn new<'v>(
        kernel: Arc<LoadedKernel>,
        grid: u32,
        block: u32,
        args: KernelArgs,
        views: impl IntoIterator<Item = &'v Layout>,
        offsets: &[usize],
        sizes: &[usize],
    ) -> Self {
        let mut first_byte = [0u64; MAX_LAUNCH_OPERANDS];
        for ((f, &o), &z) in first_byte.iter_mut().zip(offsets).zip(sizes) {
            *f = (o as u64).wrapping_mul(z as u64);
        }
        let mut min_len = [usize::MAX; MAX_LAUNCH_OPERANDS];
        let mut operands = 0;
        for (m, view) in min_len.iter_mut().zip(views) {
            // The highest index the view reaches, plus one: `check_within`'s bound.
            *m = view
                .offset_range()
                .map_or(0, |(_, hi)| hi.saturating_add(1));
            operands += 1;
        }
        LaunchPlan {
            kernel,
            grid: (grid, 1, 1),
            block: (block, 1, 1),
            args: LaunchArgs::new(args),
            operands,
            first_byte,
            min_len,
        }
    }

    /// Puts a launch's operand addresses (`ptrs[k]` plus the plan's first-element offset)
    /// and scalars (`(word, bytes)`, after the count) into the arguments. `false`, leaving
    /// the launch to the uncached path (which reports the error), when the operand count
    /// differs, a buffer (`lens[k]` elements) is too short for its view, an address
    /// overflows, or a scalar's size is not the plan's. A `false` may leave some words
    /// patched: every launch patches every operand and scalar before it launches.
    #[inline]
    fn patch(
        &self,
        ptrs: &[u64],
        lens: &[usize],
        scalars: impl IntoIterator<Item = (u64, usize)>,
    ) -> bool {
        if ptrs.len() != self.operands || lens.len() != self.operands {
            return false;
        }
        // Every buffer checked before any word changes.
        if lens.iter().zip(&self.min_len).any(|(len, min)| len < min) {
            return false;
        }
        for (k, &ptr) in ptrs.iter().enumerate() {
            let Some(addr) = ptr.checked_add(self.first_byte[k]) else {
                return false;
            };
            if !self.args.set_word(k, addr, 8) {
                return false;
            }
        }
        for (j, (word, len)) in scalars.into_iter().enumerate() {
            if !self.args.set_word(self.operands + 1 + j, word, len) {
                return false;
            }
        }
        true
    }

    /// Launches the plan with the arguments it holds.
    ///
    /// # Safety
    /// As [`launch_kernel`] for the plan's kernel and arguments.
    pub(crate) unsafe fn launch(&mut self, stream: &CudaStream) -> Result<(), Error> {
        // SAFETY: forwarded from this function's contract.
        unsafe { launch_kernel(stream, &self.kernel, self.grid, self.block, &mut self.args) }
    }
}

/// Launches `plan` (an uncached launch's, its arguments holding this launch's addresses and
/// scalars), then keeps it as this thread's plan of `key`.
///
/// # Safety
/// As [`launch_kernel`]; and the plan is what an uncached launch of any operands with the
/// signature `key` plans (the same kernel, grid, count and offset calculator), with `views`
/// given to [`LaunchPlan::new`] the launch's own.
pub(crate) unsafe fn launch_and_keep(
    stream: &CudaStream,
    key: PlanKey<'_>,
    mut plan: LaunchPlan,
) -> Result<(), Error> {
    // SAFETY: forwarded from this function's contract.
    unsafe { plan.launch(stream) }?;
    // A thread being torn down (a launch from a thread-local's destructor) has no plan cache
    // left: the launch above stands, only the plan is not kept.
    let _ = PLANS.try_with(|plans| {
        if let Ok(mut plans) = plans.try_borrow_mut() {
            plans.insert(key, plan);
        }
    });
    Ok(())
}

/// Launches the plan this thread keeps for `key`, with this launch's buffer addresses `ptrs`
/// and lengths `lens` (operands in the signature's order) and `scalars` patched in; laps
/// [`Stage::CacheHit`] after the patch and [`Stage::Driver`] after the driver call. `None`
/// when there is no such plan or the patch does not fit it: the caller then takes the
/// uncached path, which reports any error.
///
/// # Safety
/// The launch's operand views are the ones the signature was made from (so each reaches only
/// the elements the plan's checked view does, and the plan's length check is
/// `check_within`'s), each buffer's address and length are in `ptrs` and `lens`, and each
/// buffer stays allocated until the kernel has run (stream order); the aliasing rules of the
/// uncached launch that made the plan hold for these buffers; `scalars` are the launch's, of
/// the types in the signature.
pub(crate) unsafe fn launch_cached(
    stream: &CudaStream,
    key: PlanKey<'_>,
    ptrs: &[u64],
    lens: &[usize],
    scalars: impl IntoIterator<Item = (u64, usize)>,
    lap: &mut Lap,
) -> Option<Result<(), Error>> {
    // No plan cache (a thread being torn down) is a miss: the uncached path launches.
    PLANS
        .try_with(|plans| {
            let mut plans = plans.try_borrow_mut().ok()?;
            let plan = plans.get_mut(key)?;
            if !plan.patch(ptrs, lens, scalars) {
                return None;
            }
            lap.lap(Stage::CacheHit);
            // SAFETY: the plan was made by an uncached launch with this signature: the same
            // kernel, form, count and offset calculator over the same views and address
            // alignments, its views checked within their buffers. `patch` put in this launch's
            // addresses (each buffer's address plus the same first-element offset) and scalars,
            // after checking each buffer is at least as long as the view needs, so every access
            // stays inside live buffers (this function's contract).
            let launched = unsafe { plan.launch(stream) };
            lap.lap(Stage::Driver);
            Some(launched)
        })
        .ok()
        .flatten()
}

/// The driver call of every generated kernel: `driver::launch_kernel_programmatic`
/// (`cuLaunchKernelEx` with programmatic stream serialization) when the kernel waits for
/// its predecessor ([`LoadedKernel::pdl`], [`super::pdl`]), else `driver::launch_kernel`
/// (`cuLaunchKernel`), over the arguments' `void**` array.
///
/// # Safety
/// `args` are the parameters of `kernel`'s entry point, in order and of the declared sizes;
/// the memory they address is valid for the accesses the kernel makes until it has run on
/// `stream`; `kernel` was loaded in `stream`'s context; `grid` and `block` are within the
/// device's limits and `block` within the kernel's `__launch_bounds__`.
pub(crate) unsafe fn launch_kernel(
    stream: &CudaStream,
    kernel: &LoadedKernel,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    args: &mut LaunchArgs,
) -> Result<(), Error> {
    let params = args.params();
    if kernel.pdl {
        // SAFETY: as for the plain launch below; and `kernel.pdl` says the entry point
        // starts with `ts_pdl_enter()` (`write_entry`) in an image compiled for `sm_90` or
        // later: each thread waits for the previous kernel on the stream to complete before
        // its first global memory access.
        unsafe { driver::launch_kernel_programmatic(stream, &kernel.function, grid, block, params) }
    } else {
        // SAFETY: the function's contract gives the parameter list, memory validity and
        // sizes; `params` points into `args`' words (`LaunchArgs`' invariant), which are
        // borrowed unchanged until this call returns, and the driver copies the parameter
        // values during the call.
        unsafe { driver::launch_kernel(stream, &kernel.function, grid, block, params) }
    }
    .map_err(Error::from)
}

/// A bounded map from signatures to values: by hash, with the whole signature kept to tell
/// colliding signatures apart.
pub(crate) struct PlanMap<V> {
    map: HashMap<u64, (Box<[u64]>, V), BuildHasherDefault<IdentityHasher>>,
}

impl<V> PlanMap<V> {
    pub(crate) fn new() -> Self {
        PlanMap {
            map: HashMap::default(),
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, key: PlanKey<'_>) -> Option<&mut V> {
        let (words, v) = self.map.get_mut(&key.hash)?;
        (**words == *key.words).then_some(v)
    }

    /// Stores `v` for `key` (replacing a colliding signature's value), emptying the map first
    /// when it is full.
    pub(crate) fn insert(&mut self, key: PlanKey<'_>, v: V) {
        if self.map.len() >= CAPACITY {
            self.map.clear();
        }
        self.map.insert(key.hash, (key.words.into(), v));
    }

    /// Entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Moves the entry under `from`'s hash to `to`'s (a collision, for tests).
    #[cfg(test)]
    pub(crate) fn rehash(&mut self, from: PlanKey<'_>, to: PlanKey<'_>) {
        if let Some(e) = self.map.remove(&from.hash) {
            self.map.insert(to.hash, e);
        }
    }
}

thread_local! {
    static PLANS: RefCell<PlanMap<LaunchPlan>> = RefCell::new(PlanMap::new());
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
