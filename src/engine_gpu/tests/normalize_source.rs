//! Every normalisation kernel source through NVRTC (no GPU needed): issue 28.
use crate::engine_gpu::compile::arch::Target;
use crate::engine_gpu::compile::nvrtc::{self, compile};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::source::{write_headers, KernelSource};
use crate::engine_gpu::normalize::source::{NormOp, NormSpec, NORMALIZE_CUH};
use typestate_tensor::element::DType;

const DTYPES: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];

/// Every form a launch can pick for `dtype`: vector width 1 or 16 bytes' worth; 1 to 8
/// register chunks with a warp or a block per row; the re-reading form (block only).
fn specs(op: NormOp, dtype: DType) -> Vec<NormSpec> {
    let vmax = (16 / dtype.size_in_bytes()) as u8;
    let mut out = Vec::new();
    for vec in [1, vmax] {
        for chunks in [1u8, 2, 4, 8] {
            for warp in [true, false] {
                out.push(NormSpec::for_dtype(op, dtype, vec, chunks, warp));
            }
        }
        out.push(NormSpec::for_dtype(op, dtype, vec, 0, false));
    }
    out
}

/// Every op at every type in every form, as PTX in one program per op; one form per op and
/// type once more as `sm_90` CUBIN (through ptxas: registers and shared memory).
#[test]
fn every_normalize_kernel_compiles() {
    if !nvrtc::available() {
        println!("skipped: NVRTC not found (run scripts/install-nvrtc.sh, set LD_LIBRARY_PATH)");
        return;
    }
    for op in NormOp::ALL {
        let mut src = String::new();
        write_headers(&mut src, NORMALIZE_CUH);
        let mut all = Vec::new();
        for dtype in DTYPES {
            for spec in specs(op, dtype) {
                src.push_str(&spec.tail());
                all.push(spec);
            }
        }
        if let Err(e) = compile("normalize_batch", &src, Target::Ptx("compute_90"), &OPTIONS) {
            for spec in &all {
                if let Err(e) = compile(
                    &spec.entry_name(),
                    &spec.source(),
                    Target::Ptx("compute_90"),
                    &OPTIONS,
                ) {
                    panic!("{}: {e}", spec.entry_name());
                }
            }
            panic!("{op:?}: the batch failed, every spec alone compiled: {e}");
        }
        for dtype in DTYPES {
            let vmax = (16 / dtype.size_in_bytes()) as u8;
            for spec in [
                NormSpec::for_dtype(op, dtype, vmax, 8, true),
                NormSpec::for_dtype(op, dtype, vmax, 8, false),
            ] {
                let r = compile(
                    &spec.entry_name(),
                    &spec.source(),
                    Target::Cubin("sm_90"),
                    &OPTIONS,
                );
                assert!(r.is_ok(), "{}: {:?}", spec.entry_name(), r.err());
            }
        }
    }
}

#[test]
fn entry_names_name_every_part_of_the_spec() {
    let s = NormSpec::for_dtype(NormOp::Softmax, DType::BF16, 8, 2, false);
    assert_eq!(s.entry_name(), "ts_norm_softmax__bf16__v8_c2_b");
    assert!(s.tail().contains("ts_normalize<0, ts_bf16, 8, 2, false>"));
}
