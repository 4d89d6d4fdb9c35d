//! Every indexing kernel source through NVRTC (no GPU needed): the gather and the five
//! scatter forms at every element type each takes, with `i32` and `i64` indices, at 32 bits
//! with 1-dim calculators and 64 bits with 4-dim ones, as PTX for `compute_90` and
//! `compute_75` (the 16-bit CAS path and the 64-bit atomics on an older target), and once as
//! `sm_90` CUBIN.
use crate::engine_gpu::compile::arch::Target;
use crate::engine_gpu::compile::nvrtc::{self, compile};
use crate::engine_gpu::indexing::source::{IndexKind, IndexSpec, INDEXING_CUH};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::form::IndexWidth;
use crate::engine_gpu::kernel::source::{write_headers, KernelSource, Operand};
use typestate_tensor::element::DType;

/// The types the GPU scatters with a reduction (`engine_gpu/indexing/mod.rs`).
const REDUCING: [DType; 8] = [
    DType::F32,
    DType::F64,
    DType::F16,
    DType::BF16,
    DType::I32,
    DType::I64,
    DType::U32,
    DType::U64,
];

fn specs() -> Vec<IndexSpec> {
    let mut out = Vec::new();
    let mut kinds = vec![IndexKind::Gather, IndexKind::Scatter(0), IndexKind::Check];
    kinds.extend((1..=4).map(IndexKind::Scatter));
    for kind in kinds {
        let types: &[DType] = match kind {
            IndexKind::Scatter(k) if k > 0 => &REDUCING,
            // The check reads only the index: one element type stands for all.
            IndexKind::Check => &[DType::I64],
            _ => &DType::ALL,
        };
        for &t in types {
            for index in [DType::I32, DType::I64] {
                for (width, dims) in [(IndexWidth::Bits32, 1), (IndexWidth::Bits64, 4)] {
                    let size = t.size_in_bytes() as u8;
                    // Gathers also move words of 4, 8 and 16 bytes (`Words::widen`).
                    let units: &[u8] = match kind {
                        IndexKind::Gather => &[4, 8, 16],
                        IndexKind::Scatter(_) | IndexKind::Check => &[],
                    };
                    for &unit in std::iter::once(&size).chain(units.iter().filter(|&&u| u > size)) {
                        out.push(IndexSpec {
                            kind,
                            elem: Operand::from_dtype(t),
                            index_type: Operand::from_dtype(index),
                            dims,
                            width,
                            unit,
                        });
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_indexing_kernel_compiles() {
    if !nvrtc::available() {
        println!("skipped: NVRTC not found (run scripts/install-nvrtc.sh, set LD_LIBRARY_PATH)");
        return;
    }
    let specs = specs();
    let mut src = String::new();
    write_headers(&mut src, INDEXING_CUH);
    for (k, spec) in specs.iter().enumerate() {
        src.push_str(&format!("namespace ts_b{k} {{\n{}}}\n", spec.tail()));
    }
    for arch in ["compute_90", "compute_75"] {
        if let Err(e) = compile("indexing_batch", &src, Target::Ptx(arch), &OPTIONS) {
            for spec in &specs {
                if let Err(e) = compile(
                    &spec.entry_name(),
                    &spec.source(),
                    Target::Ptx(arch),
                    &OPTIONS,
                ) {
                    panic!("{} ({arch}): {e}", spec.entry_name());
                }
            }
            panic!("the batch failed ({arch}), every spec alone compiled: {e}");
        }
    }
    for spec in specs
        .iter()
        .filter(|s| s.elem.dtype == DType::F16 || s.elem.dtype == DType::F32)
    {
        let r = compile(
            &spec.entry_name(),
            &spec.source(),
            Target::Cubin("sm_90"),
            &OPTIONS,
        );
        assert!(r.is_ok(), "{}: {:?}", spec.entry_name(), r.err());
    }
}

#[test]
fn entry_names_name_the_spec() {
    let s = IndexSpec {
        kind: IndexKind::Scatter(1),
        elem: Operand::of::<half::bf16>(),
        index_type: Operand::of::<i64>(),
        dims: 2,
        width: IndexWidth::Bits32,
        unit: 2,
    };
    assert_eq!(s.entry_name(), "ts_idx_scatter1__bf16_i64__n2_i32");
    let g = IndexSpec {
        kind: IndexKind::Gather,
        unit: 16,
        ..s
    };
    assert_eq!(g.entry_name(), "ts_idx_gather_u16__bf16_i64__n2_i32");
    assert!(g
        .source_text()
        .contains("ts_gather<uint4, long long, 2, unsigned int, int, true>"));
    assert!(s
        .source_text()
        .contains("ts_scatter<1, ts_bf16, long long, 2, unsigned int, int>"));
}
