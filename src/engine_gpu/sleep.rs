//! [`Stream::sleep`]: a kernel that keeps a stream busy for a while and touches no memory
//! (`kernels/sleep.cu`). The stream-order tests queue it before the work whose ordering they
//! check, so that work that is not ordered after it visibly runs too early.

use std::ffi::c_void;
use std::time::Duration;

use super::compile::{device_arch, KernelCache, KernelKey, NvrtcOptions};
use crate::error::GpuError;
use crate::runtime::{driver, Stream};

const SOURCE: &str = include_str!("../../kernels/sleep.cu");

impl Stream {
    /// Queues a kernel that keeps this stream busy for about `duration` of GPU time and
    /// returns at once. It reads and writes no memory: work queued after it on this stream
    /// starts later; work on other streams is not held up unless ordered after it.
    ///
    /// Meant for tests and demonstrations of stream ordering (a stand-in for a long kernel).
    /// Durations past `u64::MAX` nanoseconds are capped.
    pub fn sleep(&self, duration: Duration) -> Result<(), GpuError> {
        let ctx = self.context();
        let key = KernelKey {
            op: "sleep".into(),
            entry: "ts_sleep".into(),
            dtypes: Vec::new(),
            rank: 0,
            index_bits: 64,
            vector_width: 1,
            arch: device_arch(ctx)?,
            options: NvrtcOptions::default(),
            source_hash: KernelKey::hash_source(SOURCE),
        };
        let func = KernelCache::global().function(ctx, &key, || SOURCE.to_owned())?;
        let ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let mut params = [std::ptr::from_ref(&ns).cast_mut().cast::<c_void>()];
        // SAFETY: the one parameter matches `ts_sleep(unsigned long long)` in order and size
        // and `ns` outlives the call; the kernel dereferences no pointer, so it cannot touch
        // memory; the function was loaded in this stream's context; one block of one thread
        // is within every limit.
        unsafe { driver::launch_kernel(self.cuda(), &func, (1, 1, 1), (1, 1, 1), &mut params) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine_gpu::compile::{nvrtc, target_for, Arch};

    /// The kernel compiles with NVRTC (no GPU needed; skips without libnvrtc, see
    /// scripts/install-nvrtc.sh).
    #[test]
    fn sleep_kernel_compiles_with_nvrtc() {
        if !nvrtc::available() {
            println!("sleep_kernel_compiles_with_nvrtc: skipped, libnvrtc not found");
            return;
        }
        let target = target_for(Arch::new(9, 0), "sleep").unwrap();
        let image = nvrtc::compile("sleep", SOURCE, target, &NvrtcOptions::default());
        assert!(image.is_ok(), "{:?}", image.err());
    }
}
