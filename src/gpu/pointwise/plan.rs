//! Launch planning, pure host logic: which kernel form a launch takes, its index width, its
//! vector width and its grid. Nothing here touches a GPU, so it is unit-tested everywhere.
//!
//! - **Index width**: 32-bit index math when the element count and every operand's farthest
//!   offset ([`CollapsedLayout::max_extent`]) fit in `i32`, else 64-bit. A 32-bit launch also
//!   keeps its grid-stride step below 2^31, so `index + step` never wraps in `unsigned int`.
//! - **Form**: contiguous (no index math) when the collapsed layout is one dense run in every
//!   operand, else strided with an `OffsetCalculator` of the collapsed rank.
//! - **Vector width**: for a contiguous launch, `16 / (widest element size)` elements per
//!   load when every operand's first element is aligned to the vector's bytes, halved until it
//!   is (PyTorch's `can_vectorize_up_to`), and 1 for launches too small to fill one vector per
//!   thread of one block.

use std::fmt;

use crate::layout::CollapsedLayout;

/// Threads per block of every pointwise kernel (the generated `__launch_bounds__`).
pub const BLOCK: u32 = 256;
/// Elements each thread handles per grid-stride step in the scalar forms.
pub const SCALAR_WORK: u32 = 4;
/// Vectors each thread handles per grid-stride step in the vectorised form.
pub const VECTOR_WORK: u32 = 2;
/// Bytes of the widest operand moved by one vector load or store.
pub const VECTOR_BYTES: usize = 16;

/// Width of a kernel's index math.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexWidth {
    /// `unsigned int` indices, `int` offsets.
    Bits32,
    /// `unsigned long long` indices, `long long` offsets.
    Bits64,
}

impl IndexWidth {
    /// The narrowest width that is exact for `numel` elements whose farthest offset from each
    /// operand's first element is `max_extent` elements.
    pub fn for_extent(numel: usize, max_extent: usize) -> Self {
        const LIMIT: usize = i32::MAX as usize;
        if numel <= LIMIT && max_extent <= LIMIT {
            IndexWidth::Bits32
        } else {
            IndexWidth::Bits64
        }
    }

    /// The CUDA index and offset types.
    pub fn cuda_types(self) -> (&'static str, &'static str) {
        match self {
            IndexWidth::Bits32 => ("unsigned int", "int"),
            IndexWidth::Bits64 => ("unsigned long long", "long long"),
        }
    }
}

impl fmt::Display for IndexWidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IndexWidth::Bits32 => "i32",
            IndexWidth::Bits64 => "i64",
        })
    }
}

/// The kernel form of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// Every operand one dense run; `vec` elements per load (1: no vector loads).
    Contiguous {
        /// Elements per vector load/store (a power of two, at most 16).
        vec: u8,
    },
    /// Any strides, through an `OffsetCalculator` of `rank` dims.
    Strided {
        /// The collapsed rank (1 to [`crate::offset_calculator::MAX_DIMS`]).
        rank: u8,
    },
}

impl Form {
    /// Elements (or vectors) per thread per grid-stride step, as the kernel template has it.
    pub fn work_per_thread(self) -> u32 {
        match self {
            Form::Contiguous { vec } if vec > 1 => VECTOR_WORK,
            _ => SCALAR_WORK,
        }
    }

    /// Elements one unit of work covers (the vector width; 1 for the scalar forms).
    pub fn elements_per_unit(self) -> usize {
        match self {
            Form::Contiguous { vec } => usize::from(vec),
            Form::Strided { .. } => 1,
        }
    }
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Form::Contiguous { vec: 1 } => f.write_str("contig"),
            Form::Contiguous { vec } => write!(f, "vec{vec}"),
            Form::Strided { rank } => write!(f, "strided{rank}"),
        }
    }
}

/// The form and index width of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The kernel form.
    pub form: Form,
    /// The index width.
    pub index: IndexWidth,
}

/// Plans a launch over `layout` (operand 0 the output), whose operands have elements of
/// `sizes[k]` bytes and first elements at device addresses `addrs[k]`.
///
/// Precondition: `layout.rank() <= u8::MAX` (collapsed layouts have at most
/// [`crate::layout::MAX_DIMS`] dims). A larger rank is reported as `u8::MAX`, which the
/// offset calculator then rejects with a typed error.
pub fn plan<const N: usize>(
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    addrs: [u64; N],
) -> Plan {
    let numel = layout.numel();
    let index = IndexWidth::for_extent(numel, layout.max_extent());
    let form = if layout.is_contiguous() {
        Form::Contiguous {
            vec: vector_width(numel, sizes, addrs),
        }
    } else {
        Form::Strided {
            rank: u8::try_from(layout.rank()).unwrap_or(u8::MAX),
        }
    };
    Plan { form, index }
}

