//! Kernel source assembly: the `.cuh` files of `kernels/` in dependency order, plus a short
//! generated tail (type aliases, the op's functor, one `extern "C"` entry point) for one
//! [`KernelSpec`]. A spec is also the kernel cache key: one NVRTC module per spec.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use crate::element::{DType, Element};
use crate::engine_gpu::int_divider::INT_DIVIDER_CUH;
use crate::engine_gpu::offset_calculator::OFFSET_CALCULATOR_CUH;

use super::plan::{Form, IndexWidth, VECTOR_BLOCK, VECTOR_WORK};

/// `kernels/half.cuh`: the 16-bit float storage types and their conversions.
pub const HALF_CUH: &str = include_str!("../../../kernels/half.cuh");
/// `kernels/ops.cuh`: element conversions and the total arithmetic helpers.
pub const OPS_CUH: &str = include_str!("../../../kernels/ops.cuh");
/// `kernels/apply.cuh`: the Apply kernel templates.
pub const APPLY_CUH: &str = include_str!("../../../kernels/apply.cuh");

/// The most inputs a pointwise kernel takes (THC's Apply3 has an output and two inputs; our
/// ternary ops have three).
pub const MAX_INPUTS: usize = 3;

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
        }
    }
}

/// Everything that decides a pointwise kernel's code: the cache key of its module.
///
/// Invariants (upheld where launches build it): `inputs[..n_inputs]` are the inputs in order
/// (`a`, `b`, `c`), the rest are unused and equal to `out` (so two equal launches give equal
/// keys); `expr` is the op's CUDA expression in `a`, `b`, `c`, `p0`, `p1`.
///
/// The hash leaves out `expr` (an op's name decides it, and hashing it on every launch costs
/// host time); equality compares it, so two ops that shared a name would still get two
/// kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSpec {
    /// The op's name (unique per op, part of the entry point's name).
    pub op: &'static str,
    /// The op's CUDA C expression (the functor's body).
    pub expr: &'static str,
    /// The output's element type.
    pub out: Operand,
    /// The inputs' element types (`n_inputs` of them used).
    pub inputs: [Operand; MAX_INPUTS],
    /// How many inputs (0 for fill).
    pub n_inputs: u8,
    /// The type whose compute type the scalars `p0`, `p1` have.
    pub scalar: Operand,
    /// The kernel form (contiguous, vectorised, strided of a rank).
    pub form: Form,
    /// 32- or 64-bit index math.
    pub index: IndexWidth,
}

/// The `kernels/` headers every pointwise program starts with, in dependency order.
pub fn headers() -> String {
    let parts = [
        HALF_CUH,
        OPS_CUH,
        INT_DIVIDER_CUH,
        OFFSET_CALCULATOR_CUH,
        APPLY_CUH,
    ];
    let mut src = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum::<usize>() + 2048);
    for part in parts {
        src.push_str(part);
        src.push('\n');
    }
    src
}

impl Hash for KernelSpec {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.op.hash(state);
        self.out.hash(state);
        self.used_inputs().hash(state);
        self.scalar.hash(state);
        self.form.hash(state);
        self.index.hash(state);
    }
}

/// Names of the inputs in the op's expression and the kernel's parameters.
const INPUT_NAMES: [&str; MAX_INPUTS] = ["a", "b", "c"];

impl KernelSpec {
    /// The inputs in use.
    pub fn used_inputs(&self) -> &[Operand] {
        &self.inputs[..usize::from(self.n_inputs)]
    }

    /// Threads per block of this kernel (its `__launch_bounds__`).
    pub fn block(&self) -> u32 {
        self.form.block()
    }

    /// Elements (or vectors) each thread handles per grid-stride step.
    pub fn work_per_thread(&self) -> u32 {
        self.form.work_per_thread()
    }

