//! The generated part of a fused kernel: one functor per op instance (the op table's CUDA
//! expression as its body, as for eager kernels), the expression's functor calling them in
//! order, and the entry point (`write_entry`, shared with the eager kernels).

use std::fmt::Write as _;

use crate::element::DType;
use crate::engine_gpu::compile::{Arch, Fnv128, KernelKey};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::form::{Form, IndexWidth, VECTOR_BLOCK};
use crate::engine_gpu::kernel::source::{
    self, headers, write_entry, Entry, KernelSource, Operand, EXACT_HALF_NANS,
};
use crate::error::GpuError;
use crate::tensor::expr::program::{Instr, ScalarValue};

/// Ops whose result, computed in `float` from `f16` (or `bf16`) values, is always an `f16`
/// (`bf16`) value again, so rounding it changes nothing: sign and magnitude changes, a
/// choice among the inputs (or 0, 1, -1 or NaN), and rounding to an integer (every integer
/// up to an `f16`'s 2^11 and a `bf16`'s 2^8 is a value, and larger values are integers
/// already). A NaN may keep another payload than a rounded one would; every consumer treats
/// NaNs alike (arithmetic returns the canonical NaN, comparisons are false, conversions to
/// integers give 0, stored NaNs compare equal in the tests). `tests` below checks the rule
/// on every `f16` and `bf16` value through the CPU closures, which compute exactly what the
/// CUDA expressions do for these ops.
pub const EXACT_IN_TYPE: &[&str] = &[
    "neg",
    "abs",
    "sign",
    "relu",
    "floor",
    "ceil",
    "round",
    "copy",
    "maximum",
    "minimum",
    "clamp",
    "clamp_scalar",
    "where",
];

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
    /// Threads per block of this kernel (its `__launch_bounds__`).
    pub fn block(&self) -> u32 {
        self.form.block()
    }

    /// Elements (or vectors) each thread handles per grid-stride step.
    pub fn work_per_thread(&self) -> u32 {
        self.form.work_per_thread()
    }

    /// The entry point's name: a hash of the signature, then the form, e.g.
    /// `ts_fused_3f2a...__vec4_w2_b128_i32`.
    pub fn entry_name(&self) -> String {
        let hash = Fnv128::hash(self.signature.as_bytes()) as u64;
        let mut name = format!("ts_fused_{hash:016x}__{}", self.form);
        if self.form.is_contiguous_vec() {
            let _ = write!(name, "_w{}_b{VECTOR_BLOCK}", self.work_per_thread());
        }
        let _ = write!(name, "_{}", self.index);
        name
    }

    /// The complete NVRTC program: the `kernels/` headers, then the generated tail.
    #[cfg(test)]
    pub fn source(&self, body: &FusedBody<'_>) -> String {
        let mut s = String::new();
        if shows_half_nan_bits(body.instrs) {
            s.push_str(EXACT_HALF_NANS);
        }
        s.push_str(&headers());
        write_tail(&mut s, self, body);
        s
    }
}

/// A fused kernel to compile: its spec (the front's key) and the program text it is
/// generated from.
pub(crate) struct FusedKernel<'a, 'p> {
    /// The spec.
    pub(crate) spec: &'a FusedSpec,
    /// The program text.
    pub(crate) body: FusedBody<'p>,
}

impl KernelSource for FusedKernel<'_, '_> {
    fn block(&self) -> u32 {
        self.spec.block()
    }

    /// Apply entry points start with `ts_pdl_enter()` ([`write_entry`]).
    fn waits_for_predecessor(&self) -> bool {
        true
    }

    /// Every op's name and expression, re-checked against the op table's rules.
    fn check(&self) -> Result<(), GpuError> {
        check_ops(self.body.instrs)
    }

    fn write_source(&self, s: &mut String) {
        if shows_half_nan_bits(self.body.instrs) {
            s.push_str(EXACT_HALF_NANS);
        }
        s.push_str(&headers());
        write_tail(s, self.spec, &self.body);
    }

