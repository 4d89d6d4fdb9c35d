//! Sort kernel sources: the shared headers, `kernels/reduce.cuh` (`ts_red_widen`),
//! `kernels/sort.cuh`, `kernels/radix.cuh`, and one generated `extern "C"` entry point for one
//! [`SortSpec`].

use std::fmt::Write as _;

use crate::element::Element;
use crate::engine_gpu::compile::{Arch, KernelKey};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::source::{write_headers, KernelSource, Operand};
use crate::engine_gpu::reduce::source::REDUCE_CUH;

/// `kernels/sort.cuh`: the sort and search templates.
pub const SORT_CUH: &str = include_str!("../../../kernels/sort.cuh");

/// `kernels/radix.cuh`: the radix select (`topk`) and the LSD radix sort.
pub const RADIX_CUH: &str = include_str!("../../../kernels/radix.cuh");

/// Threads per block of the radix sort's passes (`TS_RADIX_THREADS`).
pub const RADIX_THREADS: u32 = 256;

/// The entries a thread of `ts_radix_rows` holds for rows of `n` keys of `key_bytes`: 4, 8 or
/// 16 (16 only for keys up to 4 bytes; fewer keep its registers, and so more blocks, per
/// multiprocessor), or `None` past the longest row one block sorts (4096 keys, 2048 of 8
/// bytes).
pub fn radix_row_items(n: usize, key_bytes: usize) -> Option<u8> {
    let most = if key_bytes > 4 { 8 } else { 16 };
    [4u8, 8, 16]
        .into_iter()
        .filter(|&i| i <= most)
        .find(|&i| n <= RADIX_THREADS as usize * usize::from(i))
}

/// Threads per block of the other sort kernels (`TS_SORT_THREADS`).
pub const THREADS: u32 = 1024;
/// Entries one block sorts in shared memory (`TS_SORT_TILE`).
pub const TILE: usize = 2048;

/// Which entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortForm {
    /// `ts_sort_rows`: whole rows of at most [`TILE`] in shared memory.
    Rows,
    /// `ts_sort_init`: keys and indices of long rows into scratch.
    Init,
    /// `ts_sort_tiles`: [`TILE`]-entry spans of the scratch in shared memory.
    Tiles,
    /// `ts_sort_step`: one global compare-exchange stage.
    Step,
    /// `ts_sort_final`: values and indices from the scratch.
    Final,
    /// `ts_searchsorted`.
    Search,
    /// `ts_topk_rows`: a radix select per row, the `k` found sorted in shared memory.
    Select,
    /// `ts_radix_rows`: rows of up to 256 times this many entries (4, 8 or 16) radix-sorted
    /// in one block each.
    RadixRows(u8),
    /// `ts_radix_hist`: each tile's digit counts of one radix pass.
    RadixHist,
    /// `ts_radix_scan`: the counts into offsets, one block per digit.
    RadixScan,
    /// `ts_radix_scatter`: one stable counting pass.
    RadixScatter,
    /// `ts_radix_final`: values and indices at the sorted ids.
    RadixFinal,
}

impl SortForm {
    fn name(self) -> &'static str {
        match self {
            SortForm::RadixRows(4) => "radix_rows4",
            SortForm::RadixRows(8) => "radix_rows8",
            SortForm::RadixRows(_) => "radix_rows16",
            SortForm::Rows => "rows",
            SortForm::Init => "init",
            SortForm::Tiles => "tiles",
            SortForm::Step => "step",
            SortForm::Final => "final",
            SortForm::Search => "search",
            SortForm::Select => "select",
            SortForm::RadixHist => "radix_hist",
            SortForm::RadixScan => "radix_scan",
            SortForm::RadixScatter => "radix_scatter",
            SortForm::RadixFinal => "radix_final",
        }
    }

    /// Whether the form runs blocks of [`RADIX_THREADS`] (the radix select and sorts).
    fn is_radix_pass(self) -> bool {
        matches!(
            self,
            SortForm::Select
                | SortForm::RadixRows(_)
                | SortForm::RadixHist
                | SortForm::RadixScan
                | SortForm::RadixScatter
        )
    }
}

/// Everything that decides a sort kernel's code: the key of its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SortSpec {
    /// The entry point.
    pub form: SortForm,
    /// The element type.
    pub input: Operand,
}

impl SortSpec {
    /// The spec of `form` over `T`.
    pub fn of<T: Element>(form: SortForm) -> Self {
        SortSpec {
            form,
            input: Operand::of::<T>(),
        }
    }

    /// The entry point's name, e.g. `ts_sort_rows__f32`.
    pub fn entry_name(&self) -> String {
        format!("ts_sort_{}__{}", self.form.name(), self.input.dtype.name())
    }

