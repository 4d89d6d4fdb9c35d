//! Call stacks for recorded events, from `std::backtrace`.

use std::backtrace::Backtrace;
use std::sync::Arc;

/// One frame of a recorded call stack (PyTorch's `Frame`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Source file, or `"?"` when the binary has no debug information.
    pub filename: String,
    /// Line in `filename` (0 when unknown).
    pub line: u32,
    /// Function name.
    pub name: String,
}

/// The current call stack, innermost first, without the frames of the recording machinery
/// itself and of the standard library's backtrace code.
pub(crate) fn capture_frames() -> Arc<[Frame]> {
    let text = Backtrace::force_capture().to_string();
    parse(&text).into()
}

/// Frames of `std::backtrace::Backtrace`'s display:
///
/// ```text
///    3: my_crate::train::step
///              at ./src/train.rs:42:9
/// ```
///
/// A frame without an `at` line gets file `"?"` and line 0.
fn parse(text: &str) -> Vec<Frame> {
    let mut frames: Vec<Frame> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(location) = line.strip_prefix("at ") {
            if let Some(frame) = frames.last_mut() {
                // `path:line:column`; paths may contain ':' (Windows drives), so split from
                // the right.
                let mut parts = location.rsplitn(3, ':');
                let _column = parts.next();
                let number = parts.next().and_then(|n| n.parse().ok());
                match (number, parts.next()) {
                    (Some(n), Some(file)) => {
                        frame.line = n;
                        file.clone_into(&mut frame.filename);
                    }
                    _ => location.clone_into(&mut frame.filename),
                }
            }
        } else if let Some((index, name)) = line.split_once(": ") {
            if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) {
                frames.push(Frame {
                    filename: "?".to_owned(),
                    line: 0,
                    name: name.to_owned(),
                });
            }
        }
    }
    frames.retain(|f| !is_machinery(&f.name));
    frames
}

fn is_machinery(name: &str) -> bool {
    const SKIP: [&str; 4] = [
        "std::backtrace",
        "std::backtrace_rs",
        "typestate_tensor::storage::history::",
        "typestate_tensor::storage::caching::state::",
    ];
    SKIP.iter().any(|s| name.starts_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_std_backtrace_text() {
        let text = "   0: std::backtrace::Backtrace::force_capture\n             at /rustc/abc/library/std/src/backtrace.rs:312:13\n   1: my_crate::train::step\n             at ./src/train.rs:42:9\n   2: main\n";
        let frames = parse(text);
        assert_eq!(
            frames,
            vec![
                Frame {
                    filename: "./src/train.rs".into(),
                    line: 42,
                    name: "my_crate::train::step".into()
                },
                Frame {
                    filename: "?".into(),
                    line: 0,
                    name: "main".into()
                },
            ]
        );
    }
}
