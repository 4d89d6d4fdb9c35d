//! The GPU engine's own tests: they reach its private parts (kernel sources and their cache
//! keys, the compile layer and its disk cache, plans, the launch profiler, the host mirror of
//! the kernels' index math), which no user can, so they live inside the crate. Tests of the
//! public API stay in `tests/it/`. Inside the crate the tests still name public items as
//! users do (`typestate_tensor::...`, through `extern crate self` in `lib.rs`).
//!
//! Tests that need a GPU follow the integration tests' rule: ignored without the `gpu-tests`
//! feature, and with it, a printed skip line on a machine without one.

mod bad_plans;
mod compile_cache;
mod fused_kernels;
mod fused_rows_source;
mod int_divider;
mod kernel_source;
mod launch_gpu;
// issue 28 (norm)
mod normalize_source;
mod offset_calculator;
// issue 28 (sort): scan and sort kernel sources.
mod order_source;
mod plan;
mod pointwise_gpu;
mod pointwise_host;
mod reduce_source;
// issue 28 (index): the indexing kernels through NVRTC.
mod indexing_source;
mod tiled_gpu;

use crate::runtime::Gpu;

/// GPU 0, or `None` after printing `<test>: skipped, no CUDA driver or GPU on this machine`.
pub(crate) fn gpu_or_skip(test: &str) -> Option<Gpu> {
    if !Gpu::available() {
        println!("{test}: skipped, no CUDA driver or GPU on this machine");
        return None;
    }
    Some(Gpu::new(0).expect("a GPU is available, so GPU 0 opens"))
}
