//! The generated part of a fused kernel: one functor per op instance (the op table's CUDA
//! expression as its body, as for eager kernels), the expression's functor calling them in
//! order, and the entry point (`write_entry`, shared with the eager kernels).

use std::fmt::Write as _;

use crate::element::DType;
use crate::engine_gpu::compile::Fnv128;
use crate::engine_gpu::pointwise::plan::{Form, IndexWidth, VectorShape};
use crate::engine_gpu::pointwise::source::{headers, write_entry, Entry, Operand};
use crate::tensor::expr::program::{Instr, ScalarValue};

/// What decides a fused kernel's code: the cache key of its module.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FusedSpec {
    /// [`Program::signature`](crate::tensor::expr::program::Program::signature): structure
    /// and element types, no scalar values, no layouts.
    pub signature: String,
    /// The kernel form (the layout class).
    pub form: Form,
    /// 32- or 64-bit index math.
    pub index: IndexWidth,
    /// Work per thread and block size of the contiguous vector form.
    pub vector: VectorShape,
}

/// The program text a [`FusedSpec`] is generated from (everything but the form).
pub struct FusedBody<'p> {
    /// The leaves' element types.
    pub leaves: &'p [DType],
    /// The scalars (their types; values are arguments).
    pub scalars: &'p [ScalarValue],
    /// The instructions.
    pub instrs: &'p [Instr],
    /// The value of each output.
    pub results: &'p [usize],
    /// Every value's element type.
    pub types: &'p [DType],
}

impl FusedSpec {
    fn is_contiguous_vec(&self) -> bool {
        self.form.is_contiguous_vec()
    }

    /// Threads per block of this kernel (its `__launch_bounds__`).
    pub fn block(&self) -> u32 {
        self.form.block(self.vector)
    }

    /// Elements (or vectors) each thread handles per grid-stride step.
    pub fn work_per_thread(&self) -> u32 {
        self.form.work(self.vector)
    }

    /// The entry point's name: a hash of the signature, then the form, e.g.
    /// `ts_fused_3f2a...__vec4_w2_b256_i32`.
    pub fn entry_name(&self) -> String {
        let hash = Fnv128::hash(self.signature.as_bytes()) as u64;
        let mut name = format!("ts_fused_{hash:016x}__{}", self.form);
        if self.is_contiguous_vec() {
            let _ = write!(name, "_w{}_b{}", self.vector.work, self.vector.block);
        }
        let _ = write!(name, "_{}", self.index);
        name
    }

    /// The complete NVRTC program: the `kernels/` headers, then the generated tail.
    pub fn source(&self, body: &FusedBody<'_>) -> String {
        let mut s = headers();
        write_tail(&mut s, self, body);
        s
    }
}

fn compute(t: DType) -> &'static str {
    Operand::from_dtype(t).compute
}

fn storage(t: DType) -> &'static str {
    Operand::from_dtype(t).cuda
}

