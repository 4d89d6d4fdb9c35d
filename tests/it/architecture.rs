//! The import rule of `docs/ARCHITECTURE.md`, checked on the source tree.
//!
//! Every file under `src/` belongs to a layer, by its path. Every path it names that starts at
//! the crate root (`crate::a::b`, `$crate::a`, groups such as `use crate::{a, b::c}`) or climbs
//! out of its folder (`super::super::x`) is mapped to the layer of its target, and a file may
//! name only its own layer or layers below. The two engines are one layer and never name each
//! other. Comments, string and character literals are blanked first, so a path in a doc
//! comment or a message is not an import.
//!
//! A second rule closes the driver layer: outside `src/runtime/driver.rs` no file calls the
//! driver itself (`cudarc::driver::result::`, `.launch_builder(`, `.load_module(`,
//! `.load_function(`, a raw `sys::cu*` binding) or handles a cudarc `DriverError` (so no file
//! turns one into a `GpuError::Driver` its own way).
//!
//! A third rule closes the NCCL layer the same way: outside `src/collective/nccl.rs` no file
//! names cudarc's NCCL bindings (`cudarc::nccl`).
//!
//! No GPU and no dependency needed: this reads files.

use std::fmt;
use std::path::{Path, PathBuf};

/// The layers, bottom to top. A file may import from its own layer and the ones below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    /// `element`, `error`, `fs_trust`, `layout/`, `host_vec`, `memory_location`.
    Base,
    /// `ops/`: op definitions.
    Ops,
    /// `tensor/`, `device`: the tensor types and the backend contract.
    Tensor,
    /// `storage/`: allocator algorithms over a memory source.
    Storage,
    /// `runtime/`: the GPU runtime (driver, device, streams, events, buffers).
    Runtime,
    /// `engine_cpu/`, `engine_gpu/`: the engines; `collective/` beside them.
    Engine,
    /// `synced/`: Caffe's SyncedMemory and Blob.
    Synced,
    /// `lib.rs`, `gpu.rs`: facades that only re-export (for users, not for the crate).
    Facade,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The layer of a top-level module of the crate (`element`, `engine_gpu`, ...), with the
/// engine's name for the sibling rule. `None`: not a module we know (a new folder must be
/// placed here before it can be used).
fn module_layer(name: &str) -> Option<(Layer, Option<&'static str>)> {
    Some(match name {
        "element" | "error" | "fs_trust" | "layout" | "host_vec" | "memory_location" | "oom" => {
            (Layer::Base, None)
        }
        // Root re-exports of base items (`crate::Result` and friends).
        "Error" | "Result" | "Layout" | "DType" | "Element" | "FloatElement" | "Numeric"
        | "Signed" => (Layer::Base, None),
        "ops" => (Layer::Ops, None),
        "tensor" | "device" => (Layer::Tensor, None),
        "Tensor" | "TensorView" | "TensorViewMut" | "Cpu" | "Device" => (Layer::Tensor, None),
        "storage" => (Layer::Storage, None),
        "runtime" => (Layer::Runtime, None),
        "engine_cpu" => (Layer::Engine, Some("engine_cpu")),
        // `int_divider` and `offset_calculator` are the GPU engine's modules, re-exported at
        // the root under their old public paths.
        "engine_gpu" | "int_divider" | "offset_calculator" => (Layer::Engine, Some("engine_gpu")),
        // NCCL collectives: above the runtime and the tensors, beside the engines.
        "collective" => (Layer::Engine, Some("collective")),
        "synced" => (Layer::Synced, None),
        "gpu" => (Layer::Facade, None),
        _ => return None,
    })
}

/// The layer of the file at `rel` (a path under `src/`, with `/` separators).
fn file_layer(rel: &str) -> Option<(Layer, Option<&'static str>)> {
    if rel == "lib.rs" || rel == "gpu.rs" {
        return Some((Layer::Facade, None));
    }
    let top = rel.split('/').next()?;
    module_layer(top.strip_suffix(".rs").unwrap_or(top))
}

/// Upward imports that are allowed, each with its reason: compatibility re-exports of public
/// paths that predate the layering. `(file, path prefix)`.
const ALLOWED: &[(&str, &str)] = &[
    // `ops::Backend` and `ops::backend` (public before the contract moved to `tensor/`).
    ("ops/mod.rs", "crate::tensor::backend"),
];

/// The only file that may call the driver.
const DRIVER: &str = "runtime/driver.rs";

