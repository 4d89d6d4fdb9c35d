//! The import rule of `docs/ARCHITECTURE.md`, checked on the source tree.
//!
//! Every file under `src/` belongs to a layer, by its path. Every path it names that starts at
//! the crate root (`crate::a::b`, `$crate::a`, groups such as `use crate::{a, b::c}`) or climbs
//! out of its folder (`super::super::x`) is mapped to the layer of its target, and a file may
//! name only its own layer or layers below. The two engines are one layer and never name each
//! other. Comments, string and character literals are blanked first, so a path in a doc
//! comment or a message is not an import.
//!
//! A second rule closes the driver layer: outside the files of `src/runtime/driver/` no file
//! calls the driver itself (`cudarc::driver::result`, under any alias, `.launch_builder(`,
//! `.load_module(`, `.load_function(`, a raw `sys::cu*` binding) or handles a cudarc
//! `DriverError` (so no file turns one into a `GpuError::Driver` its own way).
//!
//! A fourth rule forbids import circles between files ([`Crate`], [`check_cycles`]): every
//! path a file names (`use` items, with globs, groups and aliases, and paths in code) is
//! resolved to the file that defines its target, through re-exports, and the graph of those
//! imports must have no cycle, except the ones listed in [`ALLOWED_CYCLES`].
//!
//! A third rule closes the NCCL layer the same way: outside `src/collective/nccl.rs` no file
//! names cudarc's NCCL bindings (`cudarc::nccl`).
//!
//! A fifth rule keeps the GPU engine a stack ([`check_engine_stack`]): its backend on top,
//! the kernel families `pointwise/`, `fused/` and `reduce/` side by side, never importing
//! each other, the shared `kernel/` folder beneath them importing none of them, and the
//! compile layer and index math at the bottom.
//!
//! No GPU and no dependency needed: this reads files.

use std::collections::BTreeMap;
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
        // issue 30 (dlpack): DLPack export and import, beside the engines (imports none).
        "dlpack" => (Layer::Engine, Some("dlpack")),
        "synced" => (Layer::Synced, None),
        // issue 30 (files): tensor files, beside `synced` (they save and restore Blobs).
        "io" => (Layer::Synced, None),
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

/// The only folder whose files may call the driver (cudarc's `result` layer grouped by
/// concern: `context.rs`, `stream.rs`, `event.rs`, `memory.rs`, ...). The trailing `/` keeps
/// a sibling such as `runtime/driver_pool.rs` outside it.
const DRIVER: &str = "runtime/driver/";

/// Whether the file at `rel` is one of the driver layer's files.
fn in_driver(rel: &str) -> bool {
    rel.starts_with(DRIVER)
}

/// The GPU engine's test folder (`cfg(test)` only), exempt from the driver rule.
const ENGINE_TESTS: &str = "engine_gpu/tests/";

/// What a file may not contain outside [`DRIVER`] (in code, not in comments or strings).
/// (`cudarc::driver::result` and aliases of it are found path by path: [`Crate::driver_paths`].)
const DRIVER_CALLS: &[&str] = &[
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
                // Not the tail of a longer path (`a::super` does not occur); `self::super` is
                // `super`.
                let after_self = k >= 3
                    && is_path_sep(&t, k - 2)
                    && matches!(&t[k - 3].0, Tok::Ident(s) if s == "self")
                    && !(k >= 5 && is_path_sep(&t, k - 5));
                let preceded = k >= 2 && is_path_sep(&t, k - 2) && !after_self;
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
    if in_driver(rel) {
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
                "src/{rel}:{line} builds GpuError::Driver from an error's text: use {DRIVER}mod.rs's driver_error"
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
    bad.extend(Crate::new(&[(rel.to_owned(), src.to_owned())]).driver_paths(0));
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

/// Issue 27: the only folder that may call cuBLAS / cuBLASLt (closed like NCCL).
const CUBLAS: &str = "engine_gpu/matmul/cublaslt/";

/// cuBLAS's and cuBLASLt's bindings named outside [`CUBLAS`] (in code, not in comments).
fn check_cublas(rel: &str, src: &str) -> Vec<String> {
    if rel.starts_with(CUBLAS) {
        return Vec::new();
    }
    strip(src)
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            l.split_whitespace()
                .collect::<String>()
                .contains("cudarc::cublas")
        })
        .map(|(n, _)| {
            format!(
                "src/{rel}:{} uses `cudarc::cublas`: cuBLASLt calls go through {CUBLAS}",
                n + 1
            )
        })
        .collect()
}

