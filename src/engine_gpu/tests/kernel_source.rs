//! Every pointwise kernel source compiles under NVRTC. NVRTC needs no GPU: run
//! `bash scripts/install-nvrtc.sh` and put the folder it prints on `LD_LIBRARY_PATH`. Without
//! NVRTC each test prints a line and passes.
//!
//! - every op of the table, for every element type its bound allows, and every conversion
//!   (`cast_*`), in a form that rotates through all forms and index widths;
//! - every form (contiguous, vectorised, strided ranks 1 to 6, inner-vectorised strided ranks
//!   1 to 6, tiled) at both index widths, for copy, add, where and fill over their types;
//! - the contiguous vector form (its own launch shape: `VECTOR_WORK` vectors per thread, one
//!   for 16-element vectors, `VECTOR_BLOCK` threads) for the benchmark's contiguous cases, at
//!   both widths, as PTX and `sm_90` CUBIN;
//! - the conversions again for `sm_90` (CUBIN, through ptxas: checks the inline PTX);
//! - `#[ignore]`d: the whole product of ops, types, forms and widths (`--ignored`, minutes).
//!
//! Specs compile in batches (the headers once, each tail in its own namespace) to keep the
//! run short; a failing batch is recompiled spec by spec, so the report names the kernel and
//! shows its own NVRTC log.

use std::sync::Mutex;

use crate::engine_gpu::compile::arch::Target;
use crate::engine_gpu::compile::nvrtc::{self, compile};
use crate::engine_gpu::fused::source::FusedBody;
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::form::{Form, IndexWidth, TileShape, VECTOR_BLOCK};
use crate::engine_gpu::kernel::source::{headers, KernelSource, Operand};
use crate::engine_gpu::kernel::tiled::tile_shape;
use crate::engine_gpu::pointwise::source::{KernelSpec, MAX_INPUTS};
use crate::tensor::expr::program::{Instr, Program};
use typestate_tensor::element::DType;
use typestate_tensor::ops::cast::cast_name;
use typestate_tensor::ops::table::NextAfter;
use typestate_tensor::ops::table::{OpInfo, BINARY_OPS, TERNARY_OPS, UNARY_OPS};
use typestate_tensor::ops::BinaryOp;
use typestate_tensor::Cpu;

const PTX: Target = Target::Ptx("compute_90");
const CUBIN: Target = Target::Cubin("sm_90");

fn nvrtc_present() -> bool {
    let present = nvrtc::available();
    if !present {
        println!("skipped: NVRTC not found (run scripts/install-nvrtc.sh, set LD_LIBRARY_PATH)");
    }
    present
}

/// The element types a bound of the op table admits.
fn dtypes_of(bound: &str) -> Vec<DType> {
    use DType::*;
    match bound {
        "Element" => DType::ALL.to_vec(),
        "Numeric" => vec![F32, F64, F16, BF16, I32, I64, U8, I8, I16, U16, U32, U64],
        "Signed" => vec![F32, F64, F16, BF16, I32, I64, I8, I16],
        "FloatElement" => vec![F32, F64, F16, BF16],
        // Integer, bitwise, logical and float-predicate ops (issue 26).
        "DivRem" => vec![F32, F64, F16, BF16, I32, I64, U8],
        "Bitwise" => vec![I32, I64, U8, Bool],
        "Integer" => vec![I32, I64, U8],
        other => panic!("unknown bound {other}"),
    }
}

/// An op of the table at one element type: output and inputs.
#[derive(Clone, Copy)]
struct Instance {
    name: &'static str,
    cuda: &'static str,
    out: DType,
    inputs: [DType; MAX_INPUTS],
    n_inputs: usize,
    scalar: DType,
}

impl Instance {
    fn inputs(&self) -> &[DType] {
        &self.inputs[..self.n_inputs]
    }

