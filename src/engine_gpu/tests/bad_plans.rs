//! Layouts the GPU kernels cannot take, and offset calculators past their limits: typed
//! errors that name the fix, never a panic (pure host logic, no GPU needed).

use crate::engine_gpu::kernel::plan::plan_checked;
use crate::engine_gpu::offset_calculator::{OffsetCalculator, MAX_DIMS as GPU_MAX_DIMS};
use crate::error::{Error, LayoutError as LE};
use crate::layout::{collapse, Layout};

/// Two operands of rank `rank` whose dims no collapse can merge.
fn unmergeable(rank: usize) -> [Layout; 2] {
    let shape = vec![2; rank];
    let strides: Vec<isize> = (0..rank)
        .map(|d| if d % 2 == 0 { 1 << (d / 2) } else { 0 })
        .rev()
        .collect();
    [
        Layout::contiguous(&shape).unwrap(),
        Layout::new(&shape, &strides, 0).unwrap(),
    ]
}

fn message<T>(r: Result<T, impl Into<Error>>) -> (Error, String) {
    let e: Error = match r {
        Ok(_) => panic!("accepted what it must refuse"),
        Err(e) => e.into(),
    };
    let m = e.to_string();
    (e, m)
}

#[test]
fn plans_past_the_kernels_rank_are_refused_with_the_fix() {
    let [out, a] = unmergeable(GPU_MAX_DIMS + 2);
    let (e, m) = message(plan_checked("add", &collapse([&out, &a]), [4, 4], [0, 0]));
    assert!(
        matches!(
            e,
            Error::Layout(LE::GpuRankTooLarge {
                rank: 27,
                max: 25,
                ..
            })
        ),
        "{e:?}"
    );
    assert!(m.contains("rank 27 exceeds the GPU kernels' limit of 25 dims after collapsing; make the operands contiguous"), "{m}");
    let [out, a] = unmergeable(crate::layout::MAX_DIMS);
    let (e, m) = message(plan_checked("mul", &collapse([&out, &a]), [8, 8], [0, 0]));
    assert!(
        matches!(
            e,
            Error::Layout(LE::GpuRankTooLarge {
                op: "mul",
                rank: 32,
                ..
            })
        ),
        "{e:?}"
    );
    assert!(m.contains("or reshape them to fewer dims"), "{m}");
}

#[test]
fn plans_at_the_kernels_rank_are_accepted() {
    let [out, a] = unmergeable(GPU_MAX_DIMS);
    let p = plan_checked("add", &collapse([&out, &a]), [4, 4], [0, 0]).unwrap();
    assert_eq!(p.form.rank(), GPU_MAX_DIMS);
}

#[test]
fn offset_calculators_past_their_limits_are_refused() {
    let (e, m) = message(OffsetCalculator::<u64, 1>::new(&[1; 26], [&[0; 26]]));
    assert!(
        matches!(
            e,
            Error::Layout(LE::RankTooLarge {
                rank: 26,
                max: 25,
                ..
            })
        ),
        "{e:?}"
    );
    assert!(m.contains("rank 26 exceeds the maximum of 25"), "{m}");
    let (e, m) = message(OffsetCalculator::<u32, 2>::new(&[2, 3], [&[3, 1], &[1]]));
    assert!(
        matches!(
            e,
            Error::Layout(LE::StrideRankMismatch {
                operand: 1,
                rank: 2,
                got: 1,
                ..
            })
        ),
        "{e:?}"
    );
    assert!(
        m.contains("operand 1 has 1 strides for a shape of rank 2"),
        "{m}"
    );
    let (e, m) = message(OffsetCalculator::<u32, 1>::new(
        &[1 << 16, 1 << 16],
        [&[1 << 16, 1]],
    ));
    assert!(matches!(e, Error::Layout(LE::SizeOverflow { .. })), "{e:?}");
    assert!(
        m.contains("element count does not fit the index type"),
        "{m}"
    );
    let (e, m) = message(OffsetCalculator::<u32, 1>::new(&[3], [&[1 << 30]]));
    assert!(matches!(e, Error::Layout(LE::SizeOverflow { .. })), "{e:?}");
    assert!(m.contains("offset does not fit the offset type"), "{m}");
}