#[test]
fn cublas_calls_outside_the_cublaslt_module_are_reported() {
    let src = "use cudarc::cublaslt::sys as lt;\n// cudarc::cublas in a comment\n";
    assert_eq!(check_cublas("engine_gpu/matmul/run.rs", src).len(), 1);
    assert!(check_cublas("engine_gpu/matmul/cublaslt/call.rs", src).is_empty());
}

// ---------------------------------------------------------------------------------------------
// The module graph: no import circles.
// ---------------------------------------------------------------------------------------------

/// Cycles that are known and allowed, each with its reason: the files of one strongly
/// connected component, exactly (a cycle that grows or changes fails again).
const ALLOWED_CYCLES: &[(&[&str], &str)] = &[];

/// One `use` item: the name it binds in its module (none for a glob or `as _`), what it
/// names as written, and whether other modules may name it through this one.
#[derive(Debug, Clone)]
struct UseItem {
    module: Vec<String>,
    line: usize,
    written: Vec<String>,
    name: Option<String>,
    glob: bool,
    public: bool,
}

/// A path named in code (not in a `use`), as written, with the module it is written in.
#[derive(Debug, Clone)]
struct CodePath {
    module: Vec<String>,
    line: usize,
    written: Vec<String>,
}

/// What one file declares and names.
#[derive(Debug, Default)]
struct FileInfo {
    rel: String,
    uses: Vec<UseItem>,
    paths: Vec<CodePath>,
    /// Inline modules (`mod tests { .. }`), as module paths from the crate root.
    inline: Vec<Vec<String>>,
    /// Identifiers named in code outside `use` items (to tell a re-export the file also uses).
    idents: std::collections::BTreeSet<String>,
}

/// Parses the use tree at token `k` under `prefix`: `(written path, binding, glob)` per leaf.
fn use_tree(
    t: &[(Tok, usize)],
    k: usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, Option<String>, bool)>,
) -> usize {
    match t.get(k) {
        Some((Tok::Punct(':'), _)) if is_path_sep(t, k) => use_tree(t, k + 2, prefix, out),
        Some((Tok::Punct('*'), _)) => {
            out.push((prefix.to_vec(), None, true));
            k + 1
        }
        Some((Tok::Ident(name), _)) => {
            let mut path = prefix.to_vec();
            if name != "self" || prefix.is_empty() {
                path.push(name.clone());
            }
            if is_path_sep(t, k + 1) {
                return use_tree(t, k + 3, &path, out);
            }
            let mut binding = path.last().cloned();
            let mut end = k + 1;
            if matches!(t.get(k + 1), Some((Tok::Ident(a), _)) if a == "as") {
                binding = match t.get(k + 2) {
                    Some((Tok::Ident(alias), _)) if alias != "_" => Some(alias.clone()),
                    _ => None,
                };
                end = k + 3;
            }
            out.push((path, binding, false));
            end
        }
        Some((Tok::Punct('{'), _)) => {
            let mut k = k + 1;
            loop {
                match t.get(k) {
                    None => return k,
                    Some((Tok::Punct('}'), _)) => return k + 1,
                    Some((Tok::Punct(','), _)) => k += 1,
                    Some(_) => {
                        let next = use_tree(t, k, prefix, out);
                        k = next.max(k + 1);
                    }
                }
            }
        }
        _ => k + 1,
    }
}

/// Reads one file: its `use` items, the paths in its code and its inline modules.
fn file_info(rel: &str, code: &str) -> FileInfo {
    let t = tokens(code);
    let file_mod = module_path(rel);
    let mut info = FileInfo {
        rel: rel.to_owned(),
        ..FileInfo::default()
    };
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let here = |inline: &[(String, usize)]| {
        let mut m = file_mod.clone();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    let ident = |k: usize| match t.get(k) {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
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
                if let (Some(name), Some((Tok::Punct('{'), _))) = (ident(k + 1), t.get(k + 2)) {
                    inline.push((name.to_owned(), depth + 1));
                    info.inline.push(here(&inline));
                    depth += 1;
                    k += 3;
                    continue;
                }
                k += 2; // `mod name;` declares, it does not import.
                continue;
            }
            Tok::Ident(kw) if kw == "use" => {
                // `pub use`, `pub(crate) use`, `pub(in path) use`: a re-export.
                let public = (k >= 1 && ident(k - 1) == Some("pub"))
                    || (k >= 2
                        && matches!(t[k - 1].0, Tok::Punct(')'))
                        && (0..k).rev().take(8).any(|j| {
                            ident(j) == Some("pub")
                                && matches!(t.get(j + 1), Some((Tok::Punct('('), _)))
                        }));
                let mut leaves = Vec::new();
                let end = use_tree(&t, k + 1, &[], &mut leaves);
                for (written, name, glob) in leaves {
                    info.uses.push(UseItem {
                        module: here(&inline),
                        line: t[k].1,
                        written,
                        name,
                        glob,
                        public,
                    });
                }
                k = end.max(k + 1);
                continue;
            }
            Tok::Ident(first) => {
                let preceded = k >= 2 && is_path_sep(&t, k - 2);
                if !preceded {
                    info.idents.insert(first.clone());
                }
                if !preceded && is_path_sep(&t, k + 1) && ident(k + 3).is_some() {
                    let mut written = vec![first.clone()];
                    let mut j = k + 1;
                    while is_path_sep(&t, j) {
                        let Some(seg) = ident(j + 2) else { break };
                        written.push(seg.to_owned());
                        j += 3;
                    }
                    info.paths.push(CodePath {
                        module: here(&inline),
                        line: t[k].1,
                        written,
                    });
                    k = j;
                    continue;
                }
            }
            _ => {}
        }
        k += 1;
    }
    info
}