/// The GPU engine's test folder (`cfg(test)` only), exempt from the driver rule.
const ENGINE_TESTS: &str = "engine_gpu/tests/";

/// What a file may not contain outside [`DRIVER`] (in code, not in comments or strings).
const DRIVER_CALLS: &[&str] = &[
    "cudarc::driver::result::",
    ".launch_builder(",
    ".load_module(",
    ".load_function(",
    "DriverError",
    // Raw bindings (`sys::cuMemAlloc_v2`); enum values (`sys::CU_...`, `sys::CUresult`) are
    // fine, as in cudarc's own safe layer.
    "sys::cu",
];

/// `src` with comments, string literals and character literals replaced by spaces (line
/// breaks kept, so positions keep their line numbers). Lifetimes are kept.
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(k).copied().unwrap_or('\0');
        // Line comment (doc comments included).
        if c[i] == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
            continue;
        }
        // Block comment, nested.
        if c[i] == '/' && at(i + 1) == '*' {
            let mut depth = 0usize;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            continue;
        }
        let ident_before = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        // Raw strings: r"..", r#".."#, br#".."#.
        if !ident_before && (c[i] == 'r' || (c[i] == 'b' && at(i + 1) == 'r')) {
            let mut j = if c[i] == 'b' { i + 2 } else { i + 1 };
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            if at(j) == '"' {
                let mut k = j + 1;
                loop {
                    if k >= c.len() {
                        break;
                    }
                    if c[k] == '"' && (1..=hashes).all(|h| at(k + h) == '#') {
                        k += 1 + hashes;
                        break;
                    }
                    k += 1;
                }
                for &ch in &c[i..k.min(c.len())] {
                    blank(&mut out, ch);
                }
                i = k;
                continue;
            }
        }
        // Strings and byte strings.
        if c[i] == '"' {
            blank(&mut out, c[i]);
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    blank(&mut out, c[i]);
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            if i < c.len() {
                blank(&mut out, c[i]);
                i += 1;
            }
            continue;
        }
        // Character literals ('a', '\n', '\u{..}', '"'); a lifetime ('a) is kept.
        if c[i] == '\'' {
            let end = if at(i + 1) == '\\' {
                (i + 3..c.len()).find(|&k| c[k] == '\'')
            } else if at(i + 2) == '\'' {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                for &ch in &c[i..=end] {
                    blank(&mut out, ch);
                }
                i = end + 1;
                continue;
            }
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char),
}

/// Identifiers (with `$crate` as `crate`) and single punctuation characters, each with its
/// line.
fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' || (ch == '$' && c.get(i + 1) == Some(&'c')) {
            let start = if ch == '$' { i + 1 } else { i };
            let mut j = start;
            while j < c.len() && (c[j].is_alphanumeric() || c[j] == '_') {
                j += 1;
            }
            out.push((Tok::Ident(c[start..j].iter().collect()), line));
            i = j;
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

fn is_path_sep(t: &[(Tok, usize)], k: usize) -> bool {
    matches!(t.get(k), Some((Tok::Punct(':'), _)))
        && matches!(t.get(k + 1), Some((Tok::Punct(':'), _)))
}

/// Parses the use tree (or plain path) after `prefix ::` starting at token `k`: every full
/// path it names, each at least the prefix plus one segment.
fn paths_from(
    t: &[(Tok, usize)],
    k: usize,
    prefix: &[String],
    out: &mut Vec<Vec<String>>,
) -> usize {
    match t.get(k) {
        Some((Tok::Ident(name), _)) => {
            let mut path = prefix.to_vec();
            path.push(name.clone());
            if is_path_sep(t, k + 1) {
                match t.get(k + 3) {
                    Some((Tok::Ident(_), _)) | Some((Tok::Punct('{'), _)) => {
                        return paths_from(t, k + 3, &path, out)
                    }
                    _ => {}
                }
            }
            out.push(path);
            k + 1
        }
        Some((Tok::Punct('{'), _)) => {
            let mut k = k + 1;
            loop {
                match t.get(k) {
                    None => return k,
                    Some((Tok::Punct('}'), _)) => return k + 1,
                    Some((Tok::Punct(','), _)) => k += 1,
                    Some((Tok::Ident(_), _)) | Some((Tok::Punct('{'), _)) => {
                        let next = paths_from(t, k, prefix, out);
                        // Skip `as name` and anything else up to the next item.
                        k = next;
                        while let Some((tok, _)) = t.get(k) {
                            if matches!(tok, Tok::Punct(',') | Tok::Punct('}')) {
                                break;
                            }
                            k += 1;
                        }
                    }
                    Some(_) => k += 1,
                }
            }
        }
        _ => {
            out.push(prefix.to_vec());
            k
        }
    }
}

