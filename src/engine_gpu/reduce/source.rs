//! Reduction kernel sources: the shared headers (`half.cuh`, `ops.cuh`,
//! `int_divider.cuh`, `offset_calculator.cuh`), `kernels/reduce.cuh`, and a generated tail
//! (the op's functor type, a `static_assert` on its accumulator's size, one `extern "C"`
//! entry point) for one [`ReduceSpec`]. Every part of the text comes from the crate's own
//! constants: element types' CUDA names and the op's functor name (`ReduceKind`).

use std::fmt::Write as _;

#[cfg(test)]
use crate::element::DType;
use crate::element::Element;
use crate::engine_gpu::compile::{Arch, KernelKey};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::form::IndexWidth;
use crate::engine_gpu::kernel::source::{write_headers, KernelSource, Operand};
use crate::ops::reduce::{ReduceKind, Reduction};

use super::plan::{RedForm, MAX_THREADS};

/// `kernels/reduce.cuh`: the reduction kernel templates and op functors.
pub const REDUCE_CUH: &str = include_str!("../../../kernels/reduce.cuh");

/// The `kernels/` headers every reduction program starts with, in dependency order.
#[cfg(test)]
pub fn headers() -> String {
    let mut src = String::with_capacity(96 * 1024);
    write_headers(&mut src, REDUCE_CUH);
    src
}

/// Everything that decides a reduction kernel's code: the key of its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReduceSpec {
    /// The op.
    pub kind: ReduceKind,
    /// The input's element type.
    pub input: Operand,
    /// The output's element type.
    pub output: Operand,
    /// `sizeof(acc_t)` of the op's functor for the input type (asserted in the source).
    pub acc_size: u8,
    /// The form and its vector width.
    pub form: RedForm,
    /// Dims of the kept-dims offset calculator (`NK`, at least 1).
    pub nk: u8,
    /// Dims of the reduced-dims offset calculator (`NR`, at least 1).
    pub nr: u8,
    /// 32- or 64-bit index math.
    pub index: IndexWidth,
}

impl ReduceSpec {
    /// The spec of `R` over `T` in `form` with calculators of `nk` and `nr` dims.
    pub fn of<T: Element, R: Reduction<T>>(
        form: RedForm,
        nk: usize,
        nr: usize,
        index: IndexWidth,
    ) -> Self {
        ReduceSpec {
            kind: R::KIND,
            input: Operand::of::<T>(),
            output: Operand::of::<R::Output>(),
            // 4 to 16 bytes.
            acc_size: u8::try_from(R::CUDA_ACC_SIZE).unwrap_or(u8::MAX),
            form,
            // At most `offset_calculator::MAX_DIMS` (25).
            nk: u8::try_from(nk).unwrap_or(u8::MAX),
            nr: u8::try_from(nr).unwrap_or(u8::MAX),
            index,
        }
    }

    /// The spec of `kind` over elements of `dtype`, or `None` where the op does not take
    /// that type ([`dtypes_of`]).
    #[cfg(test)]
    pub fn for_dtype(
        kind: ReduceKind,
        dtype: DType,
        form: RedForm,
        nk: usize,
        nr: usize,
        index: IndexWidth,
    ) -> Option<Self> {
        use crate::ops::reduce::{ArgMax, ArgMin, Max, Mean, Min, Prod, Sum, SumAbs, SumSq};
        macro_rules! numeric {
            ($t:ty) => {
                Some(match kind {
                    ReduceKind::Sum => Self::of::<$t, Sum>(form, nk, nr, index),
                    ReduceKind::Prod => Self::of::<$t, Prod>(form, nk, nr, index),
                    ReduceKind::Max => Self::of::<$t, Max>(form, nk, nr, index),
                    ReduceKind::Min => Self::of::<$t, Min>(form, nk, nr, index),
                    ReduceKind::ArgMax => Self::of::<$t, ArgMax>(form, nk, nr, index),
                    ReduceKind::ArgMin => Self::of::<$t, ArgMin>(form, nk, nr, index),
                    ReduceKind::Mean | ReduceKind::SumAbs | ReduceKind::SumSq => return None,
                })
            };
        }
        macro_rules! float {
            ($t:ty) => {
                match kind {
                    ReduceKind::Mean => Some(Self::of::<$t, Mean>(form, nk, nr, index)),
                    ReduceKind::SumAbs => Some(Self::of::<$t, SumAbs>(form, nk, nr, index)),
                    ReduceKind::SumSq => Some(Self::of::<$t, SumSq>(form, nk, nr, index)),
                    _ => numeric!($t),
                }
            };
        }
        match dtype {
            DType::F32 => float!(f32),
            DType::F64 => float!(f64),
            DType::F16 => float!(half::f16),
            DType::BF16 => float!(half::bf16),
            DType::I32 => numeric!(i32),
            DType::I64 => numeric!(i64),
            DType::U8 => numeric!(u8),
            DType::I8 => numeric!(i8),
            DType::I16 => numeric!(i16),
            DType::U16 => numeric!(u16),
            DType::U32 => numeric!(u32),
            DType::U64 => numeric!(u64),
            DType::Bool => {
                (kind == ReduceKind::Sum).then(|| Self::of::<bool, Sum>(form, nk, nr, index))
            }
        }
    }

    /// The `extern "C"` entry point's name, e.g. `ts_red_sum__f32_f32__row_c1_v4_k1_r1_i32`.
    pub fn entry_name(&self) -> String {
        let mut name = format!(
            "ts_red_{}__{}_{}__",
            self.kind.name(),
            self.input.dtype.name(),
            self.output.dtype.name()
        );
        let _ = match self.form {
            RedForm::Row { contig, vec } => write!(name, "row_c{}_v{vec}", u8::from(contig)),
            RedForm::Col { ovec, from_acc } => write!(name, "col_a{}_v{ovec}", u8::from(from_acc)),
        };
        let _ = write!(name, "_k{}_r{}_{}", self.nk, self.nr, self.index);
        name
    }