    fn spec(&self, form: Form, index: IndexWidth) -> KernelSpec {
        let mut inputs = [Operand::from_dtype(self.out); MAX_INPUTS];
        for (slot, &d) in inputs.iter_mut().zip(self.inputs()) {
            *slot = Operand::from_dtype(d);
        }
        KernelSpec {
            op: self.name,
            expr: self.cuda,
            out: Operand::from_dtype(self.out),
            inputs,
            n_inputs: self.n_inputs as u8,
            scalar: Operand::from_dtype(self.scalar),
            form,
            index,
        }
    }
}

fn instance(info: &OpInfo, out: DType, inputs: &[DType], scalar: DType) -> Instance {
    let mut ins = [out; MAX_INPUTS];
    ins[..inputs.len()].copy_from_slice(inputs);
    Instance {
        name: info.name,
        cuda: info.cuda,
        out,
        inputs: ins,
        n_inputs: inputs.len(),
        scalar,
    }
}

/// Binary ops whose output is `bool` (the comparisons, the logical ops).
const COMPARISONS: [&str; 9] = [
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    // Integer, bitwise, logical and float-predicate ops (issue 26).
    "logical_and",
    "logical_or",
    "logical_xor",
];
/// Unary ops whose output is `bool`.
const UNARY_BOOL: [&str; 7] = [
    // Integer, bitwise, logical and float-predicate ops (issue 26).
    "logical_not",
    "isnan",
    "isinf",
    "isposinf",
    "isneginf",
    "isfinite",
    "signbit",
];

/// Every op of the table at every element type its bound allows, and every conversion.
fn every_instance() -> Vec<Instance> {
    let mut all = Vec::new();
    for info in UNARY_OPS {
        for t in dtypes_of(info.bound) {
            let out = if UNARY_BOOL.contains(&info.name) {
                DType::Bool
            } else {
                t
            };
            all.push(instance(info, out, &[t], t));
        }
    }
    // `nextafter`, written by hand outside the table's lists (its scalars are its type's).
    let nextafter = OpInfo {
        name: <NextAfter as BinaryOp<f32>>::NAME,
        bound: "FloatElement",
        cuda: <NextAfter as BinaryOp<f32>>::CUDA,
    };
    for t in dtypes_of(nextafter.bound) {
        all.push(instance(&nextafter, t, &[t, t], t));
    }
    for info in BINARY_OPS {
        for t in dtypes_of(info.bound) {
            let out = if COMPARISONS.contains(&info.name) {
                DType::Bool
            } else {
                t
            };
            all.push(instance(info, out, &[t, t], t));
        }
    }
    for info in TERNARY_OPS {
        for t in dtypes_of(info.bound) {
            let first = if info.name == "where" { DType::Bool } else { t };
            all.push(instance(info, t, &[first, t, t], t));
        }
    }
    all.extend(cast_instances());
    all
}

/// `cast_U` from every type to every type (the expression is `a`; the store converts).
fn cast_instances() -> Vec<Instance> {
    let mut all = Vec::new();
    for to in DType::ALL {
        for from in DType::ALL {
            let info = OpInfo {
                name: cast_name(to),
                bound: "Element",
                cuda: "a",
            };
            all.push(instance(&info, to, &[from], from));
        }
    }
    all
}

fn fill(t: DType) -> Instance {
    let info = OpInfo {
        name: "fill",
        bound: "Element",
        cuda: "p0",
    };
    instance(&info, t, &[], t)
}

/// Elements per 16-byte vector of the widest operand.
fn max_vec(inst: &Instance) -> u8 {
    let widest = inst
        .inputs()
        .iter()
        .chain([&inst.out])
        .map(|d| d.size_in_bytes())
        .max()
        .unwrap();
    (16 / widest) as u8
}

/// Every form a launch of `inst` can take (without the index width).
fn every_form(inst: &Instance) -> Vec<Form> {
    let n = inst.n_inputs as u32;
    let vec = max_vec(inst);
    let mut forms = vec![Form::Contiguous { vec: 1 }, Form::Contiguous { vec }];
    if n == 0 {
        return forms;
    }
    forms.extend((1..=6).map(|rank| Form::Strided { rank }));
    // Inner-vectorised: rotate the broadcast mask through every subset of the inputs.
    forms.extend((1..=6u8).map(|rank| Form::StridedVec {
        rank,
        vec,
        bcast: rank % (1 << n),
    }));
    forms.extend(tiled_forms(inst));
    forms
}

