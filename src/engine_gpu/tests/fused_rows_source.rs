//! Every row-stage kernel form through NVRTC (no GPU needed): issue 28's reduction nodes in
//! fused expressions, each stage kind over each float type, stages below and above other
//! ops, a cast after the stage, two outputs, every register form.
use crate::element::DType;
use crate::engine_gpu::compile::arch::Target;
use crate::engine_gpu::compile::nvrtc::{self, compile};
use crate::engine_gpu::fused::rows::source_of;
use crate::engine_gpu::fused::source::FusedBody;
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::tensor::expr::program::Program;
use crate::tensor::Tensor;
use crate::Cpu;
use half::{bf16, f16};

use crate::element::FloatElement;

/// The body of `program` as the row launch hands it to the generator.
fn compile_all(what: &str, p: &Program<'_, Cpu>, n_out: usize) {
    let leaves: Vec<DType> = p.leaves.iter().map(|l| l.dtype).collect();
    // (vector, chunks, warp): the element form held in registers by a warp, vectors of 4
    // held by a block with the last leaf constant along the row, the re-reading form.
    let last_leaf = 1u16 << (n_out + leaves.len() - 1);
    let forms: [((u8, u16), u8, bool); 3] = [
        ((1, 0), 4, true),
        ((4, last_leaf), 8, false),
        ((1, 0), 0, false),
    ];
    for (i, &(vector, chunks, warp)) in forms.iter().enumerate() {
        let body = FusedBody {
            leaves: &leaves,
            scalars: &p.scalars,
            instrs: &p.instrs,
            results: &p.results,
            types: p.types(),
        };
        let dims = 1 + (i % 3) as u8;
        let (entry, src) = source_of(body, n_out, dims, vector, chunks, warp);
        // PTX for every form; the vector form as sm_90 CUBIN through ptxas.
        let target = if i == 1 {
            Target::Cubin("sm_90")
        } else {
            Target::Ptx("compute_90")
        };
        if let Err(e) = compile(&entry, &src, target, &OPTIONS) {
            panic!(
                "{what} ({entry}): {e}\n{}",
                &src[src.len().saturating_sub(6000)..]
            );
        }
    }
}

fn stages_of<T: FloatElement>() {
    let x = Tensor::<T>::from_fn(&[4, 8], |i| T::from_f64(i[1] as f64)).unwrap();
    let w = Tensor::<T>::from_fn(&[8], |i| T::from_f64(i[0] as f64)).unwrap();
    let t = format!("{:?}", T::DTYPE);
    let two = crate::tensor::expr::scalar::<T, Cpu>(T::from_f64(2.0));
    compile_all(
        &format!("{t} scaled softmax times w"),
        &((x.lazy() * two).softmax(-1) * &w).program(),
        1,
    );
    compile_all(
        &format!("{t} log_softmax over dim 0, cast"),
        &x.lazy().log_softmax(0).cast::<f32>().program(),
        1,
    );
    compile_all(
        &format!("{t} affine layer norm"),
        &((x.lazy() + &w).layer_norm(1e-5) * &w + &x).program(),
        1,
    );
    compile_all(
        &format!("{t} rms norm"),
        &(x.lazy().rms_norm(None) * &w).program(),
        1,
    );
    for (name, e) in [
        ("logsumexp", x.lazy().logsumexp_keepdim(1).boxed()),
        ("mean", x.lazy().mean_keepdim(-1).boxed()),
        ("var", x.lazy().var_keepdim(1, 1.0).boxed()),
        ("std", x.lazy().std_keepdim(-1, 0.0).boxed()),
    ] {
        compile_all(&format!("{t} x - {name}"), &(x.lazy() - e).program(), 1);
    }
    // Two outputs: the stage's and a pointwise one.
    let a = x.lazy().softmax(-1);
    let b = x.lazy().exp();
    let mut p = Program::<Cpu>::default();
    a.build_output(&mut p);
    b.build_output(&mut p);
    compile_all(&format!("{t} two outputs"), &p, 2);
}

#[test]
fn every_row_stage_kernel_compiles() {
    if !nvrtc::available() {
        println!("skipped: NVRTC not found (run scripts/install-nvrtc.sh, set LD_LIBRARY_PATH)");
        return;
    }
    stages_of::<f32>();
    stages_of::<f64>();
    stages_of::<f16>();
    stages_of::<bf16>();
}
