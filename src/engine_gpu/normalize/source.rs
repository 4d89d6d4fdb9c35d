//! Normalisation kernel sources: the shared headers, `kernels/normalize.cuh`, and a generated
//! `extern "C"` entry point for one [`NormSpec`]. Every part of the text comes from the
//! crate's own constants (the element type's CUDA name, the op's code).

use std::fmt::Write as _;

#[cfg(test)]
use crate::element::DType;
use crate::engine_gpu::compile::{Arch, KernelKey};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::source::{write_headers, KernelSource, Operand};

pub use crate::engine_gpu::kernel::rows::{NORMALIZE_CUH, THREADS};

/// The op of a kernel, as `normalize.cuh` numbers them (`TS_NORM_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormOp {
    /// `TS_NORM_SOFTMAX`.
    Softmax = 0,
    /// `TS_NORM_LOG_SOFTMAX`.
    LogSoftmax = 1,
    /// `TS_NORM_LAYER`.
    Layer = 2,
    /// `TS_NORM_RMS`.
    Rms = 3,
    /// `TS_NORM_LSE`.
    LogSumExp = 4,
    /// `TS_NORM_VAR` (the mean too, the square root by flag).
    Var = 5,
    /// `TS_NORM_L1`.
    L1 = 6,
    /// `TS_NORM_L2`.
    L2 = 7,
    /// `TS_NORM_LINF`.
    LInf = 8,
}

impl NormOp {
    /// Every op (tests).
    #[cfg(test)]
    pub const ALL: [NormOp; 9] = [
        NormOp::Softmax,
        NormOp::LogSoftmax,
        NormOp::Layer,
        NormOp::Rms,
        NormOp::LogSumExp,
        NormOp::Var,
        NormOp::L1,
        NormOp::L2,
        NormOp::LInf,
    ];

    fn name(self) -> &'static str {
        match self {
            NormOp::Softmax => "softmax",
            NormOp::LogSoftmax => "log_softmax",
            NormOp::Layer => "layer_norm",
            NormOp::Rms => "rms_norm",
            NormOp::LogSumExp => "logsumexp",
            NormOp::Var => "var",
            NormOp::L1 => "norm1",
            NormOp::L2 => "norm2",
            NormOp::LInf => "norminf",
        }
    }
}

/// Everything that decides a normalisation kernel's code: the key of its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NormSpec {
    /// The op.
    pub op: NormOp,
    /// The element type.
    pub elem: Operand,
    /// Elements per vector load (1, or 16 bytes' worth).
    pub vec: u8,
    /// Register chunks per thread (1, 2, 4, 8), or 0 for the re-reading form.
    pub chunks: u8,
    /// A warp per row (else a block per row).
    pub warp: bool,
}

impl NormSpec {
    /// The spec of `op` over `dtype` (tests: every form).
    #[cfg(test)]
    pub fn for_dtype(op: NormOp, dtype: DType, vec: u8, chunks: u8, warp: bool) -> Self {
        NormSpec {
            op,
            elem: Operand::from_dtype(dtype),
            vec,
            chunks,
            warp,
        }
    }

    /// The entry point's name, e.g. `ts_norm_softmax__f32__v4_c8_w`.
    pub fn entry_name(&self) -> String {
        format!(
            "ts_norm_{}__{}__v{}_c{}_{}",
            self.op.name(),
            self.elem.dtype.name(),
            self.vec,
            self.chunks,
            if self.warp { "w" } else { "b" }
        )
    }

    /// The generated entry point.
    pub fn tail(&self) -> String {
        let mut s = String::with_capacity(512);
        let t = self.elem.cuda;
        let _ = writeln!(
            s,
            "extern \"C\" __global__ void __launch_bounds__(TS_NORM_THREADS) {}(\n    \
             const {t}* __restrict__ in, {t}* __restrict__ out, {t}* __restrict__ mean,\n    \
             const {t}* __restrict__ weight, const {t}* __restrict__ bias, long long rows,\n    \
             long long n, long long rs, long long cs, double param, int flags) {{\n  \
             ts_normalize<{}, {t}, {}, {}, {}>(in, out, mean, weight, bias, rows, n, rs, cs, \
             param, flags);\n}}",
            self.entry_name(),
            self.op as u8,
            self.vec,
            self.chunks,
            self.warp
        );
        s
    }
}

impl KernelSource for NormSpec {
    fn block(&self) -> u32 {
        THREADS
    }

    /// The entry points do not call `ts_pdl_enter()`: they launch in full stream order.
    fn waits_for_predecessor(&self) -> bool {
        false
    }

    fn write_source(&self, s: &mut String) {
        write_headers(s, NORMALIZE_CUH);
        s.push_str(&self.tail());
    }

    fn compile_key(&self, arch: Arch, source: &str) -> KernelKey {
        KernelKey {
            op: format!("normalize_{}", self.op.name()).into(),
            entry: self.entry_name().into(),
            dtypes: vec![self.elem.dtype],
            rank: usize::from(self.chunks) * 2 + usize::from(self.warp),
            index_bits: 64,
            vector_width: u32::from(self.vec),
            arch,
            options: OPTIONS,
            source_hash: KernelKey::hash_source(source),
        }
    }
}
