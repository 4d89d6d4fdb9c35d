//! Indexing kernel sources: the shared headers, `kernels/indexing.cuh` and a generated tail
//! (one `extern "C"` entry point) for one [`IndexSpec`]. Every part of the text comes from the
//! crate's own constants (element types' CUDA names).

use std::fmt::Write as _;

use crate::engine_gpu::compile::{Arch, KernelKey};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::form::IndexWidth;
use crate::engine_gpu::kernel::source::{write_headers, KernelSource, Operand};

/// `kernels/indexing.cuh`: the gather and scatter templates.
pub const INDEXING_CUH: &str = include_str!("../../../kernels/indexing.cuh");

/// Threads per block of every indexing launch (`TS_IDX_THREADS`).
pub const THREADS: u32 = 256;

/// Which kernel: a gather, or a scatter with reduction `K` (0 assign, 1 sum, 2 prod, 3 amax,
/// 4 amin; `kernels/indexing.cuh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// `out = src[.. index ..]`.
    Gather,
    /// `dst[.. index ..] op= src`.
    Scatter(u8),
    /// A scatter's index check: the first value out of range reported, nothing written.
    Check,
}

/// Everything that decides an indexing kernel's code: the key of its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IndexSpec {
    /// Gather or scatter (with its reduction).
    pub kind: IndexKind,
    /// The element type moved.
    pub elem: Operand,
    /// The index type (`i32` or `i64`).
    pub index_type: Operand,
    /// Dims of the offset calculator (`N`, 1 to 25).
    pub dims: u8,
    /// 32- or 64-bit index math.
    pub width: IndexWidth,
    /// Bytes one thread moves per index position: the element's size, or 4, 8 or 16 for a
    /// gather whose rows are contiguous and aligned (moved as plain words, see
    /// [`unit_type`]). Scatters always move single elements.
    pub unit: u8,
}

/// The CUDA type a gather moves `bytes` at a time as plain bits, or `None` for the element
/// itself.
pub fn unit_type(bytes: u8) -> Option<&'static str> {
    match bytes {
        16 => Some("uint4"),
        8 => Some("unsigned long long"),
        4 => Some("unsigned int"),
        _ => None,
    }
}

impl IndexSpec {
    /// The `extern "C"` entry point's name, e.g. `ts_idx_gather__f32_i64__n2_i32` (with
    /// `_u16` after `gather` for a gather moving 16 bytes at a time).
    pub fn entry_name(&self) -> String {
        let kind = match self.kind {
            IndexKind::Gather if self.moves_words() => format!("gather_u{}", self.unit),
            IndexKind::Gather => "gather".to_string(),
            IndexKind::Scatter(k) => format!("scatter{k}"),
            IndexKind::Check => "check".to_string(),
        };
        format!(
            "ts_idx_{kind}__{}_{}__n{}_{}",
            self.elem.dtype.name(),
            self.index_type.dtype.name(),
            self.dims,
            self.width
        )
    }

    /// Whether the launch covers every position in one pass of four a thread (the word-form
    /// gather, whose loop keeps four loads in flight) rather than a grid capped at the
    /// resident blocks (`launch.rs`, `kernel_and_grid`).
    pub fn covers_in_one_pass(&self) -> bool {
        self.kind == IndexKind::Gather && self.moves_words()
    }

    /// Whether a thread moves a word of [`Self::unit`] bytes rather than one element.
    fn moves_words(&self) -> bool {
        usize::from(self.unit) != self.elem.dtype.size_in_bytes() && unit_type(self.unit).is_some()
    }

    /// The complete NVRTC program: the headers, then [`Self::tail`].
    #[cfg(test)]
    pub fn source_text(&self) -> String {
        let mut s = String::new();
        self.write_source(&mut s);
        s
    }

    /// The generated entry point (tails of several specs may share one program inside their
    /// own namespaces).
    pub fn tail(&self) -> String {
        let (index, offset) = self.width.cuda_types();
        let (i, n) = (self.index_type.cuda, self.dims);
        let t = match unit_type(self.unit) {
            Some(word) if self.moves_words() => word,
            _ => self.elem.cuda,
        };
        let c = self.elem.compute;
        let unroll = self.moves_words();
        let entry = self.entry_name();
        let operands = if self.kind == IndexKind::Check { 1 } else { 3 };
        let calc = format!("OffsetCalculator<{n}, {operands}, {index}, {offset}>");
        let mut s = String::with_capacity(512);
        // `write!` into a String cannot fail.
        let _ = match self.kind {
            IndexKind::Gather => writeln!(
                s,
                "extern \"C\" __global__ void __launch_bounds__(TS_IDX_THREADS) {entry}(\n    \
                 {t}* __restrict__ out, const {t}* __restrict__ src, const {i}* __restrict__ idx,\n    \
                 {index} n, long long size, long long step, int wrap, {calc} calc,\n    \
                 unsigned long long* bad) {{\n  \
                 ts_gather<{t}, {i}, {n}, {index}, {offset}, {unroll}>(out, src, idx, n, size, step, wrap, calc, bad);\n}}"
            ),
            IndexKind::Scatter(k) => writeln!(
                s,
                "extern \"C\" __global__ void __launch_bounds__(TS_IDX_THREADS) {entry}(\n    \
                 {t}* out, const {t}* __restrict__ src, {c} value, const {i}* __restrict__ idx,\n    \
                 {index} n, long long size, long long step, int wrap, int has_src, {calc} calc,\n    \
                 unsigned long long* bad) {{\n  \
                 ts_scatter<{k}, {t}, {i}, {n}, {index}, {offset}>(out, src, value, idx, n, size, step, wrap, has_src, calc, bad);\n}}"
            ),
            IndexKind::Check => writeln!(
                s,
                "extern \"C\" __global__ void __launch_bounds__(TS_IDX_THREADS) {entry}(\n    \
                 const {i}* __restrict__ idx, {index} n, long long size, int wrap, {calc} calc,\n    \
                 unsigned long long* bad) {{\n  \
                 ts_idx_check<{i}, {n}, {index}, {offset}>(idx, n, size, wrap, calc, bad);\n}}"
            ),
        };
        s
    }

    /// The compile layer's key on a device of `arch`, whose source is `source`.
    pub fn key(&self, arch: Arch, source: &str) -> KernelKey {
        KernelKey {
            op: match self.kind {
                IndexKind::Gather => "gather".into(),
                IndexKind::Scatter(_) => "scatter".into(),
                IndexKind::Check => "index_check".into(),
            },
            entry: self.entry_name().into(),
            dtypes: vec![self.elem.dtype, self.index_type.dtype],
            rank: usize::from(self.dims),
            index_bits: self.width.bits(),
            vector_width: u32::from(self.unit),
            arch,
            options: OPTIONS,
            source_hash: KernelKey::hash_source(source),
        }
    }
}

impl KernelSource for IndexSpec {
    fn block(&self) -> u32 {
        THREADS
    }

    /// The indexing entry points launch in full stream order.
    fn waits_for_predecessor(&self) -> bool {
        false
    }

    fn write_source(&self, s: &mut String) {
        write_headers(s, INDEXING_CUH);
        s.push_str(&self.tail());
    }

    fn compile_key(&self, arch: Arch, source: &str) -> KernelKey {
        self.key(arch, source)
    }
}
