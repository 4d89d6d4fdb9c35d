//! Intended use compiles: what a user writes with the typed states, beside the misuse in
//! `ui_tests/compile_fail/` that must not compile.
//!
//! These were trybuild `pass` cases. Here they compile as part of this binary, as an outside
//! crate seeing only the public API, just as trybuild compiled them; and trybuild, left with
//! compile-fail cases only, checks instead of building (no code generation or linking of the
//! crate and 11 binaries), which is most of what it spent (README, "Set up").
//!
//! The CPU cases run as tests. The GPU ones are functions that are compiled and not called
//! (they need one or two GPUs): they are type checks, so `dead_code` is allowed for them,
//! and the GPU tests (`transfer_gpu`, `graph`, `collective`, `multi_gpu`, `syncedmem`) run
//! the same calls.

mod blob_views;
mod erased_net;
#[cfg(feature = "ndarray")]
mod first_hour;
mod fused_update;
mod share_read_thaw;
mod solver_loop;

#[allow(dead_code)]
mod collective_states;
#[allow(dead_code)]
mod graph_refill_between_replays;
#[allow(dead_code)]
mod move_between_gpus;
#[allow(dead_code)]
mod push_wait;
#[allow(dead_code)]
mod walkthrough;