    /// The complete NVRTC program: [`headers`], then [`Self::tail`]. It has no `#include`
    /// and needs no toolkit headers.
    #[cfg(test)]
    pub fn source(&self) -> String {
        let mut src = headers();
        self.write_tail(&mut src);
        src
    }

    /// The generated part of [`Self::source`]. Tails of several specs may share one program
    /// if each is wrapped in its own namespace (the entry points are `extern "C"`).
    #[cfg(test)]
    pub fn tail(&self) -> String {
        let mut src = String::with_capacity(1024);
        self.write_tail(&mut src);
        src
    }

    /// The generated tail: the functor type, the accumulator check and the entry point.
    fn write_tail(&self, s: &mut String) {
        let (index, offset) = self.index.cuda_types();
        let (input, output) = (self.input.cuda, self.output.cuda);
        let (nk, nr) = (self.nk, self.nr);
        let entry = self.entry_name();
        // `write!` into a String cannot fail.
        let _ = writeln!(
            s,
            "typedef {}<{input}, {output}> ts_op;\n\
             static_assert(sizeof(ts_op::acc_t) == {}, \"the host sizes partials by CUDA_ACC_SIZE\");",
            self.kind.cuda_functor(),
            self.acc_size
        );
        let (body, src_type) = match self.form {
            RedForm::Row { contig, vec } => (
                format!("ts_reduce_row<ts_op, {nk}, {nr}, {index}, {offset}, {vec}, {contig}>"),
                format!("const {input}*"),
            ),
            RedForm::Col { ovec, from_acc } => (
                format!("ts_reduce_col<ts_op, {nk}, {nr}, {index}, {offset}, {ovec}, {from_acc}>"),
                format!("const ts_red_src<ts_op, {from_acc}>::type*"),
            ),
        };
        let _ = writeln!(
            s,
            "extern \"C\" __global__ void __launch_bounds__(TS_RED_THREADS) {entry}(\n    \
             {src_type} __restrict__ in, {output}* __restrict__ out,\n    \
             ts_op::acc_t* __restrict__ partial, {index} num_out, {index} red_n, {index} chunk,\n    \
             long long lbase, double count,\n    \
             OffsetCalculator<{nk}, 2, {index}, {offset}> kept,\n    \
             OffsetCalculator<{nr}, 2, {index}, {offset}> red) {{\n  \
             {body}(in, out, partial, num_out, red_n, chunk, lbase, count, kept, red);\n}}"
        );
    }

    /// The compile layer's key on a device of `arch`, whose source is `source`.
    pub fn key(&self, arch: Arch, source: &str) -> KernelKey {
        KernelKey {
            op: format!("reduce_{}", self.kind.name()).into(),
            entry: self.entry_name().into(),
            dtypes: vec![self.output.dtype, self.input.dtype],
            rank: usize::from(self.nk) * 64 + usize::from(self.nr),
            index_bits: self.index.bits(),
            vector_width: match self.form {
                RedForm::Row { vec, .. } => u32::from(vec),
                RedForm::Col { ovec, .. } => u32::from(ovec),
            },
            arch,
            options: OPTIONS,
            // The whole source: it names every part of the spec.
            source_hash: KernelKey::hash_source(source),
        }
    }
}

impl KernelSource for ReduceSpec {
    /// Every reduction kernel's `__launch_bounds__(TS_RED_THREADS)`.
    fn block(&self) -> u32 {
        MAX_THREADS
    }

    /// The reduction entry points do not call `ts_pdl_enter()`: they launch in full stream
    /// order.
    fn waits_for_predecessor(&self) -> bool {
        false
    }

    fn write_source(&self, s: &mut String) {
        write_headers(s, REDUCE_CUH);
        self.write_tail(s);
    }

    fn compile_key(&self, arch: Arch, source: &str) -> KernelKey {
        self.key(arch, source)
    }
}

/// The element types an op reduces, as the tensor methods' bounds allow them (for tests and
/// the kernel source check).
#[cfg(test)]
pub fn dtypes_of(kind: ReduceKind) -> &'static [DType] {
    use DType::*;
    match kind {
        ReduceKind::Sum => &[
            F32, F64, F16, BF16, I32, I64, U8, Bool, I8, I16, U16, U32, U64,
        ],
        ReduceKind::Mean | ReduceKind::SumAbs | ReduceKind::SumSq => &[F32, F64, F16, BF16],
        _ => &[F32, F64, F16, BF16, I32, I64, U8, I8, I16, U16, U32, U64],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::{ArgMax, Sum};

    #[test]
    fn entry_names_are_distinct_per_spec() {
        let a = ReduceSpec::of::<f32, Sum>(
            RedForm::Row {
                contig: true,
                vec: 4,
            },
            1,
            1,
            IndexWidth::Bits32,
        );
        assert_eq!(a.entry_name(), "ts_red_sum__f32_f32__row_c1_v4_k1_r1_i32");
        let b = ReduceSpec::of::<half::f16, ArgMax>(
            RedForm::Col {
                ovec: 1,
                from_acc: true,
            },
            2,
            1,
            IndexWidth::Bits64,
        );
        assert_eq!(
            b.entry_name(),
            "ts_red_argmax__f16_i64__col_a1_v1_k2_r1_i64"
        );
        assert_eq!(b.acc_size, 16);
        let src = b.source();
        assert!(src.contains("typedef ts_red_argmax<ts_f16, long long> ts_op;"));
        assert!(src.contains("ts_reduce_col<ts_op, 2, 1, unsigned long long, long long, 1, true>"));
    }
}
