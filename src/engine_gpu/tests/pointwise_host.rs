//! An eager launch's host side, on any host: argument packing (`kernel::args`), the
//! pointwise plan (`pointwise::plan::prepare`), plan signatures and the plan cache's map
//! (`pointwise::signature`, `kernel::launch`), and the kernel cache's keys.

use std::hash::{BuildHasher, BuildHasherDefault};

use crate::element::DType;
use crate::engine_gpu::kernel::args::{KernelArgs, LaunchArgs, ScalarBytes};
use crate::engine_gpu::kernel::cache::WordHasher;
use crate::engine_gpu::kernel::form::{Form, IndexWidth};
use crate::engine_gpu::kernel::launch::{PlanKey, PlanMap, CAPACITY};
use crate::engine_gpu::kernel::source::{KernelSource, Operand};
use crate::engine_gpu::offset_calculator::OffsetCalculator;
use crate::engine_gpu::pointwise::plan::{prepare, OpParts};
use crate::engine_gpu::pointwise::signature::{Signature, MAX_RANK};
use crate::engine_gpu::pointwise::source::KernelSpec;
use crate::error::LayoutError;
use crate::layout::{collapse, Layout};

fn add_parts() -> OpParts {
    OpParts {
        name: "add_scalar",
        expr: "ts_add(a, p0)",
        scalar: Operand::of::<f32>(),
        scalars: [ScalarBytes::of(2.5f32), ScalarBytes::of(0f32)],
    }
}

#[test]
fn scalars_widen_to_the_compute_type() {
    assert_eq!(ScalarBytes::of(1.5f32).as_bytes(), 1.5f32.to_le_bytes());
    assert_eq!(
        ScalarBytes::of(half::f16::from_f32(-3.25)).as_bytes(),
        (-3.25f32).to_le_bytes()
    );
    assert_eq!(
        ScalarBytes::of(half::bf16::from_f32(0.5)).as_bytes(),
        0.5f32.to_le_bytes()
    );
    assert_eq!(ScalarBytes::of(200u8).as_bytes(), 200u32.to_le_bytes());
    assert_eq!(
        ScalarBytes::of(i64::MIN + 7).as_bytes(),
        (i64::MIN + 7).to_le_bytes()
    );
    assert_eq!(ScalarBytes::of(-9i32).as_bytes(), (-9i32).to_le_bytes());
    assert_eq!(ScalarBytes::of(0.1f64).as_bytes(), 0.1f64.to_le_bytes());
    assert_eq!(ScalarBytes::of(true).as_bytes(), [1]);
    // The narrow integers widen to `int` / `unsigned int` (sign- or zero-extended).
    assert_eq!(ScalarBytes::of(-3i8).as_bytes(), (-3i32).to_le_bytes());
    assert_eq!(
        ScalarBytes::of(i16::MIN).as_bytes(),
        i32::from(i16::MIN).to_le_bytes()
    );
    assert_eq!(
        ScalarBytes::of(u16::MAX).as_bytes(),
        65_535u32.to_le_bytes()
    );
    assert_eq!(ScalarBytes::of(u32::MAX).as_bytes(), u32::MAX.to_le_bytes());
    assert_eq!(ScalarBytes::of(u64::MAX).as_bytes(), u64::MAX.to_le_bytes());
    // The fused kernels' scalar arguments agree with the eager ones.
    use crate::engine_gpu::fused::source::scalar_arg;
    use crate::tensor::expr::program::ScalarValue;
    assert_eq!(scalar_arg(&ScalarValue::of(-3i8)), (-3i32).to_le_bytes());
    assert_eq!(
        scalar_arg(&ScalarValue::of(i16::MIN)),
        i32::from(i16::MIN).to_le_bytes()
    );
    assert_eq!(
        scalar_arg(&ScalarValue::of(u16::MAX)),
        65_535u32.to_le_bytes()
    );
    assert_eq!(
        scalar_arg(&ScalarValue::of(u32::MAX)),
        u32::MAX.to_le_bytes()
    );
    assert_eq!(
        scalar_arg(&ScalarValue::of(u64::MAX)),
        u64::MAX.to_le_bytes()
    );
}

