//! The integration tests, one binary.
//!
//! Each file here was its own test binary; together they link the crate and its
//! dependencies once instead of forty times, which is most of what a fresh `cargo test`
//! spends on a 2-core machine (README, "Tests"). Run one file's tests with its module name
//! as the filter: `cargo test --test it pointwise::`.
//!
//! The GPU engine's private parts (kernel sources, caches, plans) are tested inside the crate,
//! in `src/engine_gpu/tests/`: no user can reach them, so neither can these tests.
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
mod fused;
mod fused_random;
mod gpu_runtime;
mod graph;
mod host_source;
// Intended use compiles (the former trybuild pass cases).
mod intended_use;
mod layout;
mod matmul_gpu; // issue 27: the GPU matmul through the public API
mod memory_history;
mod multi_gpu;
mod ndarray_interop;
mod pointwise;
mod reduce;
mod shape_basics; // issue 28: tril, triu, pad, repeat, roll, splits, select
                  // issue 28 (sort): scans and sorting.
mod order_cases;
mod scan;
mod sort;
mod stream_order;
mod syncedmem;
mod tensor;
mod transfer_gpu;
// Element types i8, i16, u16, u32, u64 (issue 26).
mod dtypes;
// issue 30 (dlpack): DLPack export and import.
mod dlpack;
mod dlpack_foreign;
// Activations, map/zip_map, true_divide (issue 26).
mod pointwise_activations;
// Integer, bitwise, logical and float-predicate ops (issue 26).
mod pointwise_int_logic;
// Float math ops (issue 26).
mod pointwise_float_math;
// any and all (issue 26).
mod any_all;
// Matrix multiplication (issue 27).
mod matmul;
// issue 28 (norm): statistics and normalisations.
mod normalize;
// issue 28 (index): indexing ops.
mod indexing;
// issue 30 (files): tensor files (safetensors, npy, npz), the GPU loader, the bad-file fuzz.
mod io_fuzz;
mod io_gpu;
mod io_npy;
mod io_safetensors;
mod io_util;