/// The generated functors and entry point.
fn write_tail(s: &mut String, spec: &FusedSpec, body: &FusedBody<'_>) {
    let _ = writeln!(s, "// ---- generated: fused {} ----", spec.signature);
    // One functor per op instance: the table's expression over `a`, `b`, `c`, `p0`, `p1`.
    for (k, instr) in body.instrs.iter().enumerate() {
        if let Instr::Op {
            cuda, args, params, ..
        } = instr
        {
            let names = ["a", "b", "c"];
            let list = args
                .iter()
                .zip(names)
                .map(|((_, t), n)| format!("{} {n}", compute(*t)))
                .collect::<Vec<_>>()
                .join(", ");
            let members = match params {
                Some([p0, _]) => format!("{} p0, p1; ", compute(body.scalars[*p0].dtype)),
                None => String::new(),
            };
            let _ = writeln!(
                s,
                "struct ts_op{k} {{ {members}__device__ __forceinline__ auto operator()({list}) const {{ return ({cuda}); }} }};"
            );
        }
    }
    // The expression: leaves in, every value in its compute type, rounded to its element
    // type after each op.
    let scalar_members: String = body
        .scalars
        .iter()
        .enumerate()
        .map(|(i, sc)| format!("  {} s{i};\n", compute(sc.dtype)))
        .collect();
    let leaf_params = body
        .leaves
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{} x{i}", compute(*t)))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        s,
        "struct ts_fused {{\n{scalar_members}  __device__ __forceinline__ auto operator()({leaf_params}) const {{"
    );
    for (k, instr) in body.instrs.iter().enumerate() {
        let t = body.types[k];
        let (ct, st) = (compute(t), storage(t));
        let value = match instr {
            Instr::Leaf { leaf } => format!("x{leaf}"),
            Instr::Scalar { slot } => format!("s{slot}"),
            Instr::Op { args, params, .. } => {
                let init = match params {
                    Some([p0, p1]) => format!("{{s{p0}, s{p1}}}"),
                    None => "{}".to_owned(),
                };
                let call = args
                    .iter()
                    .map(|(a, _)| format!("v{a}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("ts_conv<{ct}>::from(ts_conv<{st}>::from(ts_op{k}{init}({call})))")
            }
            Instr::Cast { arg, .. } => {
                format!("ts_conv<{ct}>::from(ts_conv<{st}>::from(v{arg}))")
            }
            // The launch reads current values as extra leaves
            // (`Program::instrs_with_currents_as_leaves`); a body given one directly names
            // an undefined value, which NVRTC refuses.
            Instr::Current { output } => format!("ts_current_not_bound_{output}"),
        };
        let _ = writeln!(s, "    const {ct} v{k} = {value};");
    }
    match body.results {
        [one] => {
            let _ = writeln!(s, "    return v{one};");
        }
        many => {
            let list = many
                .iter()
                .map(|r| format!("v{r}"))
                .collect::<Vec<_>>()
                .join(", ");
            let _ = writeln!(s, "    return ts_make_tuple({list});");
        }
    }
    let _ = writeln!(s, "  }}\n}};");
    // The entry point.
    let out_types: Vec<&str> = body
        .results
        .iter()
        .map(|&r| storage(body.types[r]))
        .collect();
    let out_names: Vec<String> = (0..out_types.len()).map(|i| format!("o{i}")).collect();
    let out_names: Vec<&str> = out_names.iter().map(String::as_str).collect();
    let in_types: Vec<&str> = body.leaves.iter().map(|&t| storage(t)).collect();
    let in_names: Vec<String> = (0..in_types.len()).map(|i| format!("l{i}")).collect();
    let in_names: Vec<&str> = in_names.iter().map(String::as_str).collect();
    let scalar_params = body
        .scalars
        .iter()
        .enumerate()
        .map(|(i, sc)| format!("{} s{i}", compute(sc.dtype)))
        .collect::<Vec<_>>()
        .join(", ");
    let init = (0..body.scalars.len())
        .map(|i| format!("s{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let op = format!("const ts_fused op = {{{init}}};");
    write_entry(
        s,
        &Entry {
            name: &spec.entry_name(),
            block: spec.block(),
            work: spec.work_per_thread(),
            form: spec.form,
            index: spec.index,
            outputs: &out_types,
            output_names: &out_names,
            inputs: &in_types,
            input_names: &in_names,
            scalar_params: &scalar_params,
            op: &op,
        },
    );
}

/// A scalar's kernel-argument bytes: its value in its compute type (`f16`/`bf16` widened to
/// `float`, `u8` to `unsigned int`), little-endian like the device.
pub fn scalar_arg(v: &ScalarValue) -> Vec<u8> {
    let (bytes, len) = scalar_arg_bytes(v);
    bytes[..len].to_vec()
}

/// [`scalar_arg`] without allocating: the bytes in a buffer and how many of them count.
pub fn scalar_arg_bytes(v: &ScalarValue) -> ([u8; 8], usize) {
    let b = v.bits;
    let mut out = [0u8; 8];
    let mut put = |bytes: &[u8]| {
        out[..bytes.len()].copy_from_slice(bytes);
        bytes.len()
    };
    let len = match v.dtype {
        DType::F32 | DType::I32 | DType::U8 => put(&(b as u32).to_le_bytes()),
        DType::F64 | DType::I64 => put(&b.to_le_bytes()),
        DType::F16 => put(&half::f16::from_bits(b as u16).to_f32().to_le_bytes()),
        DType::BF16 => put(&half::bf16::from_bits(b as u16).to_f32().to_le_bytes()),
        DType::Bool => put(&[u8::from(b != 0)]),
    };
    (out, len)
}
