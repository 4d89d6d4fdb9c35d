//! Where compiled kernels are kept between runs ([`KernelCacheDir`]): the typed twin of
//! `TYPESTATE_TENSOR_KERNEL_CACHE` ([`KERNEL_CACHE_ENV`]), one setting per process.
//!
//! # Why a process-wide setter, not a [`GpuOptions`](super::GpuOptions) field
//!
//! The kernel cache is one per process, not one per [`Gpu`](super::Gpu): a compiled image
//! depends on the source, the compiler options and the compute capability, never on which
//! device loads it, so two GPUs of one architecture share every entry, and the in-memory
//! cache in front of the folder is process-wide too. A folder per `Gpu` would either split
//! that cache (the same kernel compiled once per folder) or be obeyed for the first GPU only.
//! So the folder is set once for the process: by [`set_kernel_cache_dir`] before the first
//! kernel is looked up, or else by the environment variable, read at that moment. From then on
//! the setting is fixed; asking for another one returns [`KernelCacheInUse`] instead of
//! being silently ignored.

use std::ffi::OsStr;
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The environment variable that moves (a folder) or disables (`off`, `0`) the kernel cache
/// on disk when [`set_kernel_cache_dir`] was not called first.
pub const KERNEL_CACHE_ENV: &str = "TYPESTATE_TENSOR_KERNEL_CACHE";

/// Where compiled kernels are kept on disk between runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum KernelCacheDir {
    /// `$XDG_CACHE_HOME/typestate-tensor/kernels`, else
    /// `$HOME/.cache/typestate-tensor/kernels` (the crate creates both levels `0700`).
    #[default]
    Default,
    /// No disk cache: each process compiles every kernel it uses once, in memory.
    Off,
    /// This folder (created `0700` on first write; its parents are not checked).
    At(PathBuf),
}

impl KernelCacheDir {
    /// The folder [`KERNEL_CACHE_ENV`] asks for now: unset or empty is
    /// [`Default`](KernelCacheDir::Default), `off` or `0` is [`Off`](KernelCacheDir::Off),
    /// anything else a folder.
    pub fn from_env() -> KernelCacheDir {
        KernelCacheDir::from_value(std::env::var_os(KERNEL_CACHE_ENV).as_deref())
    }

    /// The setting for a value of [`KERNEL_CACHE_ENV`] (`None`: unset).
    pub(crate) fn from_value(value: Option<&OsStr>) -> KernelCacheDir {
        match value.filter(|s| !s.is_empty()) {
            None => KernelCacheDir::Default,
            Some(s) if s == "off" || s == "0" => KernelCacheDir::Off,
            Some(s) => KernelCacheDir::At(PathBuf::from(s)),
        }
    }
}

/// The process's setting, fixed by [`set_kernel_cache_dir`] or by the first use of the cache.
static SETTING: OnceLock<KernelCacheDir> = OnceLock::new();

/// Sets where this process keeps compiled kernels, before the kernel cache is first used
/// (the first kernel compiled or looked up, on any GPU). Setting the folder already in effect
/// again is fine.
///
/// # Errors
/// [`KernelCacheInUse`] once the cache is in use with another setting (the one from
/// [`KERNEL_CACHE_ENV`], or an earlier call): nothing changes then.
///
/// ```
/// use typestate_tensor::gpu::{kernel_cache_dir, set_kernel_cache_dir, KernelCacheDir};
///
/// set_kernel_cache_dir(KernelCacheDir::Off)?;
/// assert_eq!(kernel_cache_dir(), KernelCacheDir::Off);
/// // Fixed from now on: another folder is refused, the same one accepted.
/// assert!(set_kernel_cache_dir(KernelCacheDir::Default).is_err());
/// set_kernel_cache_dir(KernelCacheDir::Off)?;
/// # Ok::<(), typestate_tensor::gpu::KernelCacheInUse>(())
/// ```
pub fn set_kernel_cache_dir(dir: KernelCacheDir) -> Result<(), KernelCacheInUse> {
    match SETTING.set(dir) {
        Ok(()) => Ok(()),
        Err(asked) => {
            let in_effect = fixed_kernel_cache_dir();
            if *in_effect == asked {
                Ok(())
            } else {
                Err(KernelCacheInUse {
                    in_effect: in_effect.clone(),
                    asked,
                })
            }
        }
    }
}

/// The setting in effect, or the one the kernel cache would take if it were first used now:
/// the one [`set_kernel_cache_dir`] gave or the cache fixed, else what [`KERNEL_CACHE_ENV`]
/// says now. Reading it fixes nothing: [`set_kernel_cache_dir`] may still be called after.
pub fn kernel_cache_dir() -> KernelCacheDir {
    SETTING
        .get()
        .cloned()
        .unwrap_or_else(KernelCacheDir::from_env)
}

/// The setting in effect, fixing it for the rest of the process: what the kernel cache asks
/// when it is first used.
pub(crate) fn fixed_kernel_cache_dir() -> &'static KernelCacheDir {
    SETTING.get_or_init(KernelCacheDir::from_env)
}

/// [`set_kernel_cache_dir`] asked for another setting than the one already fixed (by an
/// earlier call, or by the kernel cache's first use).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelCacheInUse {
    /// The setting the cache uses, for the rest of the process.
    pub in_effect: KernelCacheDir,
    /// The setting that was asked for.
    pub asked: KernelCacheDir,
}

impl fmt::Display for KernelCacheInUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the kernel cache folder is already fixed as {:?} (by an earlier \
             `set_kernel_cache_dir` or by the cache's first use), so it cannot become {:?}; \
             call `set_kernel_cache_dir` once, before the first kernel is compiled",
            self.in_effect, self.asked
        )
    }
}

impl std::error::Error for KernelCacheInUse {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_the_variable_map_to_settings() {
        assert_eq!(KernelCacheDir::from_value(None), KernelCacheDir::Default);
        assert_eq!(
            KernelCacheDir::from_value(Some(OsStr::new(""))),
            KernelCacheDir::Default
        );
        for off in ["off", "0"] {
            assert_eq!(
                KernelCacheDir::from_value(Some(OsStr::new(off))),
                KernelCacheDir::Off
            );
        }
        assert_eq!(
            KernelCacheDir::from_value(Some(OsStr::new("/tmp/k"))),
            KernelCacheDir::At(PathBuf::from("/tmp/k"))
        );
    }

    #[test]
    fn the_error_names_both_settings() {
        let e = KernelCacheInUse {
            in_effect: KernelCacheDir::Off,
            asked: KernelCacheDir::At(PathBuf::from("/k")),
        };
        let text = e.to_string();
        assert!(text.contains("Off") && text.contains("\"/k\""), "{text}");
    }
}