/// A file's imports: target file → (files passed through, line, path as written).
type Adjacent = BTreeMap<usize, (Vec<usize>, usize, String)>;

/// The crate: every module (file or inline) with the file that holds it, and what each file
/// declares and names.
struct Crate {
    modules: BTreeMap<Vec<String>, usize>,
    files: Vec<FileInfo>,
}

impl Crate {
    fn new(sources: &[(String, String)]) -> Crate {
        let mut modules = BTreeMap::new();
        let mut files = Vec::new();
        for (i, (rel, text)) in sources.iter().enumerate() {
            let info = file_info(rel, &strip(text));
            modules.insert(module_path(rel), i);
            for m in &info.inline {
                modules.insert(m.clone(), i);
            }
            files.push(info);
        }
        Crate { modules, files }
    }

    /// `written`, named in module `module` of file `file`, from the crate root
    /// (`["crate", ..]`) or from an external crate (`["cudarc", ..]`).
    fn resolve(
        &self,
        file: usize,
        module: &[String],
        written: &[String],
        depth: u32,
    ) -> Vec<String> {
        let Some(first) = written.first() else {
            return Vec::new();
        };
        let mut out = vec!["crate".to_owned()];
        match first.as_str() {
            "crate" => out.extend_from_slice(&written[1..]),
            "self" | "super" => {
                let mut base = module.to_vec();
                let mut i = usize::from(first == "self");
                while written.get(i).is_some_and(|s| s == "super") {
                    base.pop();
                    i += 1;
                }
                out.extend(base);
                out.extend_from_slice(&written[i..]);
            }
            name => {
                let mut child = module.to_vec();
                child.push(name.to_owned());
                if self.modules.contains_key(&child) {
                    out.extend(child);
                    out.extend_from_slice(&written[1..]);
                } else if let Some(target) = self.binding(file, module, name, depth) {
                    out = target;
                    out.extend_from_slice(&written[1..]);
                } else {
                    return written.to_vec();
                }
            }
        }
        out
    }

    /// What `name` is bound to by a `use` in `module` (or, for code inside an inline module
    /// that globs its parent, in a module around it) of file `file`.
    fn binding(
        &self,
        file: usize,
        module: &[String],
        name: &str,
        depth: u32,
    ) -> Option<Vec<String>> {
        if depth > 8 {
            return None;
        }
        let mut m = module.to_vec();
        loop {
            if let Some(u) = self.files[file]
                .uses
                .iter()
                .find(|u| u.module == m && u.name.as_deref() == Some(name))
            {
                return Some(self.resolve(file, &u.module, &u.written, depth + 1));
            }
            // Extern globs (`use cudarc::driver::*;` brings `result` and `sys`).
            for u in self.files[file]
                .uses
                .iter()
                .filter(|u| u.module == m && u.glob)
            {
                let target = self.resolve(file, &u.module, &u.written, depth + 1);
                if target.first().is_some_and(|s| s != "crate") {
                    let mut p = target;
                    p.push(name.to_owned());
                    if p.starts_with(&["cudarc".into(), "driver".into()]) && p.len() == 3 {
                        return Some(p);
                    }
                }
            }
            if m.len() <= module_path(&self.files[file].rel).len() || m.is_empty() {
                return None;
            }
            m.pop();
        }
    }

