//! Blob reductions on the GPU (`kernels/blob_reduce.cu`): block reductions for `asum` /
//! `sumsq`, compiled with NVRTC through [`crate::gpu::compile`] and launched on the blob's
//! stream. `synced` calls [`reduce`]; the launch itself goes through the driver layer.
//! (`scale` and `update` run on the pointwise Apply kernels.)

use std::ffi::c_void;

use crate::element::FloatElement;
use crate::engine_gpu::compile::{device_arch, KernelCache, KernelKey, NvrtcOptions};
use crate::error::{Error, GpuError, LayoutError};
use crate::runtime::{driver, Gpu, GpuStorage, Stream};

/// Threads per block.
const BLOCK: u32 = 256;
/// At most this many blocks: enough to fill any current GPU, few partials to add.
const MAX_GRID: usize = 1024;
const TEMPLATE: &str = include_str!("../../../kernels/blob_reduce.cu");

/// The element types the reduction kernel is compiled for: floats the driver can pass by
/// value (the Blob's `BlobElement` types, `f32` and `f64`).
pub(crate) trait ReduceElement: FloatElement + cudarc::driver::DeviceRepr {}

impl<T: FloatElement + cudarc::driver::DeviceRepr> ReduceElement for T {}

/// What a reduction adds up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Term {
    /// `|x|` (Caffe `asum`).
    Abs,
    /// `x * x` (Caffe `sumsq`).
    Square,
}

/// The kernel source for `T`: the template after the definitions it expects.
pub(crate) fn source<T: ReduceElement>() -> String {
    format!(
        "#define TS_ELEM {}\n#define TS_BLOCK {BLOCK}\n{TEMPLATE}",
        T::CUDA_TYPE
    )
}

/// Blocks for `n` elements: one per `BLOCK` elements, at least 1, at most `MAX_GRID`.
fn grid_for(n: usize) -> u32 {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, MAX_GRID);
    // At most MAX_GRID (1024): fits in u32.
    u32::try_from(blocks).unwrap_or(1)
}

fn element_count(op: &'static str, n: usize, len: usize) -> Result<u64, Error> {
    if n > len {
        return Err(LayoutError::ShapeMismatch {
            op,
            expected: vec![len],
            got: vec![n],
        }
        .into());
    }
    // usize is at most 64 bits on every supported target.
    Ok(u64::try_from(n).unwrap_or(u64::MAX))
}

/// The reduction kernel for `T`, loaded on `gpu`.
fn function<T: ReduceElement>(
    gpu: &Gpu,
) -> Result<std::sync::Arc<cudarc::driver::CudaFunction>, GpuError> {
    let ctx = gpu.context();
    // The key hashes the whole generated source (a few hundred bytes, hashed once per call
    // of a reduction that waits for its result anyway), as every kernel key does.
    let source = source::<T>();
    let key = KernelKey {
        op: "blob_reduce".into(),
        entry: "ts_blob_reduce".into(),
        dtypes: vec![T::DTYPE],
        rank: 1,
        index_bits: 64,
        vector_width: 1,
        arch: device_arch(ctx)?,
        options: NvrtcOptions::default(),
        source_hash: KernelKey::hash_source(&source),
    };
    KernelCache::global().function(ctx, &key, || source)
}

/// A kernel parameter: the address of its value, as `cuLaunchKernel` takes it.
fn param<V>(value: &V) -> *mut c_void {
    std::ptr::from_ref(value).cast_mut().cast()
}

/// `sum(term(x[i]))` over the first `n` elements, in double, on `stream`.
pub(crate) fn reduce<T: ReduceElement>(
    x: &GpuStorage<T>,
    n: usize,
    term: Term,
    stream: &Stream,
) -> Result<f64, Error> {
    const OP: &str = "Blob::asum/sumsq (GPU)";
    let count = element_count(OP, n, x.len())?;
    if n == 0 {
        return Ok(0.0);
    }
    let gpu = x.gpu();
    let grid = grid_for(n);
    let mut partial = GpuStorage::<f64>::zeros(gpu, grid as usize, stream)?;
    x.access_read(OP, stream)?;
    let func = function::<T>(gpu)?;
    let x_ptr = x.device_ptr();
    let square: i32 = (term == Term::Square).into();
    // Fresh on `stream`, so this orders nothing; every write goes through the stream order.
    partial.access_write(OP, stream)?;
    let partial_ptr = partial.device_ptr_mut();
    let mut params = [
        param(&x_ptr),
        param(&count),
        param(&square),
        param(&partial_ptr),
    ];
    // SAFETY: the arguments match `ts_blob_reduce(const TS_ELEM*, unsigned long long, int,
    // double*)` in order and size, TS_ELEM being `T::CUDA_TYPE` (the module was compiled
    // for `T`). `x` holds at least `count` initialised elements (checked above), and
    // `access_read` ordered `stream` after its last write, on whatever stream that ran;
    // `partial` holds one double per block of the grid, which is all the kernel writes,
    // and was allocated on `stream`. Both stay allocated
    // until the kernel has run: `to_vec` below waits for `stream` before this returns (and
    // their frees are stream-ordered after it in any case). The function was loaded in
    // `gpu`'s context, which `stream` belongs to (`access_read` checked it). The four values
    // `params` points to live until the call returns. `grid` is at most MAX_GRID blocks of
    // BLOCK threads, the kernel's block size.
    unsafe {
        driver::launch_kernel(
            stream.cuda(),
            &func,
            (grid, 1, 1),
            (BLOCK, 1, 1),
            &mut params,
        )
    }?;
    Ok(partial.to_vec(stream)?.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine_gpu::compile::{nvrtc, target_for, Arch};

    #[test]
    fn grid_covers_small_and_caps_large_counts() {
        assert_eq!(grid_for(0), 1);
        assert_eq!(grid_for(1), 1);
        assert_eq!(grid_for(256), 1);
        assert_eq!(grid_for(257), 2);
        assert_eq!(grid_for(usize::MAX), MAX_GRID as u32);
    }

    #[test]
    fn counts_past_the_buffer_are_rejected() {
        assert!(element_count("t", 5, 4).is_err());
        assert_eq!(element_count("t", 4, 4).unwrap(), 4);
    }

    /// The kernel compiles with NVRTC for both element types (no GPU needed; skips without
    /// libnvrtc, see scripts/install-nvrtc.sh).
    #[test]
    fn kernel_compiles_with_nvrtc() {
        if !nvrtc::available() {
            println!("kernel_compiles_with_nvrtc: skipped, libnvrtc not found");
            return;
        }
        let target = target_for(Arch::new(9, 0), "blob_reduce").unwrap();
        for src in [source::<f32>(), source::<f64>()] {
            let image = nvrtc::compile("blob_reduce", &src, target, &NvrtcOptions::default());
            assert!(image.is_ok(), "{:?}", image.err());
        }
    }
}