#[test]
fn args_keep_each_parameter_whole_and_aligned() {
    let mut args = KernelArgs::default();
    args.push(&[1, 2, 3]);
    args.push(&(0x0102_0304_0506_0708u64).to_le_bytes());
    args.push(&[9; 20]);
    assert_eq!(args.len(), 3);
    assert_eq!(args.param(0).unwrap(), [1, 2, 3]);
    assert_eq!(
        args.param(1).unwrap(),
        0x0102_0304_0506_0708u64.to_le_bytes()
    );
    assert_eq!(args.param(2).unwrap(), [9; 20]);
    assert!(args.param(3).is_none());
    let ptrs = args.pointers();
    assert!(ptrs.iter().all(|p| (*p as usize).is_multiple_of(8)));
    // Patching a parameter keeps the others and needs its length.
    assert!(args.set(1, &7u64.to_le_bytes()));
    assert!(!args.set(1, &[1, 2]));
    assert!(!args.set(3, &[1]));
    assert!(args.set(2, &[5; 20]));
    assert_eq!(args.param(0).unwrap(), [1, 2, 3]);
    assert_eq!(args.param(1).unwrap(), 7u64.to_le_bytes());
    assert_eq!(args.param(2).unwrap(), [5; 20]);
}

#[test]
fn frozen_args_keep_their_pointers_and_take_word_patches() {
    let mut args = KernelArgs::default();
    args.push(&0x1000u64.to_le_bytes());
    args.push(&[7u8; 20]);
    args.push(&2.5f32.to_le_bytes());
    let mut frozen = LaunchArgs::new(args);
    assert_eq!(frozen.len(), 3);
    let before: Vec<_> = frozen.params().to_vec();
    // Patches of the right length land in place; others change nothing.
    assert!(frozen.set_word(0, 0x2000, 8));
    assert!(frozen.set_word(2, u64::from(1.5f32.to_bits()), 4));
    assert!(!frozen.set_word(2, 0, 8));
    assert!(!frozen.set_word(1, 0, 8));
    assert!(!frozen.set_word(3, 0, 8));
    assert_eq!(frozen.param(0).unwrap(), 0x2000u64.to_le_bytes());
    assert_eq!(frozen.param(1).unwrap(), [7u8; 20]);
    assert_eq!(frozen.param(2).unwrap(), 1.5f32.to_le_bytes());
    // The `void**` array still points at each slot, and reads the patched values.
    let params = frozen.params().to_vec();
    assert_eq!(params, before);
    // SAFETY: each pointer addresses the first 8-byte word of its slot in `frozen`, alive
    // and unchanged here (`LaunchArgs`' invariant).
    let first = unsafe { params[0].cast::<u64>().read() };
    assert_eq!(first, 0x2000);
    assert!(params.iter().all(|p| (*p as usize).is_multiple_of(8)));
}

#[test]
fn contiguous_launch_packs_pointers_count_and_scalars() {
    let out = Layout::contiguous(&[8, 512]).unwrap();
    let a = Layout::new(&[8, 512], &[512, 1], 4).unwrap();
    let c = collapse([&out, &a]);
    let types = [Operand::of::<f32>(); 2];
    let (spec, args) = prepare(&add_parts(), &c, types, [0x1000, 0x8000]).unwrap();
    // `a` starts 4 floats (16 bytes) in: still 16-byte aligned.
    assert_eq!(spec.form, Form::Contiguous { vec: 4 });
    assert_eq!(spec.index, IndexWidth::Bits32);
    assert_eq!(spec.n_inputs, 1);
    assert_eq!(args.len(), 5);
    assert_eq!(args.param(0).unwrap(), 0x1000u64.to_le_bytes());
    assert_eq!(args.param(1).unwrap(), (0x8000u64 + 16).to_le_bytes());
    assert_eq!(args.param(2).unwrap(), 4096u32.to_le_bytes());
    assert_eq!(args.param(3).unwrap(), 2.5f32.to_le_bytes());
    assert_eq!(args.param(4).unwrap(), 0f32.to_le_bytes());
    // The vector form's launch shape, and only that form's.
    assert_eq!((spec.block(), spec.work_per_thread()), (128, 2));
    let (spec, _) = prepare(&add_parts(), &c, types, [0x1004, 0x8000]).unwrap();
    assert_eq!(spec.form, Form::Contiguous { vec: 1 });
    assert_eq!((spec.block(), spec.work_per_thread()), (256, 4));
}

#[test]
fn strided_launch_appends_the_offset_calculator_image() {
    let out = Layout::contiguous(&[6, 10]).unwrap();
    let a = Layout::contiguous(&[10, 6]).unwrap().t();
    let b = Layout::contiguous(&[6, 10]).unwrap().flip(1).unwrap();
    let c = collapse([&out, &a, &b]);
    let types = [Operand::of::<i64>(); 3];
    let parts = OpParts {
        name: "add",
        expr: "ts_add(a, b)",
        scalar: Operand::of::<i64>(),
        scalars: [ScalarBytes::of(0i64); 2],
    };
    let (spec, args) = prepare(&parts, &c, types, [0, 1 << 20, 2 << 20]).unwrap();
    assert_eq!(spec.form, Form::Strided { rank: 2 });
    assert_eq!(spec.out.dtype, DType::I64);
    assert_eq!(args.len(), 7);
    // The flipped input starts at its last column: offset 9 elements.
    assert_eq!(args.param(2).unwrap(), ((2u64 << 20) + 9 * 8).to_le_bytes());
    assert_eq!(args.param(3).unwrap(), 60u32.to_le_bytes());
    let strides: [&[isize]; 3] = std::array::from_fn(|k| &c.strides[k][..]);
    let calc = OffsetCalculator::<u32, 3>::new(&c.shape, strides).unwrap();
    assert_eq!(args.param(6).unwrap(), calc.kernel_param_bytes());
}

