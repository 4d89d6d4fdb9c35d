//! Linear index to per-operand element offsets (THC's `OffsetInfo`, PyTorch's
//! `OffsetCalculator`).
//!
//! A pointwise kernel walks `0..numel` as a linear, row-major index over the (broadcast)
//! shape, and each operand reads or writes `base + sum(index[dim] * stride[dim])`. The
//! multi-index comes from dividing by each dim's size, innermost first, with an
//! [`IntDivider`] per size, so a thread spends multiplies, not divisions.
//!
//! The same calculator has two forms:
//! - [`OffsetCalculator::offsets`] on the host, computing with exactly the device's
//!   arithmetic (tests compare it with a plain multi-index walk).
//! - [`OffsetCalculator::kernel_param_bytes`], the byte image of the CUDA C struct in
//!   `kernels/offset_calculator.cuh`, passed by value to a kernel compiled for this rank.

// The host-side division and offsets mirror the kernels' (`kernels/*.cuh`) for the tests
// that check the two against each other and against plain arithmetic; the launches use
// only the constructors and the packed parameters.
#![cfg_attr(not(test), allow(dead_code))]

use crate::engine_gpu::int_divider::{IndexInt, IntDivider};
use crate::error::LayoutError;

/// CUDA C source of `OffsetCalculator<NDIMS, NARGS, index_t, offset_t>`
/// (`kernels/offset_calculator.cuh`). Place it after [`crate::int_divider::INT_DIVIDER_CUH`].
pub const OFFSET_CALCULATOR_CUH: &str = include_str!("../../kernels/offset_calculator.cuh");

/// Most dims a calculator takes (PyTorch's `MAX_DIMS`); keeps the kernel parameter block
/// well under the 4 KiB parameter limit for every index width and operand count used.
pub const MAX_DIMS: usize = 25;

const OP: &str = "OffsetCalculator::new";

/// Maps a linear index over a shape to one element offset per operand.
///
/// `I` is the kernel's index width (`u32` or `u64`); offsets are `I::Offset` (`i32` or
/// `i64`) on the device and are returned as `i64` on the host. `NARGS >= 1` operands share
/// the shape, each with its own strides (in elements; negative and zero allowed).
///
/// Invariants:
/// - `1 <= ndims() <= MAX_DIMS`: rank 0 is stored as one dim of size 1.
/// - `numel()` (the product of the sizes) fits `I`; so does every size.
/// - A dim of size 0 is stored as size 1 (`numel()` is then 0 and no index maps).
/// - A dim of size 0 or 1 stores stride 0 for every operand: its index is always 0.
/// - For every operand, `sum(|stride[dim]| * (size[dim] - 1)) <= I::Offset::MAX`, so no
///   partial sum or product in [`offsets`](Self::offsets) or in the CUDA `get` overflows
///   `I::Offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCalculator<I: IndexInt, const NARGS: usize> {
    /// One divider per dim, outermost (dim 0) first.
    sizes: Vec<IntDivider<I>>,
    /// `strides[dim][operand]`.
    strides: Vec<[I::Offset; NARGS]>,
    numel: I,
}

impl<I: IndexInt, const NARGS: usize> OffsetCalculator<I, NARGS> {
    /// A calculator for `sizes` (outermost first) and each operand's `strides`.
    ///
    /// # Errors
    /// - [`LayoutError::RankTooLarge`] for more than [`MAX_DIMS`] dims.
    /// - [`LayoutError::StrideRankMismatch`] when an operand's strides are not one per dim.
    /// - [`LayoutError::SizeOverflow`] when the element count or a size does not fit `I`, or
    ///   an operand's farthest offset does not fit `I::Offset`.
    pub fn new(sizes: &[usize], strides: [&[isize]; NARGS]) -> Result<Self, LayoutError> {
        const { assert!(NARGS >= 1, "an OffsetCalculator needs at least one operand") };
        let rank = sizes.len();
        if rank > MAX_DIMS {
            return Err(LayoutError::RankTooLarge {
                op: OP,
                rank,
                max: MAX_DIMS,
            });
        }
        for (operand, s) in strides.iter().enumerate() {
            if s.len() != rank {
                return Err(LayoutError::StrideRankMismatch {
                    op: OP,
                    operand,
                    rank,
                    got: s.len(),
                });
            }
        }
        let overflow = |what| LayoutError::SizeOverflow {
            op: OP,
            shape: sizes.to_vec(),
            what,
        };
        let numel = element_count(sizes)
            .and_then(I::from_u64)
            .ok_or_else(|| overflow("element count does not fit the index type"))?;
        let offset_max = offset_max::<I>();
        let mut reach = [0u128; NARGS];
        let mut dividers = Vec::with_capacity(rank.max(1));
        let mut dim_strides = Vec::with_capacity(rank.max(1));
        for (dim, &size) in sizes.iter().enumerate() {
            let size_i = u64::try_from(size)
                .ok()
                .and_then(I::from_u64)
                .ok_or_else(|| overflow("a size does not fit the index type"))?;
            let divider = IntDivider::new(size_i).unwrap_or_else(IntDivider::one);
            let mut row = [I::Offset::default(); NARGS];
            if size > 1 {
                // usize -> u128 is lossless.
                let last = (size - 1) as u128;
                for (operand, s) in strides.iter().enumerate() {
                    let stride = s[dim];
                    reach[operand] = (stride.unsigned_abs() as u128)
                        .checked_mul(last)
                        .and_then(|r| r.checked_add(reach[operand]))
                        .filter(|&r| r <= offset_max)
                        .ok_or_else(|| {
                            overflow("an element offset does not fit the offset type")
                        })?;
                    // |stride| <= reach <= offset_max, so it converts.
                    row[operand] = i64::try_from(stride)
                        .ok()
                        .and_then(|s| I::Offset::try_from(s).ok())
                        .ok_or_else(|| overflow("a stride does not fit the offset type"))?;
                }
            }
            dividers.push(divider);
            dim_strides.push(row);
        }
        if rank == 0 {
            dividers.push(IntDivider::one());
            dim_strides.push([I::Offset::default(); NARGS]);
        }
        Ok(Self {
            sizes: dividers,
            strides: dim_strides,
            numel,
        })
    }