/// Elements per 4-byte word of the widest operand: the tiled form's widest access (1 for
/// 4- and 8-byte types).
fn tiled_vec(inst: &Instance) -> u8 {
    (4 / (16 / usize::from(max_vec(inst))).min(4)) as u8
}

/// The tiled forms of `inst`: rank 2 with every staged mask in the nominal tile, and ranks 3
/// to 8 with the tile shapes ragged or small dims pick (tall, wide, square, the smallest, and
/// the largest the kernel takes), each staging one input; then, for 1- and 2-byte types, the
/// same with vector accesses (`vec` 2 and 4 where the type allows) in the tiles
/// [`tile_shape`] picks for them.
fn tiled_forms(inst: &Instance) -> Vec<Form> {
    let n = inst.n_inputs as u32;
    let nominal = tile_shape(1 << 12, 1 << 12, 1);
    let mut forms: Vec<Form> = (1..(1u8 << n))
        .map(|staged| Form::Tiled {
            rank: 2,
            dim: 0,
            staged,
            tile: nominal,
            vec: 1,
            direct: 0,
        })
        .collect();
    let shapes = [
        TileShape { rows: 128, cols: 8 },
        TileShape { rows: 8, cols: 128 },
        TileShape { rows: 16, cols: 16 },
        tile_shape(20, 20, 1),
        nominal,
        TileShape { rows: 64, cols: 64 },
    ];
    forms.extend((3..=8u8).zip(shapes).map(|(rank, tile)| Form::Tiled {
        rank,
        dim: rank % (rank - 1),
        staged: 1 << (rank % n as u8),
        tile,
        vec: 1,
        direct: 0,
    }));
    let mut vec = tiled_vec(inst);
    while vec > 1 {
        let nominal = tile_shape(1 << 12, 1 << 12, vec);
        // Every unstaged input read as vectors, or none (the masks `tiled_direct_vec` picks).
        let all = (1u8 << n) - 1;
        forms.extend((1..(1u8 << n)).flat_map(|staged| {
            [0, all & !staged].map(|direct| Form::Tiled {
                rank: 2,
                dim: 0,
                staged,
                tile: nominal,
                vec,
                direct,
            })
        }));
        let shapes = [
            tile_shape(1 << 20, 8, vec),
            tile_shape(8, 1 << 20, vec),
            tile_shape(20, 20, vec),
            nominal,
        ];
        forms.extend((3..=6u8).zip(shapes).map(|(rank, tile)| {
            let staged = 1 << (rank % n as u8);
            Form::Tiled {
                rank,
                dim: rank % (rank - 1),
                staged,
                tile,
                vec,
                direct: all & !staged,
            }
        }));
        vec /= 2;
    }
    forms
}

const WIDTHS: [IndexWidth; 2] = [IndexWidth::Bits32, IndexWidth::Bits64];

/// Compiles `specs` for `target` in batches; returns the failures as (entry name, log).
fn compile_all(specs: &[KernelSpec], target: Target) -> Vec<(String, String)> {
    const BATCH: usize = 48;
    let failures = Mutex::new(Vec::new());
    let chunks: Vec<&[KernelSpec]> = specs.chunks(BATCH).collect();
    let next = Mutex::new(0usize);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap();
                    *n += 1;
                    *n - 1
                };
                let Some(chunk) = chunks.get(i) else { break };
                let mut src = headers();
                for (k, spec) in chunk.iter().enumerate() {
                    src.push_str(&format!("namespace ts_batch_{k} {{\n{}}}\n", spec.tail()));
                }
                if compile("batch", &src, target, &OPTIONS).is_err() {
                    for spec in chunk.iter() {
                        if let Err(e) =
                            compile(&spec.entry_name(), &spec.source(), target, &OPTIONS)
                        {
                            failures
                                .lock()
                                .unwrap()
                                .push((spec.entry_name(), e.to_string()));
                        }
                    }
                }
            });
        }
    });
    failures.into_inner().unwrap()
}

