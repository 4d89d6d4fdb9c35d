//! Tests written once and run on every device (candle's `test_device!`).
//!
//! A test body is a generic function `fn name<D: TestDevice>(dev: &D)`; the [`test_device!`]
//! macro instantiates it as `name_cpu` (on [`Cpu`]) and `name_gpu` (on GPU 0). Without a CUDA
//! driver or a GPU, `name_gpu` prints
//! `name_gpu: skipped, no CUDA driver or GPU on this machine` and passes. Without the
//! `gpu-tests` feature `name_gpu` is not run at all: it is reported as ignored, and its body is
//! not even compiled for the GPU (the CPU-only build is half the size).
//!
//! Bodies build their inputs on the host, move them with [`TestDevice::upload`], and read
//! results back with [`host`]; the references (ndarray, plain loops) stay on the host and do
//! not go through the device code under test.

use typestate_tensor::element::{Element, Numeric};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::ops::reduce::ReduceElement;
use typestate_tensor::tensor::{AsView, Backend, Tensor, TensorView};
use typestate_tensor::Cpu;

/// What a test body needs from a device beyond [`Backend`].
pub trait TestDevice: Backend {
    /// Ulps this device's transcendental functions (`exp`, `log`, `rsqrt`, `sin`, `cos`,
    /// `tanh`, `erf`, `pow` and the ops built on them) may add to a CPU tolerance against an
    /// `f64` reference. 0 on the CPU (Rust's libm). On the GPU, 2: CUDA's libdevice (no fast
    /// math) is within 1 to 2 ulps of the correctly rounded value for most functions, and
    /// `powf` within 4 (CUDA C Programming Guide, "Mathematical Functions", maximum ulp
    /// error), against the CPU tolerances of 2 (`TRANS`) and 3 (`pow`).
    const LIBM_EXTRA_ULPS: i64 = 0;

    /// The relative error (of `|x|`) this device's fused matmul epilogue may add to
    /// `gelu_tanh(x)`: 0 on the CPU (the op table's closure, in `f32`); on the GPU, cuBLASLt's
    /// `GELU` epilogue, computed with fast `f32` intrinsics, bounded here by the PTX
    /// `tanh.approx.f32` instruction's maximum relative error, `2^-10.987` of `tanh`, which
    /// enters `0.5·x·(1 + tanh(u))` as at most `2^-11·|x|` (seen: `2.8e-6·|x|` on an H100).
    /// How many times a fused matmul epilogue (bias, activation) may round to the element
    /// type: once on the CPU (the epilogue runs on the `f32` accumulator), twice on the GPU
    /// (cuBLASLt's half-precision epilogues were seen to round the product to `bf16` before
    /// adding the bias: 0.85 ulp off on an H100, where one rounding is at most 0.5).
    const EPILOGUE_ROUNDINGS: f64 = 1.0;

    const EPILOGUE_TANH_REL: f64 = 0.0;

    /// A copy of the host tensor `t` on this device (on the CPU, `clone`, which keeps the
    /// strides; on the GPU, `to_gpu`, which makes it row-major).
    fn upload<T: Element>(&self, t: &Tensor<T, Cpu>) -> Tensor<T, Self>;