#[test]
fn far_offsets_switch_to_64_bit_count_and_calculator() {
    let big = 1isize << 31;
    let out = Layout::contiguous(&[3, 2]).unwrap();
    let a = Layout::new(&[3, 2], &[big, 1], 0).unwrap();
    let c = collapse([&out, &a]);
    let (spec, args) = prepare(&add_parts(), &c, [Operand::of::<f32>(); 2], [0, 0]).unwrap();
    assert_eq!(spec.index, IndexWidth::Bits64);
    assert_eq!(args.param(2).unwrap(), 6u64.to_le_bytes());
    let strides: [&[isize]; 2] = std::array::from_fn(|k| &c.strides[k][..]);
    let calc = OffsetCalculator::<u64, 2>::new(&c.shape, strides).unwrap();
    assert_eq!(args.param(5).unwrap(), calc.kernel_param_bytes());
}

#[test]
fn row_broadcast_packs_a_calculator_over_vectors() {
    let out = Layout::contiguous(&[16, 1024]).unwrap();
    let row = Layout::contiguous(&[1, 1024])
        .unwrap()
        .broadcast_to(&[16, 1024])
        .unwrap();
    let c = collapse([&out, &out, &row]);
    let parts = OpParts {
        name: "add",
        expr: "ts_add(a, b)",
        scalar: Operand::of::<f32>(),
        scalars: [ScalarBytes::of(0f32); 2],
    };
    let (spec, args) = prepare(&parts, &c, [Operand::of::<f32>(); 3], [0; 3]).unwrap();
    assert_eq!(
        spec.form,
        Form::StridedVec {
            rank: 2,
            vec: 4,
            bcast: 0
        }
    );
    // n counts vectors.
    assert_eq!(args.param(3).unwrap(), (16u32 * 256).to_le_bytes());
    let calc =
        OffsetCalculator::<u32, 3>::new(&[16, 256], [&[1024, 4], &[1024, 4], &[0, 4]]).unwrap();
    assert_eq!(args.param(6).unwrap(), calc.kernel_param_bytes());
}

#[test]
fn address_overflow_is_an_error() {
    let out = Layout::new(&[4], &[1], 1 << 60).unwrap();
    let c = collapse([&out]);
    let err = prepare(&add_parts(), &c, [Operand::of::<i64>()], [u64::MAX - 8]);
    assert!(matches!(err, Err(LayoutError::SizeOverflow { .. })));
}

fn sig(ptrs: [u64; 2], a: &Layout, name: &'static str) -> Option<Signature> {
    let out = Layout::contiguous(a.shape()).unwrap();
    let f = Operand::of::<f32>();
    Signature::of(
        0,
        name,
        "ts_exp(a)",
        f,
        &[(f, ptrs[0], &out), (f, ptrs[1], a)],
    )
}

#[test]
fn signatures_separate_what_the_plan_depends_on() {
    let a = Layout::contiguous(&[4, 8]).unwrap();
    let base = sig([0x1000, 0x2000], &a, "exp").unwrap();
    // Other buffers with the same alignment: the same plan.
    let moved = sig([0x9000, 0x5010], &a, "exp").unwrap();
    assert_eq!(base.key().words(), moved.key().words());
    // Alignment, views, ops, types, devices: different plans.
    let misaligned = sig([0x1000, 0x2004], &a, "exp").unwrap();
    assert_ne!(base.key().words(), misaligned.key().words());
    let t = Layout::contiguous(&[8, 4]).unwrap().t();
    assert_ne!(
        base.key().words(),
        sig([0x1000, 0x2000], &t, "exp").unwrap().key().words()
    );
    let sliced = Layout::new(&[4, 8], &[8, 1], 8).unwrap();
    assert_ne!(
        base.key().words(),
        sig([0x1000, 0x2000], &sliced, "exp").unwrap().key().words()
    );
    assert_ne!(
        base.key().words(),
        sig([0x1000, 0x2000], &a, "log").unwrap().key().words()
    );
    let out = Layout::contiguous(&[4, 8]).unwrap();
    let (f, h) = (Operand::of::<f32>(), Operand::of::<half::f16>());
    let f16 = Signature::of(
        0,
        "exp",
        "ts_exp(a)",
        h,
        &[(h, 0x1000, &out), (h, 0x2000, &a)],
    )
    .unwrap();
    assert_ne!(base.key().words(), f16.key().words());
    let dev1 = Signature::of(
        1,
        "exp",
        "ts_exp(a)",
        f,
        &[(f, 0x1000, &out), (f, 0x2000, &a)],
    )
    .unwrap();
    assert_ne!(base.key().words(), dev1.key().words());
    assert_ne!(base.key().hash(), dev1.key().hash());
    // The hash written with the words is the hash of the words.
    assert_eq!(base.key().hash(), PlanKey::new(base.key().words()).hash());
    // Too large to cache.
    let deep = Layout::contiguous(&[1; MAX_RANK + 1]).unwrap();
    assert!(sig([0, 0], &deep, "exp").is_none());
}

