//! What every generated kernel shares: the `kernels/` headers in dependency order, the
//! operand types as the source names them ([`Operand`]), the `extern "C"` entry point over
//! the Apply templates ([`write_entry`], used by the pointwise and fused kernels), and the
//! [`KernelSource`] trait through which the kernel cache ([`super::cache`]) compiles and
//! loads any spec: pointwise `KernelSpec`, fused `FusedKernel` and reduction `ReduceSpec`.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use crate::element::{DType, Element};
use crate::engine_gpu::compile::{Arch, KernelKey};
use crate::engine_gpu::int_divider::INT_DIVIDER_CUH;
use crate::engine_gpu::offset_calculator::OFFSET_CALCULATOR_CUH;
use crate::error::GpuError;

use super::form::{Form, IndexWidth};

/// `kernels/half.cuh`: the 16-bit float storage types and their conversions.
pub const HALF_CUH: &str = include_str!("../../../kernels/half.cuh");
/// `kernels/ops.cuh`: element conversions and the total arithmetic helpers.
pub const OPS_CUH: &str = include_str!("../../../kernels/ops.cuh");
/// `kernels/apply.cuh`: the Apply kernel templates.
pub const APPLY_CUH: &str = include_str!("../../../kernels/apply.cuh");

/// A kernel this crate generates, as the kernel cache needs it: its entry point, launch
/// bounds, source and compile key. Every text the source contains comes from the crate's own
/// tables and templates; [`KernelSource::check`] re-checks what the op table pastes in.
pub(crate) trait KernelSource {
    /// Threads per block of every launch (the kernel's `__launch_bounds__`); the occupancy
    /// of the loaded function is queried at this size.
    fn block(&self) -> u32;

    /// Whether every thread of the entry point runs `ts_pdl_enter()` before any global
    /// memory access ([`write_entry`] writes it first), so that launches of an `sm_90`+
    /// image may be programmatic dependents ([`super::pdl`]). `false` for any other entry.
    fn waits_for_predecessor(&self) -> bool;

    /// Checks the op-table text the source pastes in
    /// ([`check_op_source`](crate::ops::op::check_op_source)); run before each compile.
    ///
    /// # Errors
    /// [`GpuError::UntrustedOp`] naming the op.
    fn check(&self) -> Result<(), GpuError> {
        Ok(())
    }

    /// Appends the complete NVRTC program to `s`: no `#include`, no toolkit headers.
    fn write_source(&self, s: &mut String);

    /// The complete NVRTC program ([`Self::write_source`]).
    fn source(&self) -> String {
        let mut s = String::with_capacity(96 * 1024);
        self.write_source(&mut s);
        s
    }

    /// The compile layer's key of this kernel on a device of `arch`, whose source is
    /// `source` (its hash covers everything no other field names).
    fn compile_key(&self, arch: Arch, source: &str) -> KernelKey;
}

/// Appends the `kernels/` headers every program starts with, in dependency order, then
/// `templates` (`APPLY_CUH` or the reductions' `reduce.cuh`).
pub fn write_headers(s: &mut String, templates: &str) {
    for part in [
        HALF_CUH,
        OPS_CUH,
        INT_DIVIDER_CUH,
        OFFSET_CALCULATOR_CUH,
        templates,
    ] {
        s.push_str(part);
        s.push('\n');
    }
}

/// What a program whose result shows the bits of a 16-bit float NaN defines before the
/// headers: `kernels/half.cuh` then widens `f16` and `bf16` as the `half` crate does (a NaN
/// keeps its sign and payload, quieted) rather than with the bare `cvt` (the canonical NaN)
/// and no quieting, at a compare and a select per loaded element. Written by the pointwise
/// and fused generators for `signbit`, `copysign`, and conversions to a wider float.
pub const EXACT_HALF_NANS: &str = "#define TS_EXACT_HALF_NANS\n";

/// Whether an op named `op` (a table name or `cast_*`) over operands of `dtypes` shows the
/// bits of an `f16` or `bf16` NaN in its result ([`EXACT_HALF_NANS`]).
pub fn shows_half_nan_bits(op: &str, dtypes: &[DType]) -> bool {
    dtypes.iter().any(|d| matches!(d, DType::F16 | DType::BF16))
        && matches!(op, "signbit" | "copysign" | "cast_f32" | "cast_f64")
}

/// The headers of every Apply program ([`write_headers`] with `kernels/apply.cuh`).
pub fn headers() -> String {
    let mut src = String::with_capacity(96 * 1024);
    write_headers(&mut src, APPLY_CUH);
    src
}

/// An operand's element type as the generated source names it.
///
/// Hashes its `dtype` only: the names are the dtype's (`Element`'s constants), and equality
/// still compares them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    /// The run-time tag.
    pub dtype: DType,
    /// [`Element::CUDA_TYPE`]: the type in memory.
    pub cuda: &'static str,
    /// [`Element::CUDA_COMPUTE_TYPE`]: the type the op computes in.
    pub compute: &'static str,
}

impl Hash for Operand {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.dtype.hash(state);
    }
}