/// One named path: the line it is on, its text, and its segments from the crate root.
#[derive(Debug)]
struct Import {
    line: usize,
    text: String,
    absolute: Vec<String>,
}

/// The module path of the file at `rel` (`runtime/stream.rs` → `[runtime, stream]`,
/// `ops/mod.rs` → `[ops]`, `lib.rs` → `[]`).
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.split('/').map(str::to_owned).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last).to_owned();
    if stem != "mod" && !(parts.is_empty() && (stem == "lib" || stem == "main")) {
        parts.push(stem);
    }
    parts
}

/// Every `crate::` path and every `super::` path in `code` (already stripped), resolved from
/// the file at `rel`. `super` inside an inline module (`mod tests { .. }`) is resolved from
/// that module.
fn imports(rel: &str, code: &str) -> Vec<Import> {
    let t = tokens(code);
    let file_mod = module_path(rel);
    // Inline modules open at a brace depth; a `super` inside climbs out of them first.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut out = Vec::new();
    let mut k = 0;
    while k < t.len() {
        match &t[k].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                while inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
            }
            Tok::Ident(kw) if kw == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) =
                    (t.get(k + 1), t.get(k + 2))
                {
                    inline.push((name.clone(), depth + 1));
                }
            }
            Tok::Ident(kw) if (kw == "crate" || kw == "super") && is_path_sep(&t, k + 1) => {
                // Not the tail of a longer path (`a::super` does not occur; `self::super` does).
                let preceded = k >= 2 && is_path_sep(&t, k - 2);
                let line = t[k].1;
                let mut base: Vec<String> = if kw == "crate" {
                    Vec::new()
                } else {
                    let mut m = file_mod.clone();
                    m.extend(inline.iter().map(|(n, _)| n.clone()));
                    m.pop();
                    m
                };
                let mut j = k + 3;
                if kw == "super" && !preceded {
                    while matches!(t.get(j), Some((Tok::Ident(s), _)) if s == "super")
                        && is_path_sep(&t, j + 1)
                    {
                        base.pop();
                        j += 3;
                    }
                }
                if kw == "crate" || !preceded {
                    let mut found = Vec::new();
                    let end = paths_from(&t, j, &base, &mut found);
                    let text: String = t[k..end.min(t.len())]
                        .iter()
                        .map(|(tok, _)| match tok {
                            Tok::Ident(s) => s.clone(),
                            Tok::Punct(p) => p.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join("")
                        .replace(",", ", ");
                    for absolute in found {
                        out.push(Import {
                            line,
                            text: text.clone(),
                            absolute,
                        });
                    }
                    k = end.max(k + 1);
                    continue;
                }
            }
            _ => {}
        }
        k += 1;
    }
    out
}

/// The violations of the import rule in one file (empty when it keeps it).
fn check_imports(rel: &str, src: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let Some((layer, engine)) = file_layer(rel) else {
        return vec![format!(
            "src/{rel} is in no layer: add its folder to tests/it/architecture.rs and docs/ARCHITECTURE.md"
        )];
    };
    for imp in imports(rel, &strip(src)) {
        let Some(first) = imp.absolute.first() else {
            continue; // `crate` or `super` itself, e.g. `pub(crate)`.
        };
        let joined = format!("crate::{}", imp.absolute.join("::"));
        // `ops::backend` / `ops::Backend` are the tensor layer's contract under an old path.
        let target = if first == "ops"
            && imp
                .absolute
                .get(1)
                .is_some_and(|s| s == "backend" || s == "Backend")
        {
            Some((Layer::Tensor, None))
        } else {
            module_layer(first)
        };
        let Some((target_layer, target_engine)) = target else {
            // A path into the crate root's own items (`crate::foo!` macros), or a name this
            // test does not know: refuse, so a new module gets a layer.
            bad.push(format!(
                "src/{rel}:{} names {joined} ({}), a module in no layer",
                imp.line, imp.text
            ));
            continue;
        };
        if ALLOWED
            .iter()
            .any(|(f, p)| *f == rel && joined.starts_with(p))
        {
            continue;
        }
        if target_layer > layer {
            bad.push(format!(
                "src/{rel}:{} imports {joined} (layer {target_layer} above layer {layer})",
                imp.line
            ));
        } else if target_layer == Layer::Engine && layer == Layer::Engine && target_engine != engine
        {
            bad.push(format!(
                "src/{rel}:{} imports {joined} (the engines never import each other)",
                imp.line
            ));
        }
    }
    bad
}

