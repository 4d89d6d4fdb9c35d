//! Scan kernel sources: the shared headers, `kernels/reduce.cuh` (accumulation types and
//! conversions), `kernels/scan.cuh`, and a generated tail (the op's functor, a `static_assert`
//! on its accumulator's size, one `extern "C"` entry point) for one [`ScanSpec`].

use std::fmt::Write as _;

use crate::element::{DType, Element};
use crate::engine_gpu::compile::{Arch, KernelKey};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::source::{write_headers, KernelSource, Operand};
use crate::engine_gpu::reduce::source::REDUCE_CUH;

/// `kernels/scan.cuh`: the scan templates and op functors.
pub const SCAN_CUH: &str = include_str!("../../../kernels/scan.cuh");

/// Threads per block of every scan kernel (`TS_SCAN_THREADS`).
pub const THREADS: u32 = 256;
/// Elements per thread per chunk (`TS_SCAN_ITEMS`).
pub const ITEMS: usize = 4;

/// Which scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanKind {
    /// `cumsum`.
    Sum,
    /// `cumprod`.
    Prod,
    /// `cummax`.
    Max,
    /// `cummin`.
    Min,
    /// `logcumsumexp`.
    LogSumExp,
}

impl ScanKind {
    /// The name in entry points and errors.
    pub fn name(self) -> &'static str {
        match self {
            ScanKind::Sum => "cumsum",
            ScanKind::Prod => "cumprod",
            ScanKind::Max => "cummax",
            ScanKind::Min => "cummin",
            ScanKind::LogSumExp => "logcumsumexp",
        }
    }

    /// `sizeof(ts_op::acc_t)` of the functor over `input` (asserted in the source).
    pub fn acc_size(self, input: DType) -> usize {
        let float32 = matches!(input, DType::F32 | DType::F16 | DType::BF16);
        match self {
            ScanKind::Sum | ScanKind::Prod | ScanKind::LogSumExp => {
                if float32 {
                    4
                } else {
                    8
                }
            }
            // A compute value and a `long long` index, padded to 16 bytes.
            ScanKind::Max | ScanKind::Min => 16,
        }
    }
}

/// Which entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanForm {
    /// `ts_scan_rows`: scan tiles of rows.
    Rows,
    /// `ts_scan_carry`: tile totals to exclusive carries.
    Carry,
}

/// Everything that decides a scan kernel's code: the key of its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScanSpec {
    /// The op.
    pub kind: ScanKind,
    /// The entry point.
    pub form: ScanForm,
    /// The input's element type.
    pub input: Operand,
    /// The output's element type.
    pub output: Operand,
}

impl ScanSpec {
    /// The spec of `kind` from `T` to `O` in `form`.
    pub fn of<T: Element, O: Element>(kind: ScanKind, form: ScanForm) -> Self {
        ScanSpec {
            kind,
            form,
            input: Operand::of::<T>(),
            output: Operand::of::<O>(),
        }
    }

    /// The entry point's name, e.g. `ts_scan_cumsum__f16_f16__rows`.
    pub fn entry_name(&self) -> String {
        format!(
            "ts_scan_{}__{}_{}__{}",
            self.kind.name(),
            self.input.dtype.name(),
            self.output.dtype.name(),
            match self.form {
                ScanForm::Rows => "rows",
                ScanForm::Carry => "carry",
            }
        )
    }

    /// The functor type of the op.
    fn functor(&self) -> String {
        let (i, o) = (self.input.cuda, self.output.cuda);
        match self.kind {
            ScanKind::Sum => format!("ts_scan_sum<{i}, {o}>"),
            ScanKind::Prod => format!("ts_scan_prod<{i}, {o}>"),
            ScanKind::Max => format!("ts_scan_extreme<{i}, {o}, true>"),
            ScanKind::Min => format!("ts_scan_extreme<{i}, {o}, false>"),
            ScanKind::LogSumExp => format!("ts_scan_lcse<{i}, {o}>"),
        }
    }

    /// The generated tail: the functor type, the accumulator check and the entry point.
    pub fn write_tail(&self, s: &mut String) {
        let (input, output) = (self.input.cuda, self.output.cuda);
        let entry = self.entry_name();
        // `write!` into a String cannot fail.
        let _ = writeln!(
            s,
            "typedef {} ts_op;\n\
             static_assert(sizeof(ts_op::acc_t) == {}, \"the host sizes tile totals by acc_size\");",
            self.functor(),
            self.kind.acc_size(self.input.dtype)
        );
        let _ = match self.form {
            ScanForm::Rows => writeln!(
                s,
                "extern \"C\" __global__ void __launch_bounds__(TS_SCAN_THREADS) {entry}(\n    \
                 const {input}* __restrict__ in, {output}* __restrict__ out,\n    \
                 long long* __restrict__ idx, const ts_op::acc_t* __restrict__ carry_in,\n    \
                 ts_op::acc_t* __restrict__ totals, long long rows, long long n,\n    \
                 long long tiles, long long tile_len) {{\n  \
                 ts_scan_rows<ts_op, {input}, {output}>(in, out, idx, carry_in, totals, rows, n, \
                 tiles, tile_len);\n}}"
            ),
            ScanForm::Carry => writeln!(
                s,
                "extern \"C\" __global__ void __launch_bounds__(TS_SCAN_THREADS) {entry}(\n    \
                 ts_op::acc_t* __restrict__ totals, long long rows, long long tiles) {{\n  \
                 ts_scan_carry<ts_op>(totals, rows, tiles);\n}}"
            ),
        };
    }
}

impl KernelSource for ScanSpec {
    fn block(&self) -> u32 {
        THREADS
    }

    fn waits_for_predecessor(&self) -> bool {
        false
    }

    fn write_source(&self, s: &mut String) {
        write_headers(s, REDUCE_CUH);
        s.push_str(SCAN_CUH);
        s.push('\n');
        self.write_tail(s);
    }

    fn compile_key(&self, arch: Arch, source: &str) -> KernelKey {
        KernelKey {
            op: format!("scan_{}", self.kind.name()).into(),
            entry: self.entry_name().into(),
            dtypes: vec![self.output.dtype, self.input.dtype],
            rank: 2,
            index_bits: 64,
            vector_width: 1,
            arch,
            options: OPTIONS,
            source_hash: KernelKey::hash_source(source),
        }
    }
}
