//! The process-wide kernel caches: compiled images by [`KernelKey`], and loaded functions
//! by (device ordinal, [`KernelKey`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use cudarc::driver::{CudaContext, CudaFunction};

use super::arch::{Arch, Target};
use super::disk_cache::Bypass;
use super::disk_cache::{entry_key, DiskCache, Origin};
use super::image::KernelImage;
use super::key::KernelKey;
use super::nvrtc;
use super::once_map::OnceMap;
use crate::error::GpuError;
use crate::runtime::driver;

/// What the process-wide kernel cache has done since the process started
/// ([`kernel_cache_stats`](crate::gpu::kernel_cache_stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Images built by the compile step (NVRTC, or a disk hit) for in-process misses.
    pub images_built: u64,
    /// NVRTC compiles run.
    pub nvrtc_compiles: u64,
    /// Images read from the disk cache.
    pub disk_hits: u64,
    /// Disk entries rejected (corrupt, truncated, stale, wrong key) and recompiled.
    pub disk_rejects: u64,
    /// Modules loaded into a context.
    pub module_loads: u64,
    /// Disk cache lookups and stores skipped because its folder is not trusted
    /// ([`kernel_cache_warning`](crate::gpu::kernel_cache_warning) says why).
    pub disk_bypasses: u64,
}

/// What the process-wide kernel cache has done so far: images built, NVRTC compiles, disk
/// hits and rejects, modules loaded, disk lookups bypassed.
pub fn kernel_cache_stats() -> CacheStats {
    KernelCache::global().stats()
}

/// Why the kernel disk cache (`TYPESTATE_TENSOR_KERNEL_CACHE`, else a folder under the temp
/// folder) was bypassed, if it ever was: the first untrusted folder found (owned by another
/// user, writable by others, not a plain folder). Kernels were then compiled in memory, which
/// is correct but slower on the next process's first use.
pub fn kernel_cache_warning() -> Option<Bypass> {
    KernelCache::global().disk_warning()
}

#[derive(Debug, Default)]
struct Counters {
    images_built: AtomicU64,
    nvrtc_compiles: AtomicU64,
    disk_hits: AtomicU64,
    disk_rejects: AtomicU64,
    module_loads: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Where a loaded function lives: the device ordinal and the context (a module loaded in one
/// context cannot be launched in another). The context's handle is compared, never
/// dereferenced; a cached function keeps its context retained, so the handle cannot be reused
/// by another context while the entry exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FunctionSlot {
    ordinal: usize,
    context: usize,
}

impl FunctionSlot {
    fn of(ctx: &CudaContext) -> Self {
        FunctionSlot {
            ordinal: ctx.ordinal(),
            // The handle's address, as an identity only.
            context: ctx.cu_ctx() as usize,
        }
    }
}

/// Compiled kernel images and loaded kernel functions, each built once per key.
///
/// Invariants:
/// - At most one successful build per [`KernelKey`] (images) and per (device and context,
///   key) (functions), whatever the threads do: see `OnceMap`. Images are shared by devices
///   of one architecture (the key names it); functions are per context.
/// - A function is loaded only into a context whose device has the key's architecture
///   ([`GpuError::ArchMismatch`] otherwise).
/// - Failed builds are not cached; the next call tries again.
/// - Entries are never evicted (one per distinct kernel the process uses). Cached functions
///   keep their module and context alive for the life of the cache.
#[derive(Debug)]
pub struct KernelCache {
    disk: DiskCache,
    images: OnceMap<KernelKey, Arc<KernelImage>>,
    functions: OnceMap<(FunctionSlot, KernelKey), Arc<CudaFunction>>,
    counters: Counters,
}

impl KernelCache {
    /// An empty cache backed by `disk`.
    pub fn new(disk: DiskCache) -> Self {
        Self {
            disk,
            images: OnceMap::default(),
            functions: OnceMap::default(),
            counters: Counters::default(),
        }
    }

    /// The process-wide cache, with the disk cache the environment asks for
    /// ([`DiskCache::from_env`], read on first use).
    pub fn global() -> &'static KernelCache {
        static GLOBAL: LazyLock<KernelCache> =
            LazyLock::new(|| KernelCache::new(DiskCache::from_env()));
        &GLOBAL
    }

    /// The disk cache behind it.
    #[cfg(test)]
    pub fn disk(&self) -> &DiskCache {
        &self.disk
    }