/// The driver calls made outside the driver module.
fn check_driver(rel: &str, src: &str) -> Vec<String> {
    if rel == DRIVER {
        return Vec::new();
    }
    let code = strip(src);
    let mut bad = Vec::new();
    // A `GpuError::Driver { .. }` whose message is some error's text (`e.to_string()`): a
    // driver failure worded outside `driver_error`. Refusals with a message of their own
    // (`format!`, a literal) are fine.
    let mut from = 0;
    while let Some(at) = code[from..].find("GpuError::Driver") {
        let start = from + at;
        let rest = &code[start..];
        let body_end = rest.find('}').unwrap_or(rest.len());
        let body: String = rest[..body_end].split_whitespace().collect();
        if body.starts_with("GpuError::Driver{") && body.contains(".to_string()") {
            let line = code[..start].matches('\n').count() + 1;
            bad.push(format!(
                "src/{rel}:{line} builds GpuError::Driver from an error's text: use {DRIVER}'s driver_error"
            ));
        }
        from = start + "GpuError::Driver".len();
    }
    for (n, line) in code.lines().enumerate() {
        let squeezed: String = line.split_whitespace().collect();
        for pat in DRIVER_CALLS {
            if squeezed.contains(pat) {
                bad.push(format!(
                    "src/{rel}:{} uses `{pat}`: driver calls and driver errors go through {DRIVER}",
                    n + 1
                ));
            }
        }
    }
    bad
}

/// The only file that may call NCCL.
const NCCL: &str = "collective/nccl.rs";