/// Elements per vector load/store for a contiguous launch: the largest power of two
/// `v <= 16 / max(sizes)` such that every `addrs[k]` is a multiple of `v * sizes[k]`, or 1
/// when there are fewer than `v * BLOCK` elements (one vector per thread of one block).
pub fn vector_width<const N: usize>(numel: usize, sizes: [usize; N], addrs: [u64; N]) -> u8 {
    let widest = sizes.iter().copied().max().unwrap_or(1).max(1);
    let mut vec = VECTOR_BYTES / widest;
    while vec > 1 {
        let aligned = sizes
            .iter()
            .zip(&addrs)
            .all(|(&size, &addr)| addr % (vec * size) as u64 == 0);
        if aligned && numel >= vec * BLOCK as usize {
            // vec <= 16, so it fits.
            return vec as u8;
        }
        vec /= 2;
    }
    1
}

/// Blocks to launch for `numel` elements in `form`: enough for one step of every thread,
/// at most `max_blocks` (a full device of resident blocks; the loop strides over the rest),
/// at least 1. For 32-bit index math the grid-stride step `blocks * BLOCK * work` also stays
/// at most 2^31, so that `index + step` cannot wrap in 32 bits (the plan guarantees
/// `numel <= 2^31 - 1`).
pub fn grid_size(numel: usize, form: Form, index: IndexWidth, max_blocks: u32) -> u32 {
    let units = numel / form.elements_per_unit();
    let per_block = (BLOCK * form.work_per_thread()) as usize;
    let needed = units.div_ceil(per_block).max(1);
    let mut cap = max_blocks.max(1);
    if index == IndexWidth::Bits32 {
        cap = cap.min((1u32 << 31) / (BLOCK * form.work_per_thread()));
    }
    u32::try_from(needed).map_or(cap, |n| n.min(cap))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{collapse, Layout};

    #[test]
    fn index_width_switches_at_i32_max() {
        let limit = i32::MAX as usize;
        assert_eq!(IndexWidth::for_extent(limit, limit), IndexWidth::Bits32);
        assert_eq!(IndexWidth::for_extent(limit + 1, 0), IndexWidth::Bits64);
        assert_eq!(IndexWidth::for_extent(16, limit + 1), IndexWidth::Bits64);
    }

    #[test]
    fn transposed_input_plans_strided_rank_two() {
        let out = Layout::contiguous(&[64, 32]).unwrap();
        let a = Layout::contiguous(&[32, 64]).unwrap().t();
        let c = collapse([&out, &a]);
        let p = plan(&c, [4, 4], [0, 0]);
        assert_eq!(p.form, Form::Strided { rank: 2 });
        assert_eq!(p.index, IndexWidth::Bits32);
    }

    #[test]
    fn large_extent_plans_64_bit() {
        // 3 x 2 elements, but the rows are 2^31 elements apart.
        let big = 1isize << 31;
        let out = Layout::contiguous(&[3, 2]).unwrap();
        let a = Layout::new(&[3, 2], &[big, 1], 0).unwrap();
        let p = plan(&collapse([&out, &a]), [1, 1], [0, 0]);
        assert_eq!(p.form, Form::Strided { rank: 2 });
        assert_eq!(p.index, IndexWidth::Bits64);
    }

    #[test]
    fn contiguous_vector_width_follows_alignment_and_widest_type() {
        let n = 1 << 20;
        assert_eq!(vector_width(n, [4, 4, 4], [0, 256, 4096]), 4);
        assert_eq!(vector_width(n, [2, 2], [0, 16]), 8);
        assert_eq!(vector_width(n, [1, 1], [0, 0]), 16);
        // A bool output of f32 inputs: 4 lanes, the bool side moves 4 bytes.
        assert_eq!(vector_width(n, [1, 4, 4], [4, 16, 32]), 4);
        // One input only 8-byte aligned: halve to 2 floats.
        assert_eq!(vector_width(n, [4, 4], [0, 8]), 2);
        // Not even 8-byte aligned: scalar.
        assert_eq!(vector_width(n, [4, 4], [0, 4]), 1);
        // f64 and i64: 2 per 16 bytes.
        assert_eq!(vector_width(n, [8, 8], [16, 32]), 2);
        // Too small to fill a block with vectors.
        assert_eq!(vector_width(4 * 256 - 1, [4, 4], [0, 0]), 2);
        assert_eq!(vector_width(2 * 256 - 1, [4, 4], [0, 0]), 1);
    }

    #[test]
    fn grid_covers_the_work_up_to_the_device() {
        let f = Form::Contiguous { vec: 1 };
        assert_eq!(grid_size(0, f, IndexWidth::Bits32, 1000), 1);
        assert_eq!(grid_size(1024, f, IndexWidth::Bits32, 1000), 1);
        assert_eq!(grid_size(1025, f, IndexWidth::Bits32, 1000), 2);
        assert_eq!(grid_size(1 << 30, f, IndexWidth::Bits32, 1056), 1056);
        let v = Form::Contiguous { vec: 4 };
        // 4 elements per vector, 2 vectors per thread: 2048 elements per block step.
        assert_eq!(grid_size(2048 * 3, v, IndexWidth::Bits32, 1000), 3);
        // A huge device cannot push a 32-bit step past 2^31.
        let g = grid_size(usize::MAX / 2, f, IndexWidth::Bits32, u32::MAX);
        assert!(u64::from(g) * u64::from(BLOCK * SCALAR_WORK) <= 1 << 31);
        assert_eq!(
            grid_size(usize::MAX / 2, f, IndexWidth::Bits64, u32::MAX),
            u32::MAX
        );
    }
}