    /// Dims as the kernel sees them (the `NDIMS` template argument): at least 1.
    pub fn ndims(&self) -> usize {
        self.sizes.len()
    }

    /// Number of linear indices that map (the product of the sizes).
    pub fn numel(&self) -> I {
        self.numel
    }

    /// The stored strides, `strides()[dim][operand]` (0 for dims of size 0 or 1).
    pub fn strides(&self) -> &[[I::Offset; NARGS]] {
        &self.strides
    }

    /// The element offset of each operand for `linear`, or `None` when `linear >= numel()`.
    ///
    /// Computes exactly as the CUDA `get` does: innermost dim first, `divmod` by each size,
    /// the quotient left after dim 1 is the index along dim 0, accumulating
    /// `(offset_t)r * stride` in `I::Offset` arithmetic.
    pub fn offsets(&self, linear: I) -> Option<[i64; NARGS]> {
        if linear >= self.numel {
            return None;
        }
        let mut out = [I::Offset::default(); NARGS];
        let mut rest = linear;
        for dim in (1..self.sizes.len()).rev() {
            let (q, r) = self.sizes[dim].divmod(rest);
            rest = q;
            for (acc, &stride) in out.iter_mut().zip(&self.strides[dim]) {
                *acc = I::mul_add_offset(*acc, r, stride);
            }
        }
        for (acc, &stride) in out.iter_mut().zip(&self.strides[0]) {
            *acc = I::mul_add_offset(*acc, rest, stride);
        }
        Some(out.map(Into::into))
    }

    /// The CUDA type this calculator's bytes are an image of, e.g.
    /// `OffsetCalculator<3, 2, unsigned int, int>`.
    pub fn cuda_type(&self) -> String {
        format!(
            "OffsetCalculator<{}, {}, {}, {}>",
            self.ndims(),
            NARGS,
            I::CUDA_NAME,
            I::CUDA_OFFSET_NAME
        )
    }

    /// Alignment of the CUDA struct in bytes: the larger of `alignof(index_t)` and
    /// `alignof(offset_t)`.
    pub fn kernel_param_align(&self) -> usize {
        IntDivider::<I>::KERNEL_PARAM_ALIGN.max(std::mem::align_of::<I::Offset>())
    }

    /// Size of the CUDA struct in bytes (`sizeof`), equal to `kernel_param_bytes().len()`.
    pub fn kernel_param_size(&self) -> usize {
        let dividers = self.ndims() * IntDivider::<I>::KERNEL_PARAM_SIZE;
        let strides_at = dividers.next_multiple_of(std::mem::align_of::<I::Offset>());
        let end = strides_at + self.ndims() * NARGS * std::mem::size_of::<I::Offset>();
        end.next_multiple_of(self.kernel_param_align())
    }

    /// The byte image of the CUDA struct `OffsetCalculator<NDIMS, NARGS, index_t, offset_t>`
    /// ([`cuda_type`](Self::cuda_type)), to pass by value as a kernel parameter.
    ///
    /// Field by field, little-endian (the device's byte order), C layout rules:
    /// 1. `IntDivider<index_t> sizes[NDIMS]`: for dim 0 (outermost) to `NDIMS - 1`, the
    ///    divider's `divisor`, `magic`, `shift`, each `sizeof(index_t)` bytes.
    /// 2. Zero padding up to `alignof(offset_t)` (none for `u32`/`i32` and `u64`/`i64`).
    /// 3. `offset_t strides[NDIMS][NARGS]`: dim-major, operand-minor, each
    ///    `sizeof(offset_t)` bytes.
    /// 4. Zero padding up to [`kernel_param_align`](Self::kernel_param_align) (none for the
    ///    pairs above).
    ///
    /// With the driver API, pass a pointer to these bytes in `cuLaunchKernel`'s parameter
    /// array; the driver copies [`kernel_param_size`](Self::kernel_param_size) bytes.
    pub fn kernel_param_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.kernel_param_size());
        for divider in &self.sizes {
            divider.extend_kernel_param_bytes(&mut out);
        }
        pad_to(&mut out, std::mem::align_of::<I::Offset>());
        for row in &self.strides {
            for &stride in row {
                I::extend_offset_le_bytes(stride, &mut out);
            }
        }
        pad_to(&mut out, self.kernel_param_align());
        out
    }
}

/// Product of `sizes` as `u64`: 0 when any size is 0 (even if the others overflow), `None`
/// on overflow.
fn element_count(sizes: &[usize]) -> Option<u64> {
    if sizes.contains(&0) {
        return Some(0);
    }
    sizes
        .iter()
        .try_fold(1u64, |acc, &s| acc.checked_mul(u64::try_from(s).ok()?))
}

/// `I::Offset::MAX` as `u128`.
fn offset_max<I: IndexInt>() -> u128 {
    // The signed type of width BITS has max 2^(BITS-1) - 1.
    (1u128 << (I::BITS - 1)) - 1
}

fn pad_to(out: &mut Vec<u8>, align: usize) {
    out.resize(out.len().next_multiple_of(align), 0);
}