    /// Counts of what it has done.
    pub fn stats(&self) -> CacheStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CacheStats {
            images_built: get(&c.images_built),
            nvrtc_compiles: get(&c.nvrtc_compiles),
            disk_hits: get(&c.disk_hits),
            disk_rejects: get(&c.disk_rejects),
            module_loads: get(&c.module_loads),
            disk_bypasses: self.disk.bypasses(),
        }
    }

    /// Why the disk cache was bypassed, if it ever was: the first untrusted folder found
    /// (see [`super::disk_cache`]); the kernels were then compiled in memory.
    pub fn disk_warning(&self) -> Option<super::disk_cache::Bypass> {
        self.disk.warning()
    }

    /// Number of image keys seen.
    #[cfg(test)]
    pub fn image_entries(&self) -> usize {
        self.images.len()
    }

    /// The image for `key`, built by `build` on the first successful call for that key.
    /// Racing callers wait for that one build. This is the in-process layer alone;
    /// [`image`](Self::image) puts the disk cache and NVRTC behind it.
    ///
    /// # Errors
    /// `build`'s error (not cached).
    pub fn image_with(
        &self,
        key: &KernelKey,
        build: impl FnOnce() -> Result<KernelImage, GpuError>,
    ) -> Result<Arc<KernelImage>, GpuError> {
        self.images.get_or_try_init(key, || {
            let image = build()?;
            bump(&self.counters.images_built);
            Ok(Arc::new(image))
        })
    }

    /// The image for `key`: from memory, else from the disk cache, else compiled by NVRTC
    /// from `source()` (called only then) and written to the disk cache.
    ///
    /// # Errors
    /// [`GpuError::NoNvrtc`], or [`GpuError::Compile`] with NVRTC's log.
    pub fn image(
        &self,
        key: &KernelKey,
        source: impl FnOnce() -> String,
    ) -> Result<Arc<KernelImage>, GpuError> {
        self.image_with(key, || {
            let (image, origin) = build_image(&self.disk, key, &source())?;
            match origin {
                Origin::Disk => bump(&self.counters.disk_hits),
                Origin::Compiled { replaced, .. } => {
                    bump(&self.counters.nvrtc_compiles);
                    if replaced.is_some() {
                        bump(&self.counters.disk_rejects);
                    }
                }
            }
            Ok(image)
        })
    }

    /// The kernel `key.entry` loaded into `ctx`: from memory, else loaded from
    /// [`image`](Self::image) (compiling `source()` if needed). Functions are cached per
    /// device and context, so several GPUs (of one architecture or of several) each get
    /// their own. Leaves `ctx` current on the calling thread, for calls that query the
    /// function next (occupancy).
    ///
    /// # Errors
    /// As [`image`](Self::image), plus [`GpuError::ArchMismatch`] when `key.arch` is not the
    /// architecture of `ctx`'s device (checked on first load), and [`GpuError::Driver`] when
    /// binding the context, loading the module or finding the function fails.
    pub fn function(
        &self,
        ctx: &Arc<CudaContext>,
        key: &KernelKey,
        source: impl FnOnce() -> String,
    ) -> Result<Arc<CudaFunction>, GpuError> {
        driver::bind(ctx)?;
        self.functions
            .get_or_try_init(&(FunctionSlot::of(ctx), key.clone()), || {
                let arch = device_arch(ctx)?;
                if arch != key.arch {
                    return Err(GpuError::ArchMismatch {
                        kernel: key.entry.to_string(),
                        ordinal: ctx.ordinal(),
                        key: (key.arch.major, key.arch.minor),
                        device: (arch.major, arch.minor),
                    });
                }
                let image = self.image(key, source)?;
                let function = load_function(ctx, &image, &key.entry)?;
                bump(&self.counters.module_loads);
                Ok(Arc::new(function))
            })
    }
}

/// The compute capability of `ctx`'s device.
///
/// # Errors
/// [`GpuError::Driver`] if the driver cannot say.
pub fn device_arch(ctx: &CudaContext) -> Result<Arch, GpuError> {
    let (major, minor) = driver::compute_capability(ctx)?;
    Ok(Arch::new(
        u32::try_from(major).unwrap_or(0),
        u32::try_from(minor).unwrap_or(0),
    ))
}

/// What this NVRTC should produce for `arch` ([`Target::choose`] over its supported archs).
///
/// # Errors
/// [`GpuError::NoNvrtc`]; [`GpuError::Compile`] when NVRTC supports no architecture the
/// device can run.
pub fn target_for(arch: Arch, kernel: &str) -> Result<Target, GpuError> {
    let supported = nvrtc::supported_archs()?;
    Target::choose(arch, &supported).ok_or_else(|| GpuError::Compile {
        kernel: kernel.to_owned(),
        options: Vec::new(),
        log: format!(
            "NVRTC supports architectures {supported:?}, none of which runs on a device of compute capability {arch}"
        ),
    })
}

/// Compiles `source` for `key`, through the disk cache.
fn build_image(
    disk: &DiskCache,
    key: &KernelKey,
    source: &str,
) -> Result<(KernelImage, Origin), GpuError> {
    let target = target_for(key.arch, &key.entry)?;
    let options = key.options.args(target);
    let entry = entry_key(source, &options, nvrtc::version()?, target);
    disk.get_or_compile(entry, || {
        nvrtc::compile(&key.entry, source, target, &key.options)
    })
}

/// Loads `image` into `ctx` and looks up `entry`.
fn load_function(
    ctx: &Arc<CudaContext>,
    image: &KernelImage,
    entry: &str,
) -> Result<CudaFunction, GpuError> {
    let module = driver::load_module(ctx, image.to_cudarc()?)?;
    driver::load_function(&module, entry)
}
