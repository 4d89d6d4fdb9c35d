//! The fused kernel caches: what a new scalar, a new layout class and a new op text do to
//! them, and that no two programs of different source share a key.

use crate::ops::table;
use crate::tensor::expr::program::Program;
use crate::tensor::Tensor;
use crate::Cpu;

/// Two programs that differ only in an op's CUDA text (the same name, the same types) have
/// different signatures, so the fused caches, which key on the signature, never hand one the
/// other's kernel. (Only this crate builds programs, from its own op table; this checks the
/// key itself, whatever a program holds.)
#[test]
fn op_text_is_part_of_the_signature() {
    let z = Tensor::<f32>::zeros(&[4]).unwrap();
    let view = z.view();
    let build = |cuda: &'static str| {
        let mut p = Program::<Cpu>::default();
        let leaf = p.leaf(&view);
        let r = p.op::<f32>("exp", cuda, &[leaf], None, crate::element::DType::F32);
        p.results.push(r);
        p.signature()
    };
    let table_exp = table::UNARY_OPS
        .iter()
        .find(|o| o.name == "exp")
        .expect("exp is in the table")
        .cuda;
    assert_ne!(build(table_exp), build("a * 2"));
    assert_eq!(build(table_exp), build(table_exp));
    // And the signature the real `exp` expression builds names the table's text.
    let real = z.lazy().exp().program().signature();
    assert!(real.contains(table_exp), "{real}");
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_new_scalar_reuses_the_kernel_and_a_new_layout_class_compiles_one() {
    use crate::engine_gpu::fused::launch::loaded_kernels_for;
    let Some(gpu) = super::gpu_or_skip("a_new_scalar_reuses_the_kernel") else {
        return;
    };
    let a = Tensor::<f32>::from_fn(&[64, 64], |i| i[0] as f32)
        .unwrap()
        .to_gpu(&gpu)
        .unwrap();
    let b = Tensor::<f32>::from_fn(&[64, 64], |i| i[1] as f32)
        .unwrap()
        .to_gpu(&gpu)
        .unwrap();
    let host = |t: &Tensor<f32, crate::runtime::Gpu>| t.to_cpu().unwrap().to_vec();
    // Counted per signature, so kernels other tests load at the same time do not count.
    let signature = ((a.lazy() - &b) * 1.0f32)
        .tanh()
        .exp()
        .program()
        .signature();
    let run = |s: f32| ((a.lazy() - &b) * s).tanh().exp().eval().unwrap();
    run(1.0);
    assert_eq!(loaded_kernels_for(&signature), 1);
    let x = run(0.25);
    assert_eq!(
        loaded_kernels_for(&signature),
        1,
        "a new scalar value recompiled"
    );
    let want: Vec<f32> = host(&a)
        .iter()
        .zip(host(&b))
        .map(|(x, y)| ((x - y) * 0.25).tanh().exp())
        .collect();
    let got = host(&x);
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} vs {w}");
    }
    // A transposed leaf is another layout class (the tiled form): one more kernel.
    let bt = b.t();
    ((a.lazy() - &bt) * 0.5f32).tanh().exp().eval().unwrap();
    assert_eq!(loaded_kernels_for(&signature), 2);
}
