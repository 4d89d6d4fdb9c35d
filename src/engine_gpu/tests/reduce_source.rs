//! Every reduction kernel source through NVRTC (no GPU needed).
use crate::engine_gpu::compile::arch::Target;
use crate::engine_gpu::compile::nvrtc::{self, compile};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::form::IndexWidth;
use crate::engine_gpu::reduce::plan::RedForm;
use crate::engine_gpu::reduce::source::{dtypes_of, headers, ReduceSpec};
use typestate_tensor::element::DType;
use typestate_tensor::ops::reduce::ReduceKind;

const KINDS: [ReduceKind; 9] = [
    ReduceKind::Sum,
    ReduceKind::Prod,
    ReduceKind::Mean,
    ReduceKind::Max,
    ReduceKind::Min,
    ReduceKind::ArgMax,
    ReduceKind::ArgMin,
    ReduceKind::SumAbs,
    ReduceKind::SumSq,
];

fn size_of(d: DType) -> usize {
    d.size_in_bytes()
}

/// The forms a launch of `kind` over `dtype` can take (the widest vectors the planner
/// picks, and the narrower ones).
fn forms(kind: ReduceKind, dtype: DType) -> Vec<RedForm> {
    let vec = (16 / size_of(dtype)) as u8;
    let spec = ReduceSpec::for_dtype(
        kind,
        dtype,
        RedForm::Row {
            contig: false,
            vec: 1,
        },
        1,
        1,
        IndexWidth::Bits32,
    )
    .expect("a supported type");
    let max_ovec = (16 / size_of(dtype)).min(64 / usize::from(spec.acc_size)) as u8;
    let mut f = vec![
        RedForm::Row { contig: true, vec },
        RedForm::Row {
            contig: false,
            vec: 1,
        },
        RedForm::Col {
            ovec: 1,
            from_acc: true,
        },
    ];
    let mut o = max_ovec;
    while o >= 1 {
        f.push(RedForm::Col {
            ovec: o,
            from_acc: false,
        });
        o /= 2;
    }
    f
}

/// Every op at every type it takes, in every form, at 32 bits with 1-dim calculators and
/// at 64 bits with 2- and 4-dim ones, as PTX in one program per op; each form once more as `sm_90`
/// CUBIN (through ptxas: registers and the 32 KiB of static shared memory).
#[test]
fn every_reduction_kernel_compiles() {
    if !nvrtc::available() {
        println!("skipped: NVRTC not found (run scripts/install-nvrtc.sh, set LD_LIBRARY_PATH)");
        return;
    }
    for kind in KINDS {
        let mut src = headers();
        let mut specs = Vec::new();
        for &dtype in dtypes_of(kind) {
            for form in forms(kind, dtype) {
                for (index, nk, nr) in [(IndexWidth::Bits32, 1, 1), (IndexWidth::Bits64, 2, 4)] {
                    {
                        let spec = ReduceSpec::for_dtype(kind, dtype, form, nk, nr, index).unwrap();
                        src.push_str(&format!(
                            "namespace ts_b{} {{\n{}}}\n",
                            specs.len(),
                            spec.tail()
                        ));
                        specs.push(spec);
                    }
                }
            }
        }
        if let Err(e) = compile("reduce_batch", &src, Target::Ptx("compute_90"), &OPTIONS) {
            // Name the failing spec with its own log.
            for spec in &specs {
                if let Err(e) = compile(
                    &spec.entry_name(),
                    &spec.source(),
                    Target::Ptx("compute_90"),
                    &OPTIONS,
                ) {
                    panic!("{}: {e}", spec.entry_name());
                }
            }
            panic!("{kind}: the batch failed, every spec alone compiled: {e}");
        }
    }
    for kind in KINDS {
        let dtype = dtypes_of(kind)[0];
        for form in forms(kind, dtype) {
            let spec = ReduceSpec::for_dtype(kind, dtype, form, 2, 1, IndexWidth::Bits64).unwrap();
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
