//! A pointwise kernel's spec and its generated tail: type aliases, the op's functor (the op
//! table's CUDA expression as its body) and one `extern "C"` entry point, after the shared
//! `kernels/` headers ([`crate::engine_gpu::kernel::source`]). A spec is also the kernel
//! cache key: one NVRTC module per spec.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use crate::element::DType;
use crate::engine_gpu::compile::{Arch, KernelKey};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::form::{Form, IndexWidth, NARROW_VECTOR_WORK, VECTOR_BLOCK};
use crate::engine_gpu::kernel::source::{
    headers, shows_half_nan_bits, write_entry, Entry, KernelSource, Operand, EXACT_HALF_NANS,
};
use crate::error::GpuError;

/// The most inputs a pointwise kernel takes (THC's Apply3 has an output and two inputs; our
/// ternary ops have three).
pub const MAX_INPUTS: usize = 3;

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

    /// Elements (or vectors) each thread handles per grid-stride step: the form's, except
    /// that a contiguous kernel of two or more inputs whose vectors hold 16 one-byte elements
    /// gives each thread one vector ([`NARROW_VECTOR_WORK`]).
    pub fn work_per_thread(&self) -> u32 {
        match self.form {
            Form::Contiguous { vec } if vec >= 16 && self.n_inputs >= 2 => NARROW_VECTOR_WORK,
            form => form.work_per_thread(),
        }
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
            let _ = write!(name, "_w{}_b{VECTOR_BLOCK}", self.work_per_thread());
        }
        let _ = write!(name, "_{}", self.index);
        name
    }

    /// The generated part of [`KernelSource::source`]: type aliases, the op's functor and the
    /// entry point. Tails of several specs may share one program if each is wrapped in its
    /// own namespace (the entry points are `extern "C"`, so their names stay unmangled).
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

impl KernelSource for KernelSpec {
    fn block(&self) -> u32 {
        self.form.block()
    }

    /// Apply entry points start with `ts_pdl_enter()` ([`write_entry`]).
    fn waits_for_predecessor(&self) -> bool {
        true
    }

    /// The op traits are sealed, so this only re-checks the table; it runs on the compile
    /// path only.
    fn check(&self) -> Result<(), GpuError> {
        crate::ops::op::check_op_source(self.op, self.expr)
    }

    /// [`headers`], then the generated tail (the aliases, the functor and the entry point).
    fn write_source(&self, s: &mut String) {
        let dtypes: Vec<DType> = self.used_inputs().iter().map(|o| o.dtype).collect();
        if shows_half_nan_bits(self.op, &dtypes) {
            s.push_str(EXACT_HALF_NANS);
        }
        s.push_str(&headers());
        self.write_tail(s);
    }

    fn compile_key(&self, arch: Arch, source: &str) -> KernelKey {
        KernelKey {
            op: self.op.into(),
            entry: self.entry_name().into(),
            dtypes: std::iter::once(self.out.dtype)
                .chain(self.used_inputs().iter().map(|o| o.dtype))
                .collect(),
            rank: self.form.rank(),
            index_bits: self.index.bits(),
            vector_width: self.form.vector_width(),
            arch,
            options: OPTIONS,
            // The whole source: it includes the op's expression, which no other field names.
            source_hash: KernelKey::hash_source(source),
        }
    }
}