#[test]
fn hits_need_the_whole_signature_and_the_map_stays_bounded() {
    let a = Layout::contiguous(&[3, 5]).unwrap();
    let s = sig([0x100, 0x200], &a, "exp").unwrap();
    let mut map = PlanMap::new();
    assert!(map.get_mut(s.key()).is_none());
    map.insert(s.key(), 7u32);
    assert_eq!(map.get_mut(s.key()).copied(), Some(7));
    // Another signature under the same hash is a miss, not a wrong hit.
    let other = sig([0x100, 0x208], &a, "exp").unwrap();
    map.rehash(s.key(), other.key());
    assert!(map.get_mut(other.key()).is_none());
    // Bounded: filling past the capacity empties it first.
    for i in 0..(CAPACITY + 3) {
        let l = Layout::new(&[3, 5], &[5, 1], i).unwrap();
        let s = sig([0x100, 0x200], &l, "exp").unwrap();
        map.insert(s.key(), 0);
        assert!(map.len() <= CAPACITY);
        assert_eq!(map.get_mut(s.key()).copied(), Some(0));
    }
}

fn spec(op: &'static str, expr: &'static str, form: Form) -> KernelSpec {
    let f = Operand::of::<f32>();
    KernelSpec {
        op,
        expr,
        out: f,
        inputs: [f; 3],
        n_inputs: 2,
        scalar: f,
        form,
        index: IndexWidth::Bits32,
    }
}

#[test]
fn front_keys_hash_cheaply_and_compare_fully() {
    let build = BuildHasherDefault::<WordHasher>::default();
    let add = spec("add", "ts_add(a, b)", Form::Contiguous { vec: 4 });
    // Equal keys hash equal, also when built from separately formatted names.
    let same = spec(
        Box::leak(String::from("add").into_boxed_str()),
        "ts_add(a, b)",
        Form::Contiguous { vec: 4 },
    );
    assert_eq!(add, same);
    assert_eq!(
        build.hash_one((0usize, add)),
        build.hash_one((0usize, same))
    );
    // The expression is not hashed but is compared.
    let other_expr = spec("add", "ts_sub(a, b)", Form::Contiguous { vec: 4 });
    assert_eq!(build.hash_one(add), build.hash_one(other_expr));
    assert_ne!(add, other_expr);
    // Forms, widths, devices and types separate keys.
    let strided = spec("add", "ts_add(a, b)", Form::Strided { rank: 2 });
    assert_ne!(build.hash_one(add), build.hash_one(strided));
    assert_ne!(build.hash_one((0usize, add)), build.hash_one((1usize, add)));
    let mut f16_add = add;
    f16_add.out = Operand::of::<half::f16>();
    assert_ne!(add, f16_add);
    assert_ne!(build.hash_one(add), build.hash_one(f16_add));
}

#[test]
fn compile_keys_name_the_rank_width_and_source() {
    let arch = crate::engine_gpu::compile::Arch::new(9, 0);
    let s = spec(
        "add",
        "ts_add(a, b)",
        Form::StridedVec {
            rank: 3,
            vec: 4,
            bcast: 1,
        },
    );
    let key = s.compile_key(arch, &s.source());
    assert_eq!(key.rank, 3);
    assert_eq!(key.vector_width, 4);
    assert_eq!(key.index_bits, 32);
    assert_eq!(key.entry, s.entry_name());
    assert_eq!(
        key.dtypes,
        vec![
            crate::element::DType::F32,
            crate::element::DType::F32,
            crate::element::DType::F32
        ]
    );
    let other = spec("add", "ts_sub(a, b)", s.form);
    assert_ne!(
        key.source_hash,
        other.compile_key(arch, &other.source()).source_hash
    );
}