fn assert_compiles(specs: &[KernelSpec], target: Target) {
    let failures = compile_all(specs, target);
    for (name, log) in failures.iter().take(5) {
        eprintln!("=== {name}\n{log}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} kernels failed to compile for {target:?}: {:?}",
        failures.len(),
        specs.len(),
        failures.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    println!("{} kernels compiled for {target:?}", specs.len());
}

#[test]
fn every_op_at_every_type_compiles() {
    if !nvrtc_present() {
        return;
    }
    // One spec per (op, type), rotating through the forms and widths so each is exercised by
    // many ops.
    let specs: Vec<KernelSpec> = every_instance()
        .iter()
        .enumerate()
        .map(|(i, inst)| {
            let forms = every_form(inst);
            inst.spec(forms[i % forms.len()], WIDTHS[(i / forms.len()) % 2])
        })
        .collect();
    assert!(specs.len() > 250, "{} instances", specs.len());
    assert_compiles(&specs, PTX);
}

#[test]
fn every_form_and_width_compiles() {
    if !nvrtc_present() {
        return;
    }
    let copy = UNARY_OPS.iter().find(|o| o.name == "copy").unwrap();
    let add = BINARY_OPS.iter().find(|o| o.name == "add").unwrap();
    let select = TERNARY_OPS.iter().find(|o| o.name == "where").unwrap();
    let mut instances: Vec<Instance> = DType::ALL
        .iter()
        .map(|&t| instance(copy, t, &[t], t))
        .collect();
    instances.extend(DType::ALL.iter().map(|&t| fill(t)));
    instances.extend(
        [
            DType::F32,
            DType::F16,
            DType::U8,
            DType::I64,
            DType::I8,
            DType::U16,
            DType::U64,
        ]
        .iter()
        .map(|&t| instance(add, t, &[t, t], t)),
    );
    instances.extend(
        [DType::F32, DType::BF16, DType::I16, DType::U32]
            .iter()
            .map(|&t| instance(select, t, &[DType::Bool, t, t], t)),
    );
    let specs: Vec<KernelSpec> = instances
        .iter()
        .flat_map(|inst| {
            every_form(inst)
                .into_iter()
                .flat_map(move |f| WIDTHS.map(|w| inst.spec(f, w)))
        })
        .collect();
    assert_compiles(&specs, PTX);
}

#[test]
fn the_vector_launch_shape_compiles() {
    if !nvrtc_present() {
        return;
    }
    let copy = UNARY_OPS.iter().find(|o| o.name == "copy").unwrap();
    let exp = UNARY_OPS.iter().find(|o| o.name == "exp").unwrap();
    let add = BINARY_OPS.iter().find(|o| o.name == "add").unwrap();
    let f32_ = DType::F32;
    let instances = [
        instance(copy, f32_, &[f32_], f32_),
        instance(exp, f32_, &[f32_], f32_),
        fill(f32_),
        instance(add, f32_, &[f32_, f32_], f32_),
        instance(add, DType::F16, &[DType::F16, DType::F16], DType::F16),
        instance(add, DType::F64, &[DType::F64, DType::F64], DType::F64),
        instance(add, DType::U8, &[DType::U8, DType::U8], DType::U8),
    ];
    let specs: Vec<KernelSpec> = instances
        .iter()
        .flat_map(|inst| WIDTHS.map(|w| inst.spec(Form::Contiguous { vec: max_vec(inst) }, w)))
        .collect();
    // One 16-byte vector a thread only for several 1-byte inputs (`NARROW_VECTOR_WORK`).
    let work: Vec<u32> = specs.iter().map(|s| s.work_per_thread()).collect();
    assert_eq!(work, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1]);
    let copy_u8 = instance(copy, DType::U8, &[DType::U8], DType::U8);
    let spec = copy_u8.spec(Form::Contiguous { vec: 16 }, IndexWidth::Bits32);
    assert_eq!(spec.work_per_thread(), 2);
    for spec in &specs {
        let tail = spec.tail();
        let (b, w) = (VECTOR_BLOCK, spec.work_per_thread());
        assert!(tail.contains(&format!("__launch_bounds__({b})")), "{tail}");
        assert!(
            tail.contains(&format!("ts_apply_contiguous_vec<{b}, {w}, ")),
            "{tail}"
        );
    }
    assert_compiles(&specs, PTX);
    assert_compiles(&specs, CUBIN);
}

#[test]
fn conversions_assemble_for_sm_90() {
    if !nvrtc_present() {
        return;
    }
    let specs: Vec<KernelSpec> = cast_instances()
        .iter()
        .flat_map(|inst| {
            [
                inst.spec(Form::Contiguous { vec: max_vec(inst) }, IndexWidth::Bits32),
                inst.spec(tiled_forms(inst)[0], IndexWidth::Bits64),
            ]
        })
        .collect();
    assert_compiles(&specs, CUBIN);
}

#[test]
#[ignore = "compiles every op x type x form x width: several minutes"]
fn the_whole_product_compiles() {
    if !nvrtc_present() {
        return;
    }
    let specs: Vec<KernelSpec> = every_instance()
        .iter()
        .flat_map(|inst| {
            every_form(inst)
                .into_iter()
                .flat_map(move |f| WIDTHS.map(|w| inst.spec(f, w)))
        })
        .collect();
    assert_compiles(&specs, PTX);
}

/// What a [`FusedBody`] of a program borrows, owned: its leaves, then the outputs it reads in
/// place as extra leaves (as the launch reads them), every value's element type, and the
/// instructions with those current values as leaves.
struct FusedParts {
    leaves: Vec<DType>,
    types: Vec<DType>,
    instrs: Vec<Instr>,
}

impl FusedParts {
    fn of(p: &Program<'_, Cpu>) -> Self {
        let leaves = p.leaves.iter().map(|l| l.dtype);
        let currents = p.currents.iter().map(|&(_, t)| t);
        FusedParts {
            leaves: leaves.chain(currents).collect(),
            types: (0..p.instrs.len()).map(|v| p.dtype(v)).collect(),
            instrs: p.instrs_with_currents_as_leaves(),
        }
    }

    fn body<'a>(&'a self, p: &'a Program<'_, Cpu>) -> FusedBody<'a> {
        FusedBody {
            leaves: &self.leaves,
            scalars: &p.scalars,
            instrs: &self.instrs,
            results: &p.results,
            types: &self.types,
        }
    }
}