    fn compile_key(&self, arch: Arch, source: &str) -> KernelKey {
        KernelKey {
            op: "fused".into(),
            entry: self.spec.entry_name().into(),
            dtypes: self.body.leaves.to_vec(),
            rank: self.spec.form.rank(),
            index_bits: self.spec.index.bits(),
            vector_width: self.spec.form.vector_width(),
            arch,
            options: OPTIONS,
            source_hash: KernelKey::hash_source(source),
        }
    }
}

pub(super) fn compute(t: DType) -> &'static str {
    Operand::from_dtype(t).compute
}

pub(super) fn storage(t: DType) -> &'static str {
    Operand::from_dtype(t).cuda
}

/// Whether a fused program shows the bits of a 16-bit float NaN in a result
/// ([`EXACT_HALF_NANS`]): it has an op that reads them (`signbit`, `copysign`) of an `f16` or
/// `bf16` value, or it widens such a value to `f32` / `f64`.
fn shows_half_nan_bits(instrs: &[Instr]) -> bool {
    instrs.iter().any(|i| match i {
        Instr::Op { name, args, .. } => {
            let dtypes: Vec<DType> = args.iter().map(|&(_, t)| t).collect();
            source::shows_half_nan_bits(name, &dtypes)
        }
        Instr::Cast { from, to, .. } => {
            matches!(from, DType::F16 | DType::BF16) && matches!(to, DType::F32 | DType::F64)
        }
        _ => false,
    })
}

/// Re-checks every op's name and expression of `instrs` against the op table's rules
/// (before each compile of a fused kernel).
///
/// # Errors
/// [`GpuError::UntrustedOp`] naming the op.
pub(super) fn check_ops(instrs: &[Instr]) -> Result<(), GpuError> {
    for i in instrs {
        if let Instr::Op { name, cuda, .. } = i {
            crate::ops::op::check_op_source(name, cuda)?;
        }
    }
    Ok(())
}

/// One functor per op instance: the table's expression over `a`, `b`, `c`, `p0`, `p1`.
pub(super) fn write_functors(s: &mut String, body: &FusedBody<'_>) {
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
}

/// The value lines of the instructions `keep` selects (every one for `None`): leaf `l`'s
/// element is `x{l}`, scalar `i` is `s{i}`, a row stage's value is `y` (in the row kernel's
/// accumulator type), op `k`'s functor `ts_op{k}`. Every value is in its compute type,
/// rounded to its element type after each op. Returns, per value, whether it was also
/// rounded once into its stored type as `r{k}` (`store_results`: an output's value).
pub(super) fn write_values(
    s: &mut String,
    body: &FusedBody<'_>,
    keep: Option<&[bool]>,
    store_results: bool,
) -> Vec<bool> {
    // Every value equals what eager evaluation stores (each op's result rounded to its
    // element type), with no rounding that is the identity: an op of [`EXACT_IN_TYPE`] over
    // values of its own half type is not rounded and widened again, and an output's value is
    // rounded once, straight into its stored type (`r{k}`), not rounded, widened and
    // converted again by the store. That saves two instructions per such op and per output
    // element (an `f16` `abs`'s rounding is an `F2F` of the slow conversion pipe).
    let mut stored = vec![false; body.instrs.len()];
    for (k, instr) in body.instrs.iter().enumerate() {
        if keep.is_some_and(|keep| !keep[k]) {
            continue;
        }
        let t = body.types[k];
        let (ct, st) = (compute(t), storage(t));
        // The value before rounding, for ops, casts and row stages.
        let raw = match instr {
            Instr::Leaf { leaf } => {
                let _ = writeln!(s, "    const {ct} v{k} = x{leaf};");
                continue;
            }
            Instr::Scalar { slot } => {
                let _ = writeln!(s, "    const {ct} v{k} = s{slot};");
                continue;
            }
            // The launch reads current values as extra leaves
            // (`Program::instrs_with_currents_as_leaves`); a body given one directly names
            // an undefined value, which NVRTC refuses.
            Instr::Current { output } => {
                let _ = writeln!(s, "    const {ct} v{k} = ts_current_not_bound_{output};");
                continue;
            }
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
                format!("ts_op{k}{init}({call})")
            }
            Instr::Cast { arg, .. } => format!("v{arg}"),
            // Rounded to the element type as an eager normalisation stores it.
            Instr::Row { .. } => "y".to_owned(),
        };
        let exact = exact_in_type(instr);
        let is_result = store_results && body.results.contains(&k);
        if is_result && ct != st {
            // Rounded once into the stored type; the compute-type value only if read on.
            stored[k] = true;
            let _ = writeln!(s, "    const {st} r{k} = ts_conv<{st}>::from({raw});");
            let widened = if exact {
                raw
            } else {
                format!("ts_conv<{ct}>::from(r{k})")
            };
            let _ = writeln!(s, "    const {ct} v{k} = {widened};");
        } else if exact {
            let _ = writeln!(s, "    const {ct} v{k} = {raw};");
        } else {
            let _ = writeln!(
                s,
                "    const {ct} v{k} = ts_conv<{ct}>::from(ts_conv<{st}>::from({raw}));"
            );
        }
    }
    stored
}