impl Operand {
    /// The operand description of element type `T`.
    pub fn of<T: Element>() -> Self {
        Operand {
            dtype: T::DTYPE,
            cuda: T::CUDA_TYPE,
            compute: T::CUDA_COMPUTE_TYPE,
        }
    }

    /// The operand description of the element type tagged `dtype`.
    pub fn from_dtype(dtype: DType) -> Self {
        match dtype {
            DType::F32 => Self::of::<f32>(),
            DType::F64 => Self::of::<f64>(),
            DType::F16 => Self::of::<half::f16>(),
            DType::BF16 => Self::of::<half::bf16>(),
            DType::I32 => Self::of::<i32>(),
            DType::I64 => Self::of::<i64>(),
            DType::U8 => Self::of::<u8>(),
            DType::Bool => Self::of::<bool>(),
            DType::I8 => Self::of::<i8>(),
            DType::I16 => Self::of::<i16>(),
            DType::U16 => Self::of::<u16>(),
            DType::U32 => Self::of::<u32>(),
            DType::U64 => Self::of::<u64>(),
        }
    }
}

/// What an `extern "C"` entry point over the Apply templates needs: shared by the eager
/// kernels (`pointwise::source::KernelSpec`) and the fused ones, so that the parameter order the launch packs
/// (outputs, inputs, `n`, scalars, calculator) is written in one place.
pub(crate) struct Entry<'a> {
    /// The entry point's name.
    pub name: &'a str,
    /// Threads per block (`__launch_bounds__`).
    pub block: u32,
    /// Work per thread per grid-stride step.
    pub work: u32,
    /// The kernel form.
    pub form: Form,
    /// The index width.
    pub index: IndexWidth,
    /// The outputs' element types (C names).
    pub outputs: &'a [&'a str],
    /// The outputs' parameter names.
    pub output_names: &'a [&'a str],
    /// The inputs' element types (C names).
    pub inputs: &'a [&'a str],
    /// The inputs' parameter names.
    pub input_names: &'a [&'a str],
    /// The scalar parameters, declared after `n` (may be empty).
    pub scalar_params: &'a str,
    /// The statement that declares the functor `op` from the scalars.
    pub op: &'a str,
}

/// Writes `entry` as an `extern "C"` kernel calling the Apply template of its form. Its first
/// statement is `ts_pdl_enter()` (`kernels/apply.cuh`): on `sm_90` and later the kernel waits
/// there for the previous kernel on its stream before it touches global memory, which is
/// what lets a launch be a programmatic dependent ([`super::pdl`]).
pub(crate) fn write_entry(s: &mut String, entry: &Entry<'_>) {
    let (index_t, offset_t) = entry.index.cuda_types();
    let mut params: Vec<String> = Vec::new();
    for (ty, name) in entry.outputs.iter().zip(entry.output_names) {
        params.push(format!("{ty}* {name}"));
    }
    for (ty, name) in entry.inputs.iter().zip(entry.input_names) {
        params.push(format!("const {ty}* {name}"));
    }
    params.push(format!("{index_t} n"));
    if !entry.scalar_params.is_empty() {
        params.push(entry.scalar_params.to_owned());
    }
    let nargs = entry.outputs.len() + entry.inputs.len();
    let calc = |rank: u8| format!("OffsetCalculator<{rank}, {nargs}, {index_t}, {offset_t}> calc");
    let outs = format!(
        "ts_outputs<{}>({})",
        entry.outputs.join(", "),
        entry.output_names.join(", ")
    );
    let ins: String = entry.input_names.iter().map(|n| format!(", {n}")).collect();
    let (block, work) = (entry.block, entry.work);
    let call = match entry.form {
        Form::Contiguous { vec: 1 } => {
            format!("ts_apply_contiguous<{block}, {work}, {index_t}>(op, n, outs{ins});")
        }
        Form::Contiguous { vec } => {
            format!("ts_apply_contiguous_vec<{block}, {work}, {vec}, {index_t}>(op, n, outs{ins});")
        }
        Form::Strided { rank } => {
            params.push(calc(rank));
            format!(
                "ts_apply_strided<{block}, {work}, {rank}, {index_t}, {offset_t}>(op, n, calc, outs{ins});"
            )
        }
        Form::StridedVec { rank, vec, bcast } => {
            params.push(calc(rank));
            format!(
                "ts_apply_strided_vec<{block}, {work}, {vec}, {bcast}u, {rank}, {index_t}, {offset_t}>(op, n, calc, outs{ins});"
            )
        }
        Form::Tiled {
            rank,
            staged,
            tile,
            vec,
            direct,
            ..
        } => {
            // The calculator's dims are already in the kernel's order (batch, D, C):
            // `pack_args` reorders them, so `dim` needs no place in the source.
            params.push(calc(rank));
            let (tr, tc) = (tile.rows, tile.cols);
            format!(
                "ts_apply_tiled<{block}, {tr}, {tc}, {vec}, {staged}u, {direct}u, {rank}, {index_t}, {offset_t}>(op, calc, outs{ins});"
            )
        }
    };
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void __launch_bounds__({block}) {}({}) {{\n  \
         ts_pdl_enter();\n  {}\n  const auto outs = {outs};\n  {call}\n}}",
        entry.name,
        params.join(", "),
        entry.op,
    );
}
