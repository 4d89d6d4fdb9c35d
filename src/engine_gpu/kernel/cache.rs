//! Loaded kernels by spec: a small per-spec-type front over the crate's [`KernelCache`], and
//! the one way any [`KernelSource`] is compiled and loaded ([`load`]).
//!
//! The front exists for the launch path's host time: a spec hashes a few words, where a
//! [`KernelKey`] owns strings and a vector and includes a hash of the whole source. A hit
//! costs one uncontended lock and one small hash. A miss builds the key and the source and
//! asks the compile layer, which compiles and loads each kernel once per process even when
//! threads race; two threads missing the same spec at once both ask it, get the same
//! function, and insert equal entries, so the front needs no once-per-key machinery of its
//! own.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction};

#[cfg(doc)]
use crate::engine_gpu::compile::KernelKey;
use crate::engine_gpu::compile::{device_arch, target_for, KernelCache, NvrtcOptions};
use crate::error::GpuError;
use crate::runtime::driver;

use super::source::KernelSource;

/// NVRTC options of every generated kernel. `--fmad=false`: the CPU engine rounds every
/// multiply and every add, and a contracted `x * y + z` would differ in the last bit (ops
/// that want a fused multiply-add call `fma` explicitly).
pub const OPTIONS: NvrtcOptions = NvrtcOptions {
    fast_math: false,
    extra: &["--fmad=false"],
};

/// A loaded kernel and what its launches need to know about it.
#[derive(Debug)]
pub struct LoadedKernel {
    /// The entry point.
    pub function: Arc<CudaFunction>,
    /// Blocks of [`KernelSource::block`] threads resident on the whole device at once
    /// (occupancy per multiprocessor times multiprocessors): the grid cap of the grid-stride
    /// loops.
    pub max_blocks: u32,
    /// Whether every launch of it is a programmatic dependent ([`super::pdl`]): its entry
    /// point waits for the previous kernel on its stream (`ts_pdl_enter`,
    /// [`KernelSource::waits_for_predecessor`]) and the image was compiled for `sm_90` or
    /// later, where that wait is a `griddepcontrol.wait`.
    pub pdl: bool,
}

impl LoadedKernel {
    /// `function`, launched with `block` threads per block, with its resident-block cap;
    /// `waits` is the spec's [`KernelSource::waits_for_predecessor`].
    ///
    /// # Errors
    /// The occupancy and attribute queries' [`GpuError::Driver`].
    pub(crate) fn new(
        ctx: &Arc<CudaContext>,
        function: Arc<CudaFunction>,
        block: u32,
        waits: bool,
    ) -> Result<Self, GpuError> {
        let per_sm = driver::max_active_blocks_per_multiprocessor(&function, block)?;
        let sms = driver::device_attribute(
            ctx,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )?;
        // The image's target is this NVRTC's choice for the device (the key of every cache
        // layer includes it), so this names the architecture the code was compiled for.
        let target = target_for(device_arch(ctx)?, "pdl")?;
        Ok(LoadedKernel {
            function,
            max_blocks: per_sm
                .max(1)
                .saturating_mul(u32::try_from(sms).unwrap_or(1).max(1)),
            pdl: waits && super::pdl::arch_has_griddepcontrol(target.arch_name()),
        })
    }
}

/// Compiles (once per machine, through the disk cache) and loads (once per device) the kernel
/// of `spec` in `ctx`.
///
/// # Errors
/// [`KernelSource::check`]'s [`GpuError::UntrustedOp`]; the compile layer's errors
/// ([`GpuError::NoNvrtc`], [`GpuError::Compile`] with the log, [`GpuError::Driver`]).
pub(crate) fn load<S: KernelSource + ?Sized>(
    ctx: &Arc<CudaContext>,
    spec: &S,
) -> Result<LoadedKernel, GpuError> {
    spec.check()?;
    let source = spec.source();
    let key = spec.compile_key(device_arch(ctx)?, &source);
    let function = KernelCache::global().function(ctx, &key, || source)?;
    LoadedKernel::new(ctx, function, spec.block(), spec.waits_for_predecessor())
}

type FrontMap<K> = HashMap<(usize, K), Arc<LoadedKernel>, BuildHasherDefault<WordHasher>>;

/// The loaded kernels of one kind of spec, by (device ordinal, spec key): each spec type
/// keeps one in a `static`.
pub(crate) struct KernelFront<K> {
    map: OnceLock<Mutex<FrontMap<K>>>,
}

impl<K: Eq + Hash + Clone> KernelFront<K> {
    /// An empty front.
    pub(crate) const fn new() -> Self {
        KernelFront {
            map: OnceLock::new(),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, FrontMap<K>> {
        // The map holds only complete entries, so a panic elsewhere cannot leave it
        // inconsistent.
        self.map
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The kernel of `key` loaded in `ctx`; on a miss, [`load`]s `spec` (the source `key`
    /// stands for) and keeps it. A failure is not kept.
    ///
    /// # Errors
    /// As [`load`].
    pub(crate) fn kernel<S: KernelSource + ?Sized>(
        &self,
        ctx: &Arc<CudaContext>,
        key: &K,
        spec: &S,
    ) -> Result<Arc<LoadedKernel>, GpuError> {
        let slot = (ctx.ordinal(), key.clone());
        if let Some(hit) = self.map().get(&slot) {
            return Ok(hit.clone());
        }
        let loaded = Arc::new(load(ctx, spec)?);
        Ok(self.map().entry(slot).or_insert(loaded).clone())
    }

    /// How many loaded kernels (all devices) have a key for which `pred` holds.
    #[cfg(test)]
    pub(crate) fn count(&self, pred: impl Fn(&K) -> bool) -> usize {
        self.map().keys().filter(|(_, k)| pred(k)).count()
    }
}

/// A multiply-rotate hasher over machine words (the Firefox / rustc "Fx" hash): the front's
/// keys are a few small integers and one short name, which SipHash would take several times
/// longer to hash. Not DoS-resistant, which keys chosen by this crate do not need.
#[derive(Default)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
