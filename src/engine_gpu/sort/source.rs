//! Sort kernel sources: the shared headers, `kernels/reduce.cuh` (`ts_red_widen`),
//! `kernels/sort.cuh`, and one generated `extern "C"` entry point for one [`SortSpec`].

use std::fmt::Write as _;

use crate::element::Element;
use crate::engine_gpu::compile::{Arch, KernelKey};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::source::{write_headers, KernelSource, Operand};
use crate::engine_gpu::reduce::source::REDUCE_CUH;

/// `kernels/sort.cuh`: the sort and search templates.
pub const SORT_CUH: &str = include_str!("../../../kernels/sort.cuh");

/// Threads per block of every sort kernel (`TS_SORT_THREADS`).
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
}

impl SortForm {
    fn name(self) -> &'static str {
        match self {
            SortForm::Rows => "rows",
            SortForm::Init => "init",
            SortForm::Tiles => "tiles",
            SortForm::Step => "step",
            SortForm::Final => "final",
            SortForm::Search => "search",
        }
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
        let head = format!(
            "extern \"C\" __global__ void __launch_bounds__(TS_SORT_THREADS) {entry}(\n    "
        );
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
        };
    }
}

impl KernelSource for SortSpec {
    fn block(&self) -> u32 {
        THREADS
    }

    fn waits_for_predecessor(&self) -> bool {
        false
    }

    fn write_source(&self, s: &mut String) {
        write_headers(s, REDUCE_CUH);
        s.push_str(SORT_CUH);
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
