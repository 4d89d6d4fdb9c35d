//! Every scan and sort kernel source through NVRTC (no GPU needed): each op and form at
//! every element type it takes, as PTX in one program per family (each spec's tail in its own
//! namespace), and each form once more as `sm_90` CUBIN (through ptxas: registers and the
//! static shared memory).
use crate::engine_gpu::compile::arch::Target;
use crate::engine_gpu::compile::nvrtc::{self, compile};
use crate::engine_gpu::kernel::cache::OPTIONS;
use crate::engine_gpu::kernel::source::write_headers;
use crate::engine_gpu::kernel::source::KernelSource;
use crate::engine_gpu::reduce::source::REDUCE_CUH;
use crate::engine_gpu::scan::source::{ScanForm, ScanKind, ScanSpec, SCAN_CUH};
use crate::engine_gpu::sort::source::{SortForm, SortSpec, RADIX_CUH, SORT_CUH};
use crate::ops::reduce::ReduceElement;
use half::{bf16, f16};

fn scan_specs_of<T: ReduceElement>(float: bool, out: &mut Vec<ScanSpec>) {
    for form in [ScanForm::Rows, ScanForm::Carry] {
        out.push(ScanSpec::of::<T, T::Sum>(ScanKind::Sum, form));
        out.push(ScanSpec::of::<T, T::Sum>(ScanKind::Prod, form));
        out.push(ScanSpec::of::<T, T>(ScanKind::Max, form));
        out.push(ScanSpec::of::<T, T>(ScanKind::Min, form));
        if float {
            out.push(ScanSpec::of::<T, T>(ScanKind::LogSumExp, form));
        }
    }
}

/// Every scan spec the engine can ask for.
fn scan_specs() -> Vec<ScanSpec> {
    let mut v = Vec::new();
    scan_specs_of::<f32>(true, &mut v);
    scan_specs_of::<f64>(true, &mut v);
    scan_specs_of::<f16>(true, &mut v);
    scan_specs_of::<bf16>(true, &mut v);
    scan_specs_of::<i8>(false, &mut v);
    scan_specs_of::<i16>(false, &mut v);
    scan_specs_of::<i32>(false, &mut v);
    scan_specs_of::<i64>(false, &mut v);
    scan_specs_of::<u8>(false, &mut v);
    scan_specs_of::<u16>(false, &mut v);
    scan_specs_of::<u32>(false, &mut v);
    scan_specs_of::<u64>(false, &mut v);
    scan_specs_of::<bool>(false, &mut v);
    v
}

fn sort_specs_of<T: crate::element::Element>(out: &mut Vec<SortSpec>) {
    for form in [
        SortForm::Rows,
        SortForm::Init,
        SortForm::Tiles,
        SortForm::Step,
        SortForm::Final,
        SortForm::Search,
        SortForm::Select,
        SortForm::RadixRows(4),
        SortForm::RadixRows(8),
        SortForm::RadixRows(16),
        SortForm::RadixHist,
        SortForm::RadixScan,
        SortForm::RadixScatter,
        SortForm::RadixFinal,
    ] {
        // Sixteen entries a thread only for keys up to 4 bytes (`radix_row_items`).
        if form == SortForm::RadixRows(16) && size_of::<T>() > 4 {
            continue;
        }
        out.push(SortSpec::of::<T>(form));
    }
}

/// Every sort spec the engine can ask for.
fn sort_specs() -> Vec<SortSpec> {
    let mut v = Vec::new();
    sort_specs_of::<f32>(&mut v);
    sort_specs_of::<f64>(&mut v);
    sort_specs_of::<f16>(&mut v);
    sort_specs_of::<bf16>(&mut v);
    sort_specs_of::<i8>(&mut v);
    sort_specs_of::<i16>(&mut v);
    sort_specs_of::<i32>(&mut v);
    sort_specs_of::<i64>(&mut v);
    sort_specs_of::<u8>(&mut v);
    sort_specs_of::<u16>(&mut v);
    sort_specs_of::<u32>(&mut v);
    sort_specs_of::<u64>(&mut v);
    sort_specs_of::<bool>(&mut v);
    v
}

/// Compiles `tails` after `headers` as one PTX program (each tail in a namespace), and on a
/// failure each spec alone, to name the failing one with its own log.
fn batch<S: KernelSource>(
    name: &str,
    headers: &str,
    specs: &[S],
    tail: impl Fn(&S, &mut String),
    entry: impl Fn(&S) -> String,
) {
    let mut src = headers.to_string();
    for (i, s) in specs.iter().enumerate() {
        src.push_str(&format!("namespace ts_b{i} {{\n"));
        tail(s, &mut src);
        src.push_str("}\n");
    }
    if let Err(e) = compile(name, &src, Target::Ptx("compute_90"), &OPTIONS) {
        for s in specs {
            if let Err(e) = compile(&entry(s), &s.source(), Target::Ptx("compute_90"), &OPTIONS) {
                panic!("{}: {e}", entry(s));
            }
        }
        panic!("{name}: the batch failed, every spec alone compiled: {e}");
    }
}

#[test]
fn every_scan_and_sort_kernel_compiles() {
    if !nvrtc::available() {
        println!("skipped: NVRTC not found (run scripts/install-nvrtc.sh, set LD_LIBRARY_PATH)");
        return;
    }
    let mut scan_headers = String::new();
    write_headers(&mut scan_headers, REDUCE_CUH);
    scan_headers.push_str(SCAN_CUH);
    scan_headers.push('\n');
    let scans = scan_specs();
    batch(
        "scan_batch",
        &scan_headers,
        &scans,
        ScanSpec::write_tail,
        ScanSpec::entry_name,
    );
    let mut sort_headers = String::new();
    write_headers(&mut sort_headers, REDUCE_CUH);
    sort_headers.push_str(SORT_CUH);
    sort_headers.push('\n');
    sort_headers.push_str(RADIX_CUH);
    sort_headers.push('\n');
    let sorts = sort_specs();
    batch(
        "sort_batch",
        &sort_headers,
        &sorts,
        SortSpec::write_tail,
        SortSpec::entry_name,
    );
    // Each form as CUBIN at the widest types (static shared memory, registers).
    for spec in scans.iter().filter(|s| s.input.dtype.size_in_bytes() == 8) {
        let r = compile(
            &spec.entry_name(),
            &spec.source(),
            Target::Cubin("sm_90"),
            &OPTIONS,
        );
        assert!(r.is_ok(), "{}: {:?}", spec.entry_name(), r.err());
    }
    for spec in sorts.iter().filter(|s| s.input.dtype.size_in_bytes() == 8) {
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
    assert_eq!(
        ScanSpec::of::<f16, f16>(ScanKind::Sum, ScanForm::Rows).entry_name(),
        "ts_scan_cumsum__f16_f16__rows"
    );
    assert_eq!(
        SortSpec::of::<u64>(SortForm::Step).entry_name(),
        "ts_sort_step__u64"
    );
    let src = ScanSpec::of::<i8, i8>(ScanKind::Max, ScanForm::Carry).source();
    assert!(src.contains("typedef ts_scan_extreme<signed char, signed char, true> ts_op;"));
}
