//! What the row kernels share (`kernels/normalize.cuh`): the eager statistics and
//! normalisations (`normalize/`) and the fused expressions' row stages (`fused/rows.rs`) run
//! a warp or a block per row with the row in registers, and pick that form here.

/// `kernels/normalize.cuh`: the row kernels.
pub const NORMALIZE_CUH: &str = include_str!("../../../kernels/normalize.cuh");

/// Threads per block of every normalisation launch (`TS_NORM_THREADS`).
pub const THREADS: u32 = 256;

/// Most chunks of `VEC` elements a thread holds in registers (`CHUNKS`); longer rows take the
/// re-reading form (`CHUNKS == 0`).
pub const MAX_CHUNKS: u8 = 8;

/// The form of a launch over rows of `n` elements of `size` bytes: `(vec, chunks, warp)`.
pub fn form(n: usize, size: usize, vectorised: bool) -> (u8, u8, bool) {
    let vec = if vectorised { 16 / size } else { 1 };
    let chunks_of = |per: usize| n.div_ceil(per).max(1).next_power_of_two();
    let warp = chunks_of(32 * vec);
    if warp <= usize::from(MAX_CHUNKS) {
        // At most 8: fits a u8.
        return (vec as u8, warp as u8, true);
    }
    let block = chunks_of(THREADS as usize * vec);
    let chunks = if block <= usize::from(MAX_CHUNKS) {
        block as u8
    } else {
        0
    };
    (vec as u8, chunks, false)
}

#[cfg(test)]
mod tests {
    use super::form;

    #[test]
    fn forms_hold_rows_in_registers() {
        // 1024 f32 contiguous: a warp, 8 chunks of 4.
        assert_eq!(form(1024, 4, true), (4, 8, true));
        // 4096 f32: a block, 4 chunks of 4 per thread.
        assert_eq!(form(4096, 4, true), (4, 4, false));
        // 4096 bf16: a block, 2 chunks of 8.
        assert_eq!(form(4096, 2, true), (8, 2, false));
        // Strided 100 f32: a warp, 4 chunks of 1.
        assert_eq!(form(100, 4, false), (1, 4, true));
        // Too long for a block's registers: the re-reading form.
        assert_eq!(form(100_000, 4, true), (4, 0, false));
        assert_eq!(form(0, 8, false), (1, 1, true));
    }
}