    /// The `extern "C"` entry point's name: stable for a spec and readable in a profiler,
    /// e.g. `ts_add__f32_f32_f32__strided2_i32`.
    pub fn entry_name(&self) -> String {
        let mut name = String::from("ts_");
        name.extend(
            self.op
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
        );
        name.push_str("__");
        name.push_str(self.out.dtype.name());
        for input in self.used_inputs() {
            name.push('_');
            name.push_str(input.dtype.name());
        }
        let _ = write!(name, "__{}", self.form);
        if self.form.is_contiguous_vec() {
            // The vector form's launch shape, named as in profiles (and disk caches) before.
            let _ = write!(name, "_w{VECTOR_WORK}_b{VECTOR_BLOCK}");
        }
        let _ = write!(name, "_{}", self.index);
        name
    }

    /// The complete NVRTC program for this spec: [`headers`] then [`Self::tail`]. It has no
    /// `#include` and needs no toolkit headers.
    pub fn source(&self) -> String {
        let mut src = headers();
        self.write_tail(&mut src);
        src
    }

    /// The generated part of [`Self::source`]: type aliases, the op's functor and the entry
    /// point. Tails of several specs may share one program if each is wrapped in its own
    /// namespace (the entry points are `extern "C"`, so their names stay unmangled).
    #[cfg(test)]
    pub fn tail(&self) -> String {
        let mut src = String::with_capacity(2048);
        self.write_tail(&mut src);
        src
    }

    /// The generated part: aliases, the functor, the entry point.
    fn write_tail(&self, s: &mut String) {
        let inputs = self.used_inputs();
        let names = &INPUT_NAMES[..inputs.len()];
        // `write!` into a String cannot fail.
        let _ = writeln!(
            s,
            "// ---- generated: {} over ({}) -> {}, {}, {} index ----",
            self.op,
            inputs
                .iter()
                .map(|i| i.dtype.name())
                .collect::<Vec<_>>()
                .join(", "),
            self.out.dtype,
            self.form,
            self.index
        );
        let _ = writeln!(s, "typedef {} ts_out_t;", self.out.cuda);
        for (input, name) in inputs.iter().zip(names) {
            let _ = writeln!(s, "typedef {} ts_{name}_t;", input.cuda);
        }
        let _ = writeln!(s, "typedef {} ts_scalar_t;", self.scalar.compute);
        // The Rust side's compute types must be the ones the kernels convert to.
        for (operand, alias) in inputs
            .iter()
            .zip(names.iter().map(|n| format!("ts_{n}_t")))
            .chain([(&self.scalar, self.scalar.cuda.to_owned())])
        {
            let _ = writeln!(
                s,
                "static_assert(ts_is_same<ts_compute<{alias}>::type, {}>::value, \
                 \"compute type of {} differs between Rust and ops.cuh\");",
                operand.compute, operand.dtype
            );
        }
        // The functor: THC's TensorFillOp / TensorAddOp pattern, its body the op's expression.
        let params = inputs
            .iter()
            .zip(names)
            .map(|(input, name)| format!("{} {name}", input.compute))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            s,
            "struct ts_op {{\n  ts_scalar_t p0, p1;\n  \
             __device__ __forceinline__ auto operator()({params}) const {{\n    \
             return ({});\n  }}\n}};",
            self.expr
        );
        // The entry point.
        let out_types = ["ts_out_t"];
        let in_types: Vec<String> = names.iter().map(|n| format!("ts_{n}_t")).collect();
        let in_types: Vec<&str> = in_types.iter().map(String::as_str).collect();
        write_entry(
            s,
            &Entry {
                name: &self.entry_name(),
                block: self.block(),
                work: self.work_per_thread(),
                form: self.form,
                index: self.index,
                outputs: &out_types,
                output_names: &["out"],
                inputs: &in_types,
                input_names: names,
                scalar_params: "ts_scalar_t p0, ts_scalar_t p1",
                op: "const ts_op op = {p0, p1};",
            },
        );
    }
}

/// What an `extern "C"` entry point over the Apply templates needs: shared by the eager
/// kernels ([`KernelSpec`]) and the fused ones, so that the parameter order the launch packs
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