    /// The file that a crate path (`["crate", ..]`) reaches, following re-exports (`pub use`
    /// in a `mod.rs`, a private `use` named through `super::`), with the files passed through.
    fn target(&self, path: &[String], depth: u32) -> Option<(usize, Vec<usize>)> {
        let segs = path.get(1..)?;
        let k = (0..=segs.len())
            .rev()
            .find(|&k| self.modules.contains_key(&segs[..k]))?;
        let file = self.modules[&segs[..k]];
        let Some(name) = segs.get(k) else {
            return Some((file, Vec::new()));
        };
        if depth < 8 {
            if let Some(u) = self.files[file]
                .uses
                .iter()
                .find(|u| u.module == segs[..k] && u.name.as_deref() == Some(name))
            {
                let mut next = self.resolve(file, &u.module, &u.written, 0);
                if next.first().is_none_or(|s| s != "crate") {
                    return None; // A re-export of another crate's item.
                }
                next.extend_from_slice(&segs[k + 1..]);
                let (to, mut via) = self.target(&next, depth + 1)?;
                via.insert(0, file);
                return Some((to, via));
            }
        }
        Some((file, Vec::new()))
    }

    /// Every import edge of file `i`: `(target file, files passed through, line, written)`.
    fn edges(&self, i: usize) -> Vec<(usize, Vec<usize>, usize, String)> {
        let f = &self.files[i];
        let mut out = Vec::new();
        let mut add = |module: &[String], written: &[String], line: usize| {
            let path = self.resolve(i, module, written, 0);
            if path.first().is_some_and(|s| s == "crate") {
                if let Some((to, via)) = self.target(&path, 0) {
                    if to != i {
                        out.push((to, via, line, written.join("::")));
                    }
                }
            }
        };
        for u in &f.uses {
            // A named re-export is followed by whoever names it; it is this file's import
            // only if the file's own code uses the name too.
            if u.public && !u.glob && !u.name.as_ref().is_some_and(|n| f.idents.contains(n)) {
                continue;
            }
            add(&u.module, &u.written, u.line);
        }
        for p in &f.paths {
            add(&p.module, &p.written, p.line);
        }
        out
    }

    /// One line per import circle among the files (`src/`-relative paths) for which `in_graph`
    /// holds: the files of each strongly connected component and a shortest cycle in it, as a
    /// chain of files with the line and path of each import.
    fn cycles(&self, in_graph: impl Fn(&str) -> bool) -> Vec<(Vec<String>, String)> {
        let n = self.files.len();
        let keep: Vec<bool> = self.files.iter().map(|f| in_graph(&f.rel)).collect();
        let mut adj: Vec<Adjacent> = vec![BTreeMap::new(); n];
        for i in (0..n).filter(|&i| keep[i]) {
            for (to, via, line, text) in self.edges(i) {
                if keep[to] {
                    adj[i].entry(to).or_insert((via, line, text));
                }
            }
        }
        // Tarjan's strongly connected components.
        struct Tarjan<'a> {
            adj: &'a [Adjacent],
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            on: Vec<bool>,
            stack: Vec<usize>,
            next: usize,
            sccs: Vec<Vec<usize>>,
        }
        impl Tarjan<'_> {
            fn visit(&mut self, v: usize) {
                self.index[v] = Some(self.next);
                self.low[v] = self.next;
                self.next += 1;
                self.stack.push(v);
                self.on[v] = true;
                for &w in self.adj[v].keys() {
                    match self.index[w] {
                        None => {
                            self.visit(w);
                            self.low[v] = self.low[v].min(self.low[w]);
                        }
                        Some(iw) if self.on[w] => self.low[v] = self.low[v].min(iw),
                        _ => {}
                    }
                }
                if Some(self.low[v]) == self.index[v] {
                    let mut scc = Vec::new();
                    while let Some(w) = self.stack.pop() {
                        self.on[w] = false;
                        scc.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if scc.len() > 1 {
                        scc.sort();
                        self.sccs.push(scc);
                    }
                }
            }
        }
        let mut tj = Tarjan {
            adj: &adj,
            index: vec![None; n],
            low: vec![0; n],
            on: vec![false; n],
            stack: Vec::new(),
            next: 0,
            sccs: Vec::new(),
        };
        for (v, &kept) in keep.iter().enumerate() {
            if kept && tj.index[v].is_none() {
                tj.visit(v);
            }
        }
        let mut out = Vec::new();
        for scc in tj.sccs {
            // A shortest cycle through the component's first file (breadth first).
            let start = scc[0];
            let mut prev: BTreeMap<usize, usize> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([start]);
            let mut last = None;
            'bfs: while let Some(v) = queue.pop_front() {
                for &w in adj[v].keys() {
                    if w == start {
                        last = Some(v);
                        break 'bfs;
                    }
                    if scc.contains(&w) && !prev.contains_key(&w) {
                        prev.insert(w, v);
                        queue.push_back(w);
                    }
                }
            }
            let mut chain = vec![start];
            let mut v = last.expect("a component of two or more files has a cycle");
            while v != start {
                chain.push(v);
                v = prev[&v];
            }
            chain[1..].reverse();
            chain.push(start);
            let mut text = format!("src/{}", self.files[start].rel);
            for pair in chain.windows(2) {
                let (via, line, written) = &adj[pair[0]][&pair[1]];
                text.push_str(&format!(":{line} ({written})"));
                for &m in via {
                    text.push_str(&format!(" -> src/{} (re-export)", self.files[m].rel));
                }
                text.push_str(&format!(" -> src/{}", self.files[pair[1]].rel));
            }
            let files = scc.iter().map(|&i| self.files[i].rel.clone()).collect();
            out.push((files, text));
        }
        out
    }

    /// The paths to cudarc's raw driver modules named outside [`DRIVER`], through any alias
    /// (`use cudarc::driver::result;` then `result::launch_kernel(..)`): `result` is the
    /// driver, `sys::cu*` a raw binding.
    fn driver_paths(&self, i: usize) -> Vec<String> {
        let f = &self.files[i];
        let mut bad = Vec::new();
        let items = f
            .uses
            .iter()
            .map(|u| (&u.module, &u.written, u.line))
            .chain(f.paths.iter().map(|p| (&p.module, &p.written, p.line)));
        for (module, written, line) in items {
            let path = self.resolve(i, module, written, 0);
            let raw = path.len() >= 3 && path[0] == "cudarc" && path[1] == "driver";
            let result = raw && path[2] == "result";
            let sys_call =
                raw && path[2] == "sys" && path.get(3).is_some_and(|s| s.starts_with("cu"));
            // A literal `sys::cu` is reported line by line (DRIVER_CALLS).
            let literal = written
                .windows(2)
                .any(|w| w[0] == "sys" && w[1].starts_with("cu"));
            if result || (sys_call && !literal) {
                bad.push(format!(
                    "src/{}:{line} names {} (`{}`): driver calls and driver errors go through {DRIVER}",
                    f.rel,
                    path.join("::"),
                    written.join("::")
                ));
            }
        }
        bad
    }
}

