//! Compile-time checks: misuse of the typed states fails to compile with a message that
//! names the call to make (pinned in `.stderr` snapshots), and intended use compiles.
//!
//! Regenerate the snapshots with `TRYBUILD=overwrite cargo test --test ui` and read every
//! diff: each message must tell the user what to call.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui_tests/compile_fail/*.rs");
    t.pass("ui_tests/pass/*.rs");
}