    /// The elements of `v` in row-major (logical) order, on the host.
    fn download<T: Element>(v: &TensorView<'_, T, Self>) -> Vec<T>;

    /// The element of `v` at `index`: `get` on the CPU; on the GPU, read after [`download`]
    /// (the GPU has no host indexing).
    ///
    /// [`download`]: TestDevice::download
    fn element<T: Element>(v: &TensorView<'_, T, Self>, index: &[usize]) -> T;

    /// `Σ v` as `f64`: the tensor `sum` (in the sum's type: `i64` for integers, the float
    /// type for floats) on this device, read with `item`.
    fn total<T: Numeric + ReduceElement>(v: &TensorView<'_, T, Self>) -> f64 {
        v.sum()
            .and_then(|s| s.item())
            .expect("a sum on the device")
            .to_f64()
    }

    /// The whole storage (elements outside the layout included), on the host.
    fn storage_to_host<T: Element>(s: &Self::Storage<T>) -> Vec<T>;

    /// A key that is equal for two handles of one allocation and differs between live
    /// allocations (the address on the CPU; on the GPU, the storage's `Debug`, which names
    /// its device address, length and stream).
    fn storage_key<T: Element>(s: &Self::Storage<T>) -> String;
}

/// The elements of `x` (any of the three tensor types, on any device) in row-major order, on
/// the host.
pub fn host<T: Element, D: TestDevice>(x: &impl AsView<T, D>) -> Vec<T> {
    D::download(&x.view())
}

impl TestDevice for Cpu {
    fn upload<T: Element>(&self, t: &Tensor<T, Cpu>) -> Tensor<T, Cpu> {
        t.clone()
    }

    fn download<T: Element>(v: &TensorView<'_, T, Cpu>) -> Vec<T> {
        v.to_vec()
    }

    fn element<T: Element>(v: &TensorView<'_, T, Cpu>, index: &[usize]) -> T {
        v.get(index).expect("an index inside the shape")
    }

    fn storage_to_host<T: Element>(s: &Vec<T>) -> Vec<T> {
        s.clone()
    }

    fn storage_key<T: Element>(s: &Vec<T>) -> String {
        format!("{:p}", s.as_ptr())
    }
}

impl TestDevice for Gpu {
    const LIBM_EXTRA_ULPS: i64 = 2;
    const EPILOGUE_TANH_REL: f64 = 1.0 / 2048.0;
    const EPILOGUE_ROUNDINGS: f64 = 2.0;

    fn upload<T: Element>(&self, t: &Tensor<T, Cpu>) -> Tensor<T, Gpu> {
        t.to_gpu(self).expect("upload to the GPU")
    }

    fn download<T: Element>(v: &TensorView<'_, T, Gpu>) -> Vec<T> {
        v.contiguous()
            .and_then(|c| c.to_cpu())
            .expect("download from the GPU")
            .into_vec()
    }

    fn element<T: Element>(v: &TensorView<'_, T, Gpu>, index: &[usize]) -> T {
        assert_eq!(index.len(), v.rank(), "one index per dim");
        let mut flat = 0;
        for (&i, &n) in index.iter().zip(v.shape()) {
            assert!(i < n, "index {index:?} outside shape {:?}", v.shape());
            flat = flat * n + i;
        }
        Self::download(v)[flat]
    }

    fn storage_to_host<T: Element>(s: &typestate_tensor::gpu::GpuStorage<T>) -> Vec<T> {
        s.to_vec(s.stream()).expect("download from the GPU")
    }

    fn storage_key<T: Element>(s: &typestate_tensor::gpu::GpuStorage<T>) -> String {
        format!("{s:?}")
    }
}

/// GPU 0, or `None` after printing `<test>: skipped, no CUDA driver or GPU on this machine`.
pub fn gpu_or_skip(test: &str) -> Option<Gpu> {
    if !Gpu::available() {
        println!("{test}: skipped, no CUDA driver or GPU on this machine");
        return None;
    }
    Some(Gpu::new(0).expect("a GPU is available, so GPU 0 opens"))
}

/// The body of a GPU test built without the `gpu-tests` feature: fails, naming the feature.
#[cfg(not(feature = "gpu-tests"))]
pub fn not_built(test: &str) -> ! {
    panic!("{test}: built without the gpu-tests feature, so its GPU body was not compiled; run cargo test --features gpu-tests")
}

/// Instantiates the generic test body `$body<D: TestDevice>(dev: &D)` as the tests `$cpu`
/// (on the CPU) and `$gpu` (on GPU 0; skips with a printed line without one), as candle's
/// `test_device!(fn, cpu_name, cuda_name, metal_name)` does.
macro_rules! test_device {
    ($body:ident, $cpu:ident, $gpu:ident) => {
        #[test]
        fn $cpu() {
            $body(&typestate_tensor::Cpu);
        }

        #[test]
        #[cfg(feature = "gpu-tests")]
        fn $gpu() {
            if let Some(gpu) = $crate::common::device::gpu_or_skip(stringify!($gpu)) {
                $body(&gpu);
            }
        }

        // Without `gpu-tests` the GPU instance is reported as ignored and its body is not
        // compiled (half of the test binary's code was the GPU instances of these bodies,
        // built in every CPU-only `cargo test`). Run anyway (`-- --ignored`), it fails: a
        // test that checked nothing never passes.
        #[test]
        #[cfg(not(feature = "gpu-tests"))]
        #[ignore = "needs a GPU: cargo test --features gpu-tests"]
        fn $gpu() {
            $crate::common::device::not_built(stringify!($gpu));
        }
    };
}

pub(crate) use test_device;