/// The import circles among `sources` (`(path under src/, text)`), less the allowed ones:
/// one message per circle.
fn check_cycles(sources: &[(String, String)]) -> Vec<String> {
    let krate = Crate::new(sources);
    krate
        .cycles(|rel| !rel.starts_with(ENGINE_TESTS))
        .into_iter()
        .filter(|(files, _)| {
            !ALLOWED_CYCLES
                .iter()
                .any(|(allowed, _)| allowed.iter().copied().eq(files.iter().map(String::as_str)))
        })
        .map(|(files, chain)| format!("import circle among {}: {chain}", files.join(", ")))
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
        bad.extend(check_cublas(&rel, &text)); // issue 27
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

/// Every file under `src/` and its text, with `src/`-relative paths.
fn sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .iter()
        .map(|path| {
            let rel = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(path).unwrap())
        })
        .collect()
}

#[test]
fn no_file_imports_itself_through_others() {
    let sources = sources();
    let krate = Crate::new(&sources);
    let edges: usize = (0..sources.len()).map(|i| krate.edges(i).len()).sum();
    assert!(
        edges > 500,
        "only {edges} imports between files found: is the parser broken?"
    );
    let bad = check_cycles(&sources);
    assert!(
        bad.is_empty(),
        "{} import circles (docs/ARCHITECTURE.md, \"No import circles\"):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The GPU engine as a stack.
// ---------------------------------------------------------------------------------------------

/// The GPU engine's levels, bottom to top (`docs/ARCHITECTURE.md`, "The GPU engine").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum EngineLevel {
    /// `compile/`, `int_divider.rs`, `offset_calculator.rs`: NVRTC, the compile caches and
    /// the index math the kernels share with the host.
    Base,
    /// `kernel/`: what every kernel family shares.
    Kernel,
    /// `pointwise/`, `fused/`, `reduce/`: the kernel families, side by side.
    Family,
    /// `backend.rs`, `transfer.rs`, `sleep.rs`, `mod.rs`: the engine's entries.
    Top,
}

/// The level of a file under `src/engine_gpu/` and, for a kernel family, its folder; `None`
/// for files outside the engine and for its `tests/` folder (the engine's own tests reach
/// every part of it).
fn engine_level(rel: &str) -> Option<(EngineLevel, &str)> {
    let inner = rel.strip_prefix("engine_gpu/")?;
    if inner.starts_with("tests/") {
        return None;
    }
    let top = inner.split('/').next()?;
    let level = match top {
        "kernel" => EngineLevel::Kernel,
        "pointwise" | "fused" | "reduce" => EngineLevel::Family,
        "compile" | "int_divider.rs" | "offset_calculator.rs" => EngineLevel::Base,
        _ => EngineLevel::Top,
    };
    Some((level, top))
}

/// The imports inside `src/engine_gpu/` that break the stack, one message each: a file may
/// import its own folder and the levels below its own, and a kernel family none of the other
/// families. Paths are resolved as for the cycle rule ([`Crate`]: globs, groups, aliases,
/// `super` chains, re-exports).
fn check_engine_stack(sources: &[(String, String)]) -> Vec<String> {
    let krate = Crate::new(sources);
    let mut bad = Vec::new();
    for (i, f) in krate.files.iter().enumerate() {
        let Some((from, from_dir)) = engine_level(&f.rel) else {
            continue;
        };
        for (to, _, line, written) in krate.edges(i) {
            let Some((level, dir)) = engine_level(&krate.files[to].rel) else {
                continue;
            };
            let why = if level > from {
                Some(format!("{level:?} above {from:?}"))
            } else if level == from && level == EngineLevel::Family && dir != from_dir {
                Some(format!(
                    "the kernel families `{from_dir}/` and `{dir}/` sit side by side"
                ))
            } else {
                None
            };
            if let Some(why) = why {
                bad.push(format!(
                    "src/{}:{line} imports {written} (src/{}): {why}",
                    f.rel, krate.files[to].rel
                ));
            }
        }
    }
    bad
}

#[test]
fn the_gpu_engine_is_a_stack() {
    let sources = sources();
    let engine = sources
        .iter()
        .filter(|(rel, _)| engine_level(rel).is_some_and(|(l, _)| l == EngineLevel::Kernel))
        .count();
    assert!(
        engine >= 5,
        "only {engine} files under src/engine_gpu/kernel/"
    );
    let bad = check_engine_stack(&sources);
    assert!(
        bad.is_empty(),
        "{} imports break the GPU engine's stack (docs/ARCHITECTURE.md, \"The GPU engine\"):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[cfg(test)]
mod engine_stack_catches {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(rel, text)| (rel.to_string(), text.to_string()))
            .collect()
    }

    /// A small engine: the families use the shared folder, the backend uses the families.
    fn engine(extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut list = vec![
            (
                "engine_gpu/mod.rs",
                "mod backend;\nmod kernel;\nmod pointwise;\nmod fused;\nmod reduce;\nmod compile;\nmod tests;\n",
            ),
            ("engine_gpu/backend.rs", "use super::pointwise::launch;\nuse super::fused::go;\n"),
            ("engine_gpu/kernel/mod.rs", "pub mod launch;\npub mod source;\n"),
            ("engine_gpu/kernel/launch.rs", "use super::source::Operand;\nuse crate::engine_gpu::compile::KernelCache;\n"),
            ("engine_gpu/kernel/source.rs", "pub struct Operand;\n"),
            ("engine_gpu/compile/mod.rs", "pub struct KernelCache;\n"),
            ("engine_gpu/pointwise/mod.rs", "pub mod launch;\n"),
            ("engine_gpu/pointwise/launch.rs", "use crate::engine_gpu::kernel::launch::x;\npub fn launch() {}\n"),
            ("engine_gpu/fused/mod.rs", "pub fn go() { crate::engine_gpu::kernel::source::Operand; }\n"),
            ("engine_gpu/reduce/mod.rs", "use super::super::kernel::*;\n"),
            ("engine_gpu/tests/mod.rs", "use crate::engine_gpu::pointwise::launch;\nuse crate::engine_gpu::backend;\n"),
        ];
        list.extend_from_slice(extra);
        files(&list)
    }

    #[test]
    fn a_well_built_stack_passes() {
        let ok = engine(&[]);
        assert!(
            check_engine_stack(&ok).is_empty(),
            "{:#?}",
            check_engine_stack(&ok)
        );
    }

    #[test]
    fn a_family_importing_another_fails() {
        let bad = engine(&[(
            "engine_gpu/fused/launch.rs",
            "use crate::engine_gpu::pointwise::launch::launch;\n",
        )]);
        let found = check_engine_stack(&bad);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].starts_with("src/engine_gpu/fused/launch.rs:1 imports crate::engine_gpu::pointwise::launch::launch (src/engine_gpu/pointwise/launch.rs): the kernel families `fused/` and `pointwise/` sit side by side"),
            "{found:#?}"
        );
        // Through `super` paths and in code too.
        let bad = engine(&[(
            "engine_gpu/reduce/launch.rs",
            "fn f() { super::super::fused::go() }\n",
        )]);
        assert_eq!(check_engine_stack(&bad).len(), 1);
    }

    #[test]
    fn the_shared_folder_importing_a_family_or_the_backend_fails() {
        let bad = engine(&[(
            "engine_gpu/kernel/cache.rs",
            "use crate::engine_gpu::{pointwise::launch::launch, backend};\n",
        )]);
        let found = check_engine_stack(&bad);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].contains("Family above Kernel"), "{found:#?}");
        assert!(found[1].contains("Top above Kernel"), "{found:#?}");
        // The compile layer sits below the shared folder.
        let bad = engine(&[(
            "engine_gpu/compile/nvrtc.rs",
            "use crate::engine_gpu::kernel::source::Operand;\n",
        )]);
        let found = check_engine_stack(&bad);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].contains("Kernel above Base"), "{found:#?}");
    }
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
        // `self::super` is `super`.
        let bad = check_imports(
            "engine_cpu/runs.rs",
            "use self::super::super::engine_gpu::x;\n",
        );
        assert_eq!(bad.len(), 1, "{bad:?}");
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
        // Every file of the driver folder may call the driver; a file beside the folder
        // (`runtime/driver.rs`, `runtime/driver_pool.rs`, whose names start the same) or in
        // a `driver/` folder elsewhere may not.
        for rel in [
            "runtime/driver/mod.rs",
            "runtime/driver/launch.rs",
            "runtime/driver/graph.rs",
        ] {
            assert!(check_driver(rel, src).is_empty(), "{rel}");
        }
        for rel in [
            "runtime/driver.rs",
            "runtime/driver_pool.rs",
            "engine_gpu/driver/launch.rs",
        ] {
            assert_eq!(check_driver(rel, src).len(), 4, "{rel}");
        }
        // A refusal worded here is not a driver error's text.
        let refusal = "return Err(GpuError::Driver {\n call: \"cuEventElapsedTime\",\n message: format!(\"both events must time\"),\n });\n";
        assert!(check_driver("runtime/event.rs", refusal).is_empty());
    }

    fn crate_of(files: &[(&str, &str)]) -> Vec<(String, String)> {
        files
            .iter()
            .map(|(rel, text)| (rel.to_string(), text.to_string()))
            .collect()
    }

    #[test]
    fn a_two_file_cycle_fails_with_its_chain() {
        let files = crate_of(&[
            ("runtime/mod.rs", "mod event;\nmod stream;\n"),
            (
                "runtime/event.rs",
                "use super::stream::Stream;\npub struct Event;\n",
            ),
            (
                "runtime/stream.rs",
                "pub struct Stream;\nfn f() { crate::runtime::event::Event::new(); }\n",
            ),
        ]);
        let bad = check_cycles(&files);
        assert_eq!(bad.len(), 1, "{bad:#?}");
        assert_eq!(
            bad[0],
            "import circle among runtime/event.rs, runtime/stream.rs: \
             src/runtime/event.rs:1 (super::stream::Stream) -> src/runtime/stream.rs:2 \
             (crate::runtime::event::Event::new) -> src/runtime/event.rs"
        );
        // The same files without the way back: no circle.
        let mut ok = files.clone();
        ok[2].1 = "pub struct Stream;\n".into();
        assert!(check_cycles(&ok).is_empty());
    }

    #[test]
    fn a_three_file_cycle_through_a_mod_rs_re_export_fails() {
        // a.rs names `super::B`, which graph/mod.rs re-exports from b.rs; b.rs names
        // `self::super::c::C`; c.rs names `super::super::graph::a::A`.
        let files = crate_of(&[
            ("runtime/mod.rs", "pub mod graph;\n"),
            (
                "runtime/graph/mod.rs",
                "mod a;\nmod b;\nmod c;\npub use b::{Other, B as Bee};\npub use self::b::B;\n",
            ),
            ("runtime/graph/a.rs", "use super::B;\npub struct A;\n"),
            (
                "runtime/graph/b.rs",
                "use self::super::c::C;\npub struct B;\n",
            ),
            (
                "runtime/graph/c.rs",
                "use super::super::graph::a::A;\npub struct C;\n",
            ),
        ]);
        let bad = check_cycles(&files);
        assert_eq!(bad.len(), 1, "{bad:#?}");
        assert!(
            bad[0].contains(
                "src/runtime/graph/a.rs:1 (super::B) -> src/runtime/graph/mod.rs (re-export) \
                 -> src/runtime/graph/b.rs:1 (self::super::c::C) -> src/runtime/graph/c.rs:1 \
                 (super::super::graph::a::A) -> src/runtime/graph/a.rs"
            ),
            "{bad:#?}"
        );
        // A re-export alone is not an import of mod.rs's own: a child naming an item the
        // folder defines, while the folder re-exports that child, is no circle.
        let ok = crate_of(&[
            (
                "storage/mod.rs",
                "mod a;\npub use a::A;\npub struct Shared;\n",
            ),
            ("storage/a.rs", "use super::Shared;\npub struct A;\n"),
        ]);
        assert!(check_cycles(&ok).is_empty(), "{:#?}", check_cycles(&ok));
        // ... but code of mod.rs that uses the child is.
        let bad = crate_of(&[
            (
                "storage/mod.rs",
                "mod a;\npub use a::A;\npub struct Shared;\nfn f() -> A { A }\n",
            ),
            ("storage/a.rs", "use super::Shared;\npub struct A;\n"),
        ]);
        assert_eq!(check_cycles(&bad).len(), 1);
    }

    #[test]
    fn a_glob_cycle_and_grouped_crate_paths_fail() {
        let files = crate_of(&[
            ("storage/mod.rs", "mod a;\nmod b;\n"),
            ("storage/a.rs", "use super::b::*;\n"),
            (
                "storage/b.rs",
                "use crate::{error::E, storage::{a::X, mod_less}};\n",
            ),
            ("error.rs", "pub struct E;\n"),
        ]);
        let bad = check_cycles(&files);
        assert_eq!(bad.len(), 1, "{bad:#?}");
        assert!(
            bad[0].starts_with("import circle among storage/a.rs, storage/b.rs: src/storage/a.rs:1 (super::b) -> src/storage/b.rs:1 (crate::storage::a::X)"),
            "{bad:#?}"
        );
        // `use crate::*` in a file the root's own code imports.
        let files = crate_of(&[
            ("lib.rs", "mod layout;\nfn f() { layout::g() }\n"),
            ("layout/mod.rs", "use crate::*;\n"),
        ]);
        assert_eq!(check_cycles(&files).len(), 1, "{:#?}", check_cycles(&files));
        // A test module's `use super::*` is its own file.
        let ok = crate_of(&[("layout/mod.rs", "mod tests { use super::*; }\n")]);
        assert!(check_cycles(&ok).is_empty());
    }

    #[test]
    fn an_allowed_cycle_must_match_exactly() {
        for (files, reason) in ALLOWED_CYCLES {
            assert!(files.len() >= 2 && !reason.is_empty());
        }
    }

    #[test]
    fn an_aliased_driver_module_is_a_driver_call() {
        let src = "use cudarc::driver::result;\nfn f() { unsafe { result::ctx::synchronize() } }\n";
        let bad = check_driver("engine_gpu/x.rs", src);
        assert_eq!(bad.len(), 2, "{bad:#?}");
        assert!(bad[0].starts_with("src/engine_gpu/x.rs:1 names cudarc::driver::result"));
        assert!(bad[1].starts_with(
            "src/engine_gpu/x.rs:2 names cudarc::driver::result::ctx::synchronize (`result::ctx::synchronize`)"
        ));
        // Renamed, grouped, through the parent module, split over lines, or globbed.
        for src in [
            "use cudarc::driver::{result as r, CudaStream};\nfn f() { r::stream::sync(s) }\n",
            "use cudarc::driver as d;\nfn f() { d::result::stream::sync(s) }\n",
            "use cudarc::driver::*;\nfn f() { result::stream::sync(s) }\n",
            "fn f() { cudarc::driver\n    ::result::stream::sync(s) }\n",
            "use cudarc::driver::sys as raw;\nfn f() { raw::cuMemAlloc_v2(p, n) }\n",
        ] {
            assert!(!check_driver("runtime/stream.rs", src).is_empty(), "{src}");
            assert!(check_driver("runtime/driver/memory.rs", src).is_empty());
            assert!(
                !check_driver("runtime/driver_pool.rs", src).is_empty(),
                "{src}"
            );
        }
        // Enum values through `sys` are fine; `result` of another module is not the driver.
        let ok =
            "use cudarc::driver::sys;\nfn f() -> sys::CUresult { sys::CUresult::CUDA_SUCCESS }\n\
                  fn g() -> std::result::Result<(), ()> { Ok(()) }\n";
        assert!(
            check_driver("runtime/device.rs", ok).is_empty(),
            "{:#?}",
            check_driver("runtime/device.rs", ok)
        );
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