/// Fused kernels of several structures (one and three outputs, casts, selects, scalars,
/// every element type of the float chain) compile in every form and index width.
#[test]
fn fused_sources_compile_in_every_form() {
    use crate::engine_gpu::fused::source::FusedSpec;
    use crate::tensor::expr;
    use typestate_tensor::tensor::Tensor;
    if !nvrtc_present() {
        return;
    }
    let a = Tensor::<f32>::zeros(&[4, 4]).unwrap();
    let h = Tensor::<half::f16>::zeros(&[4, 4]).unwrap();
    let i = Tensor::<i32>::zeros(&[4, 4]).unwrap();
    let gelu = (a.lazy() * &a + 1.0f32).gelu();
    let chain = ((-(h.lazy() * &h).abs()).exp() * half::f16::from_f32(0.5))
        .tanh()
        .sigmoid();
    let select = expr::where_cond(i.lazy().lt(&i), i.lazy() * 3, i.lazy().abs())
        .cast::<u8>()
        .cast::<f64>();
    // Three outputs (an Adam step's p, m, v): one program holding all three.
    let m = a.lazy() * 0.9f32 + a.lazy() * 0.1f32;
    let v = a.lazy() * 0.99f32 + a.lazy().square() * 0.01f32;
    let p = a.lazy() - m.clone() / (v.clone().sqrt() + 1e-8f32);
    let adam = (p, m, v);
    // The same step in place: p, m, v read as their outputs' current values.
    let (pc, mc, vc) = (
        expr::current::<f32, Cpu, 0>(),
        expr::current::<f32, Cpu, 1>(),
        expr::current::<f32, Cpu, 2>(),
    );
    let m = mc * 0.9f32 + a.lazy() * 0.1f32;
    let v = vc * 0.99f32 + a.lazy().square() * 0.01f32;
    let p = pc - m.clone() / (v.clone().sqrt() + 1e-8f32);
    let adam_in_place = (p, m, v);
    // Ops exact in their half type (not rounded again), outputs of half
    // and u8 types returned in their storage type, one of them an exact op's value.
    let b = Tensor::<half::bf16>::zeros(&[4, 4]).unwrap();
    let hb = half::bf16::from_f32(0.5);
    let exact = expr::where_cond(b.lazy().lt(&b), -b.lazy(), b.lazy().abs())
        .maximum(&b)
        .clamp_scalar(-hb, hb)
        .floor();
    let exact_u8 = (b.lazy() * hb).cast::<u8>();
    let signed = b.lazy().sign() + hb;
    let mut programs = vec![gelu.program(), chain.program(), select.program()];
    {
        let mut two = Program::<Cpu>::default();
        exact.build_output(&mut two);
        exact_u8.build_output(&mut two);
        signed.build_output(&mut two);
        programs.push(two);
    }
    {
        // p, m, v in one program, built as `eval_into` builds a tuple.
        let (p, m, v) = &adam;
        let mut three = Program::<Cpu>::default();
        p.build_output(&mut three);
        m.build_output(&mut three);
        v.build_output(&mut three);
        programs.push(three);
        let (p, m, v) = &adam_in_place;
        let mut in_place = Program::<Cpu>::default();
        p.build_output(&mut in_place);
        m.build_output(&mut in_place);
        v.build_output(&mut in_place);
        assert_eq!(in_place.currents.len(), 3);
        programs.push(in_place);
    }
    let mut sources = Vec::new();
    for p in &programs {
        let (parts, signature) = (FusedParts::of(p), p.signature());
        let body = parts.body(p);
        let n = p.results.len() + parts.leaves.len();
        let forms = [
            Form::Contiguous { vec: 1 },
            Form::Contiguous { vec: 4 },
            Form::Strided { rank: 3 },
            Form::StridedVec {
                rank: 2,
                vec: 2,
                bcast: 1,
            },
            Form::Tiled {
                rank: 2,
                dim: 0,
                staged: 1,
                tile: TileShape { rows: 32, cols: 32 },
                vec: 1,
                direct: 0,
            },
            Form::Tiled {
                rank: 5,
                dim: 1,
                staged: 1,
                tile: TileShape { rows: 64, cols: 64 },
                vec: 1,
                direct: 0,
            },
            // Vector accesses (whatever the types: the kernel compiles for any).
            Form::Tiled {
                rank: 3,
                dim: 1,
                staged: 1,
                tile: TileShape { rows: 64, cols: 64 },
                vec: 4,
                direct: 0b110,
            },
            Form::Tiled {
                rank: 2,
                dim: 0,
                staged: 1,
                tile: TileShape { rows: 64, cols: 32 },
                vec: 2,
                direct: 0b110,
            },
        ];
        assert!(n <= 12);
        for form in forms {
            for index in WIDTHS {
                let spec = FusedSpec {
                    signature: signature.clone(),
                    form,
                    index,
                };
                sources.push((spec.entry_name(), spec.source(&body)));
            }
        }
    }
    let mut failures = Vec::new();
    for (name, src) in &sources {
        if let Err(e) = compile(name, src, PTX, &OPTIONS) {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    println!("{} fused kernels compiled", sources.len());
}

/// 16-bit float kernels widen NaNs with their sign and payload only where a result shows
/// them (`kernels/half.cuh`, `TS_EXACT_HALF_NANS`): those sources define it, the others do
/// not, and both compile.
#[test]
fn exact_half_nans_only_where_a_result_shows_them() {
    use crate::engine_gpu::kernel::source::EXACT_HALF_NANS;
    let unary = |n: &str| *UNARY_OPS.iter().find(|o| o.name == n).unwrap();
    let binary = |n: &str| *BINARY_OPS.iter().find(|o| o.name == n).unwrap();
    let f16 = DType::F16;
    let cast = |to: DType| OpInfo {
        name: cast_name(to),
        bound: "Element",
        cuda: "a",
    };
    let signed = [
        instance(&unary("signbit"), DType::Bool, &[f16], f16),
        instance(&binary("copysign"), f16, &[f16, f16], f16),
        instance(&cast(DType::F32), DType::F32, &[f16], f16),
        instance(&cast(DType::F64), DType::F64, &[f16], f16),
        instance(&unary("signbit"), DType::Bool, &[DType::BF16], DType::BF16),
        instance(&cast(DType::F32), DType::F32, &[DType::BF16], DType::BF16),
    ];
    let plain = [
        instance(&unary("erfc"), f16, &[f16], f16),
        instance(&unary("tanh"), DType::BF16, &[DType::BF16], DType::BF16),
        instance(&binary("add"), f16, &[f16, f16], f16),
        instance(&cast(DType::F16), f16, &[DType::F32], DType::F32),
        instance(&unary("signbit"), DType::Bool, &[DType::F32], DType::F32),
    ];
    let form = Form::Contiguous { vec: 8 };
    for inst in &signed {
        let src = inst.spec(form, IndexWidth::Bits32).source();
        assert!(src.starts_with(EXACT_HALF_NANS), "{}", inst.name);
    }
    for inst in &plain {
        let src = inst.spec(form, IndexWidth::Bits32).source();
        assert!(!src.contains("#define TS_EXACT_HALF_NANS"), "{}", inst.name);
    }
    if !nvrtc_present() {
        return;
    }
    for inst in signed.iter().chain(&plain) {
        let spec = inst.spec(form, IndexWidth::Bits32);
        if let Err(e) = compile(&spec.entry_name(), &spec.source(), PTX, &OPTIONS) {
            panic!("{}: {e}", spec.entry_name());
        }
    }
}

/// Fused programs define `TS_EXACT_HALF_NANS` only where a result shows a 16-bit float NaN's
/// bits: a `signbit` of an `f16` value or a widening cast of a half value, not a chain of
/// arithmetic on them.
#[test]
fn fused_exact_half_nans_only_where_a_result_shows_them() {
    use crate::engine_gpu::fused::source::FusedSpec;
    use crate::engine_gpu::kernel::source::EXACT_HALF_NANS;
    use typestate_tensor::tensor::Tensor;
    fn shows(p: &Program<'_, Cpu>) -> bool {
        let parts = FusedParts::of(p);
        let body = parts.body(p);
        let spec = FusedSpec {
            signature: p.signature(),
            form: Form::Contiguous { vec: 4 },
            index: IndexWidth::Bits32,
        };
        spec.source(&body).starts_with(EXACT_HALF_NANS)
    }
    let h = Tensor::<half::f16>::zeros(&[4, 4]).unwrap();
    let b = Tensor::<half::bf16>::zeros(&[4, 4]).unwrap();
    assert!(shows(&(h.lazy() * &h).signbit().program()));
    assert!(shows(&(h.lazy() * &h).cast::<f32>().program()));
    assert!(shows(&b.lazy().abs().cast::<f64>().program()));
    assert!(!shows(&(h.lazy() * &h).exp().program()));
    assert!(!shows(&b.lazy().tanh().cast::<half::f16>().program()));
}
