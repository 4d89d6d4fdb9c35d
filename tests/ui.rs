//! Compile-time checks: misuse of the typed states fails to compile with a message that
//! names the call to make (pinned in `.stderr` snapshots).
//!
//! Regenerate the snapshots with `TRYBUILD=overwrite cargo test --test ui` and read every
//! diff: each message must tell the user what to call. Intended use, the other half of the
//! contract, compiles as `tests/it/intended_use/`: with compile-fail cases only, trybuild
//! runs `cargo check` on its cases rather than `cargo build`, so it never generates code for
//! the crate or links a binary.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui_tests/compile_fail/*.rs");
}