/// The generated functors and entry point.
fn write_tail(s: &mut String, spec: &FusedSpec, body: &FusedBody<'_>) {
    let _ = writeln!(s, "// ---- generated: fused {} ----", spec.signature);
    write_functors(s, body);
    // The expression: leaves in, every value in its compute type.
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
    let stored = write_values(s, body, None, true);
    let result = |r: &usize| {
        if stored[*r] {
            format!("r{r}")
        } else {
            format!("v{r}")
        }
    };
    match body.results {
        [one] => {
            let _ = writeln!(s, "    return {};", result(one));
        }
        many => {
            let list = many.iter().map(result).collect::<Vec<_>>().join(", ");
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

/// Whether `instr` is an op of [`EXACT_IN_TYPE`] whose result is `f16` or `bf16` and whose
/// float arguments all have that type (a `where` mask is `bool`), so its result needs no
/// rounding.
fn exact_in_type(instr: &Instr) -> bool {
    match instr {
        Instr::Op {
            name, args, out, ..
        } => {
            matches!(out, DType::F16 | DType::BF16)
                && EXACT_IN_TYPE.contains(name)
                && args.iter().all(|&(_, t)| t == *out || t == DType::Bool)
        }
        _ => false,
    }
}

/// A scalar's kernel-argument bytes: its value in its compute type (`f16`/`bf16` widened to
/// `float`, `i8` and `i16` to `int`, `u8` and `u16` to `unsigned int`), little-endian like the
/// device.
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
        // Integers' bits are sign- (signed) or zero-extended (unsigned) to 64, so their low
        // 32 are the `int` / `unsigned int` compute value.
        DType::F32 | DType::I32 | DType::U8 | DType::I8 | DType::I16 | DType::U16 | DType::U32 => {
            put(&(b as u32).to_le_bytes())
        }
        DType::F64 | DType::I64 | DType::U64 => put(&b.to_le_bytes()),
        DType::F16 => put(&half::f16::from_bits(b as u16).to_f32().to_le_bytes()),
        DType::BF16 => put(&half::bf16::from_bits(b as u16).to_f32().to_le_bytes()),
        DType::Bool => put(&[u8::from(b != 0)]),
    };
    (out, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::table::{
        Abs, Ceil, Clamp, ClampScalar, Floor, Identity, Maximum, Minimum, Neg, Relu, Round, Sign,
        Where,
    };
    use crate::ops::{BinaryOp, TernaryOp, UnaryOp};
    use crate::tensor::expr::program::ArgList;
    use half::{bf16, f16};

    /// Every value of a half type, widened to `f32`, and whether an `f32` is one.
    struct Half {
        values: Vec<f32>,
        holds: fn(f32) -> bool,
    }

    fn halves() -> [Half; 2] {
        [
            Half {
                values: (0..=u16::MAX).map(|b| f16::from_bits(b).to_f32()).collect(),
                holds: |x| f16::from_f32(x).to_f32().to_bits() == x.to_bits(),
            },
            Half {
                values: (0..=u16::MAX)
                    .map(|b| bf16::from_bits(b).to_f32())
                    .collect(),
                holds: |x| bf16::from_f32(x).to_f32().to_bits() == x.to_bits(),
            },
        ]
    }

    /// The rule behind [`EXACT_IN_TYPE`], on every value: each op, computed in `f32` (the
    /// compute type of both half types) from values of the type, gives a value of the type
    /// (or a NaN). Binary and ternary ops pair every value with a sample of others.
    #[test]
    fn exact_ops_keep_half_values() {
        for h in halves() {
            let sample: Vec<f32> = h.values.iter().step_by(1021).copied().collect();
            let check = |name: &str, y: f32| {
                assert!(y.is_nan() || (h.holds)(y), "{name} gave {y:e}");
            };
            let mut covered = Vec::new();
            for &name in EXACT_IN_TYPE {
                for &x in &h.values {
                    match name {
                        "neg" => check(name, UnaryOp::<f32>::cpu(&Neg, x)),
                        "abs" => check(name, UnaryOp::<f32>::cpu(&Abs, x)),
                        "sign" => check(name, UnaryOp::<f32>::cpu(&Sign, x)),
                        "relu" => check(name, UnaryOp::<f32>::cpu(&Relu, x)),
                        "floor" => check(name, UnaryOp::<f32>::cpu(&Floor, x)),
                        "ceil" => check(name, UnaryOp::<f32>::cpu(&Ceil, x)),
                        "round" => check(name, UnaryOp::<f32>::cpu(&Round, x)),
                        "copy" => check(name, UnaryOp::<f32>::cpu(&Identity, x)),
                        _ => {
                            for &y in &sample {
                                let z = sample[(y.to_bits() as usize) % sample.len()];
                                let v = match name {
                                    "maximum" => BinaryOp::<f32>::cpu(&Maximum, x, y),
                                    "minimum" => BinaryOp::<f32>::cpu(&Minimum, x, y),
                                    "clamp" => TernaryOp::<f32, f32>::cpu(&Clamp, x, y, z),
                                    "clamp_scalar" => UnaryOp::<f32>::cpu(&ClampScalar(y, z), x),
                                    "where" => TernaryOp::<bool, f32>::cpu(&Where, x < y, x, y),
                                    other => panic!("{other} has no check here"),
                                };
                                check(name, v);
                            }
                        }
                    }
                }
                covered.push(name);
            }
            assert_eq!(covered, EXACT_IN_TYPE);
        }
    }

    /// The generator leaves out exactly the round trips that are identities.
    #[test]
    fn rounding_skips_only_exact_ops() {
        let (h, b) = (DType::F16, DType::Bool);
        let op = |name: &'static str, args: Vec<(usize, DType)>, out: DType| Instr::Op {
            name,
            cuda: "a",
            args: ArgList::from_slice(&args),
            params: None,
            out,
        };
        assert!(exact_in_type(&op("abs", vec![(0, h)], h)));
        assert!(exact_in_type(&op("where", vec![(0, b), (1, h), (2, h)], h)));
        assert!(exact_in_type(&op(
            "neg",
            vec![(0, DType::BF16)],
            DType::BF16
        )));
        // f32 needs no rounding anyway; other ops round; mixed types are not covered.
        assert!(!exact_in_type(&op(
            "abs",
            vec![(0, DType::F32)],
            DType::F32
        )));
        assert!(!exact_in_type(&op("exp", vec![(0, h)], h)));
        assert!(!exact_in_type(&op(
            "maximum",
            vec![(0, h), (1, DType::F32)],
            h
        )));
        assert!(!exact_in_type(&Instr::Cast {
            arg: 0,
            from: DType::F32,
            to: h
        }));
    }
}