    /// The generated entry point.
    pub fn write_tail(&self, s: &mut String) {
        let t = self.input.cuda;
        let entry = self.entry_name();
        let bound = if self.form.is_radix_pass() {
            "TS_RADIX_THREADS"
        } else {
            "TS_SORT_THREADS"
        };
        let head =
            format!("extern \"C\" __global__ void __launch_bounds__({bound}) {entry}(\n    ");
        let key = format!("ts_sort_key<{t}>::K");
        // `write!` into a String cannot fail.
        let _ = match self.form {
            SortForm::Rows => writeln!(
                s,
                "{head}const {t}* __restrict__ in, {t}* __restrict__ vals, long long* __restrict__ idx,\n    \
                 long long rows, long long n, long long p, long long m, int desc) {{\n  \
                 ts_sort_rows<{t}>(in, vals, idx, rows, n, p, m, desc != 0);\n}}"
            ),
            SortForm::Init => writeln!(
                s,
                "{head}const {t}* __restrict__ in, {key}* __restrict__ keys, int* __restrict__ ids,\n    \
                 long long rows, long long n, long long p, int desc) {{\n  \
                 ts_sort_init<{t}>(in, keys, ids, rows, n, p, desc != 0);\n}}"
            ),
            SortForm::Tiles => writeln!(
                s,
                "{head}{key}* __restrict__ keys, int* __restrict__ ids, long long total, long long p,\n    \
                 long long k) {{\n  \
                 ts_sort_tiles<{key}>(keys, ids, total, p, k);\n}}"
            ),
            SortForm::Step => writeln!(
                s,
                "{head}{key}* __restrict__ keys, int* __restrict__ ids, long long total, long long p,\n    \
                 long long k, long long j) {{\n  \
                 ts_sort_step<{key}>(keys, ids, total, p, k, j);\n}}"
            ),
            SortForm::Final => writeln!(
                s,
                "{head}const {t}* __restrict__ in, const int* __restrict__ ids, {t}* __restrict__ vals,\n    \
                 long long* __restrict__ idx, long long rows, long long n, long long p, long long m) {{\n  \
                 ts_sort_final<{t}>(in, ids, vals, idx, rows, n, p, m);\n}}"
            ),
            SortForm::Search => writeln!(
                s,
                "{head}const {t}* __restrict__ seq, long long m, const {t}* __restrict__ vals,\n    \
                 long long count, long long* __restrict__ out, int right) {{\n  \
                 ts_searchsorted<{t}>(seq, m, vals, count, out, right != 0);\n}}"
            ),
            SortForm::Select => writeln!(
                s,
                "{head}const {t}* __restrict__ in, {t}* __restrict__ vals, long long* __restrict__ idx,\n    \
                 long long rows, long long n, long long k, int desc) {{\n  \
                 ts_topk_rows<{t}>(in, vals, idx, rows, n, k, desc != 0);\n}}"
            ),
            SortForm::RadixRows(items) => writeln!(
                s,
                "{head}const {t}* __restrict__ in, {t}* __restrict__ vals, long long* __restrict__ idx,\n    \
                 long long rows, long long n, long long m, int desc) {{\n  \
                 ts_radix_rows<{t}, {items}>(in, vals, idx, rows, n, m, desc != 0);\n}}"
            ),
            SortForm::RadixHist => writeln!(
                s,
                "{head}const {t}* __restrict__ in, const {key}* __restrict__ keys,\n    \
                 const unsigned int* __restrict__ ids, unsigned int* __restrict__ hist, long long total,\n    \
                 unsigned int n, int pass, int key_passes, int desc) {{\n  \
                 ts_radix_hist<{t}>(in, keys, ids, hist, total, n, pass, key_passes, desc != 0);\n}}"
            ),
            SortForm::RadixScan => writeln!(
                s,
                "{head}unsigned int* __restrict__ hist, unsigned int* __restrict__ totals, long long tiles) {{\n  \
                 ts_radix_scan(hist, totals, tiles);\n}}"
            ),
            SortForm::RadixScatter => writeln!(
                s,
                "{head}const {t}* __restrict__ in, const {key}* __restrict__ keys_in,\n    \
                 const unsigned int* __restrict__ ids_in, {key}* __restrict__ keys_out,\n    \
                 unsigned int* __restrict__ ids_out, const unsigned int* __restrict__ hist,\n    \
                 const unsigned int* __restrict__ totals, long long total, unsigned int n, int pass,\n    \
                 int key_passes, int desc, {t}* __restrict__ vals, long long* __restrict__ idx) {{\n  \
                 ts_radix_scatter<{t}>(in, keys_in, ids_in, keys_out, ids_out, hist, totals, total, n,\n      \
                 pass, key_passes, desc != 0, vals, idx);\n}}"
            ),
            SortForm::RadixFinal => writeln!(
                s,
                "{head}const {t}* __restrict__ in, const unsigned int* __restrict__ ids, {t}* __restrict__ vals,\n    \
                 long long* __restrict__ idx, long long rows, long long n, long long m) {{\n  \
                 ts_radix_final<{t}>(in, ids, vals, idx, rows, n, m);\n}}"
            ),
        };
    }
}

impl KernelSource for SortSpec {
    fn block(&self) -> u32 {
        if self.form.is_radix_pass() {
            RADIX_THREADS
        } else {
            THREADS
        }
    }

    fn waits_for_predecessor(&self) -> bool {
        false
    }

    fn write_source(&self, s: &mut String) {
        write_headers(s, REDUCE_CUH);
        s.push_str(SORT_CUH);
        s.push('\n');
        s.push_str(RADIX_CUH);
        s.push('\n');
        self.write_tail(s);
    }

    fn compile_key(&self, arch: Arch, source: &str) -> KernelKey {
        KernelKey {
            op: format!("sort_{}", self.form.name()).into(),
            entry: self.entry_name().into(),
            dtypes: vec![self.input.dtype],
            rank: 2,
            index_bits: 64,
            vector_width: 1,
            arch,
            options: OPTIONS,
            source_hash: KernelKey::hash_source(source),
        }
    }
}