/// NCCL's bindings named outside [`NCCL`] (in code, not in comments or strings).
fn check_nccl(rel: &str, src: &str) -> Vec<String> {
    if rel == NCCL {
        return Vec::new();
    }
    strip(src)
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            line.split_whitespace()
                .collect::<String>()
                .contains("cudarc::nccl")
        })
        .map(|(n, _)| {
            format!(
                "src/{rel}:{} uses `cudarc::nccl`: NCCL calls and their errors go through {NCCL}",
                n + 1
            )
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_folder_imports_only_from_the_layers_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    assert!(
        files.len() > 50,
        "found only {} files under src/",
        files.len()
    );
    let mut bad = Vec::new();
    let mut checked = 0;
    for path in &files {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(path).unwrap();
        checked += imports(&rel, &strip(&text)).len();
        bad.extend(check_imports(&rel, &text));
        // The GPU engine's own tests (`engine_gpu/tests/`, compiled only with `cfg(test)`)
        // launch hand-written kernels through cudarc to check the kernel headers against the
        // host's index math: they are not part of the library the driver rule closes.
        if !rel.starts_with(ENGINE_TESTS) {
            bad.extend(check_driver(&rel, &text));
        }
        bad.extend(check_nccl(&rel, &text));
    }
    assert!(
        checked > 300,
        "only {checked} crate paths found: is the parser broken?"
    );
    assert!(
        bad.is_empty(),
        "{} violations of docs/ARCHITECTURE.md:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[cfg(test)]
mod catches {
    use super::*;

    #[test]
    fn an_upward_use_is_reported_with_both_layers() {
        let src = "use crate::element::Element;\nuse crate::{layout::Layout, runtime::Stream};\n";
        let bad = check_imports("storage/x.rs", src);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert_eq!(
            bad[0],
            "src/storage/x.rs:2 imports crate::runtime::Stream (layer Runtime above layer Storage)"
        );
    }

    #[test]
    fn paths_in_expressions_nested_groups_and_macros_count() {
        let src = "fn f() { let s = crate::synced::Blob::<f32>::new(); }\n\
                   use crate::{ops::{table::Add, cast}, tensor::{self, Tensor}};\n\
                   macro_rules! m { () => { $crate::engine_gpu::pointwise::x() } }\n";
        let bad = check_imports("ops/x.rs", src);
        assert_eq!(bad.len(), 4, "{bad:#?}");
        assert!(bad[0].contains("crate::synced::Blob (layer Synced above layer Ops)"));
        assert!(bad[1].contains("crate::tensor::self"));
        assert!(bad[2].contains("crate::tensor::Tensor"));
        assert!(bad[3].contains("crate::engine_gpu::pointwise::x (layer Engine above layer Ops)"));
    }

    #[test]
    fn super_paths_that_leave_the_folder_are_resolved() {
        // From src/engine_cpu/runs.rs, `super::super::engine_gpu` is crate::engine_gpu.
        let bad = check_imports(
            "engine_cpu/runs.rs",
            "use super::super::engine_gpu::reduce;\n",
        );
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(
            bad[0].contains("the engines never import each other"),
            "{bad:?}"
        );
        // `super` inside `mod tests` is the file's own module: fine.
        let ok = "mod tests { use super::*; use super::super::kernels::x; }\n";
        assert!(check_imports("engine_cpu/runs.rs", ok).is_empty());
        // From a mod.rs, `super::x` is a sibling folder of the crate root.
        let bad = check_imports("tensor/mod.rs", "use super::synced::Blob;\n");
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].contains("crate::synced::Blob"), "{bad:?}");
    }

    #[test]
    fn comments_and_strings_are_not_imports() {
        let src = "// use crate::synced::Blob;\n\
                   /// [`x`](crate::runtime::Gpu)\n\
                   /* crate::runtime /* nested */ crate::synced */\n\
                   const S: &str = \"crate::synced::Blob\";\n\
                   const R: &str = r#\"crate::synced \"quoted\" \"#;\n\
                   const C: char = '\"'; fn f<'a>(x: &'a str) -> &'a str { x }\n\
                   use crate::element::Element;\n";
        assert!(check_imports("layout/x.rs", src).is_empty());
        assert_eq!(imports("layout/x.rs", &strip(src)).len(), 1);
        let leak = "fn f() { let m = \".load_module(\"; } // stream.launch_builder(&f)\n";
        assert!(check_driver("engine_gpu/x.rs", leak).is_empty());
    }

    #[test]
    fn driver_calls_outside_the_driver_module_are_reported() {
        let src = "unsafe { cudarc::driver::result::launch_kernel(f, g, b, 0, s, p) }\n\
                   let m = ctx\n    .load_module(ptx)?;\n\
                   fn e(e: cudarc::driver::DriverError) -> GpuError { GpuError::Driver { call: \"x\", message: e.to_string() } }\n";
        let bad = check_driver("engine_gpu/x.rs", src);
        assert_eq!(bad.len(), 4, "{bad:#?}");
        assert!(
            bad[0].contains("src/engine_gpu/x.rs:4 builds GpuError::Driver"),
            "{bad:#?}"
        );
        assert!(check_driver("runtime/driver.rs", src).is_empty());
        // A refusal worded here is not a driver error's text.
        let refusal = "return Err(GpuError::Driver {\n call: \"cuEventElapsedTime\",\n message: format!(\"both events must time\"),\n });\n";
        assert!(check_driver("runtime/event.rs", refusal).is_empty());
    }

    #[test]
    fn nccl_calls_outside_the_nccl_module_are_reported() {
        let src = "use cudarc::nccl::sys;\n// cudarc::nccl in a comment\nfn f() {}\n";
        let bad = check_nccl("collective/comm.rs", src);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].starts_with("src/collective/comm.rs:1 uses `cudarc::nccl`"));
        assert!(check_nccl("collective/nccl.rs", src).is_empty());
        // The collectives sit beside the engines: they may use the runtime, not an engine.
        assert!(check_imports("collective/x.rs", "use crate::runtime::Gpu;\n").is_empty());
        let bad = check_imports("collective/x.rs", "use crate::engine_gpu::pointwise;\n");
        assert!(
            bad[0].contains("the engines never import each other"),
            "{bad:?}"
        );
        assert!(check_imports("synced/x.rs", "use crate::collective::LocalGroup;\n").is_empty());
    }

    #[test]
    fn new_folders_must_be_placed() {
        let bad = check_imports("fusion/mod.rs", "use crate::ops::op::UnaryOp;\n");
        assert_eq!(bad.len(), 1);
        assert!(bad[0].contains("in no layer"));
        let bad = check_imports("ops/x.rs", "use crate::fusion::Trace;\n");
        assert!(bad[0].contains("a module in no layer"), "{bad:?}");
    }

    #[test]
    fn the_compatibility_re_export_is_the_only_exception() {
        let src = "pub use crate::tensor::backend::Backend;\n";
        assert!(check_imports("ops/mod.rs", src).is_empty());
        assert_eq!(check_imports("ops/table.rs", src).len(), 1);
        // Using the contract through its old path from below is still upward.
        assert_eq!(
            check_imports("ops/table.rs", "use crate::ops::Backend;\n").len(),
            1
        );
    }
}
