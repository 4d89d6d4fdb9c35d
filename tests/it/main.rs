//! The integration tests, one binary.
//!
//! Each file here was its own test binary; together they link the crate and its
//! dependencies once instead of forty times, which is most of what a fresh `cargo test`
//! spends on a 2-core machine (README, "Tests"). Run one file's tests with its module name
//! as the filter: `cargo test --test it pointwise::`.
//!
//! Two suites stay separate binaries because they need a process of their own:
//! `tests/fused_alloc.rs` installs a counting global allocator, and `tests/ui.rs` runs
//! trybuild.

mod common;
mod harness;

mod allocation;
mod allocator_caching;
mod allocator_config;
mod allocator_contract;
mod allocator_event_failures;
mod allocator_gpu;
mod allocator_host_pinned;
mod allocator_naive;
mod allocator_pooled;
mod allocator_stress;
mod architecture;
mod bad_input;
mod basics;
mod bf16_rounding;
mod blob;
mod collective;
mod compile_cache;
mod fused;
mod fused_random;
mod gpu_runtime;
mod graph;
mod host_source;
mod int_divider;
mod kernel_source;
mod launch_gpu;
mod layout;
mod memory_history;
mod multi_gpu;
mod ndarray_interop;
mod offset_calculator;
mod pointwise;
mod pointwise_gpu;
mod reduce;
mod stream_order;
mod syncedmem;
mod tensor;
mod tiled_gpu;
mod transfer_gpu;
