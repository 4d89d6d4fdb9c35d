//! A fused launch's plan signature: everything its kernel, form, grid and packed arguments
//! depend on, as words for the per-thread plan cache (`engine_gpu::kernel::launch`).
//!
//! The program's structure (every instruction with its op, argument types and scalar slots,
//! the leaves' and scalars' element types, the results, the outputs read in place), and per
//! operand its element type, its view over the output shape and its address modulo 16. Not
//! in it: the addresses themselves and the scalars' values, which each launch patches in.
//! The words start with [`FUSED_TAG`], which no eager signature starts with (those start
//! with a device ordinal).

use crate::element::DType;
use crate::layout::Layout;
use crate::runtime::Gpu;
use crate::tensor::expr::inline::InlineList;
use crate::tensor::expr::program::{Instr, Program};

/// The first word of every fused signature.
const FUSED_TAG: u64 = u64::MAX;

fn dtype(t: DType) -> u64 {
    t as u64
}

fn text(words: &mut Vec<u64>, s: &'static str) {
    // A `&'static str` of the op table: equal address and length means equal text.
    words.push(s.as_ptr() as usize as u64);
    words.push(s.len() as u64);
}

/// Writes the signature of launching `program` on device `ordinal` over `layouts` (outputs
/// then inputs, all over the output shape), of element types `dtypes`, at addresses `ptrs`,
/// into `words` (cleared first).
pub(crate) fn write<const N: usize>(
    words: &mut Vec<u64>,
    ordinal: usize,
    program: &Program<'_, Gpu>,
    layouts: &InlineList<Layout, N>,
    dtypes: &[DType],
    ptrs: &[u64],
    n_out: usize,
) {
    words.clear();
    words.extend([
        FUSED_TAG,
        ordinal as u64,
        layouts.len() as u64,
        n_out as u64,
    ]);
    words.push(program.leaves.len() as u64);
    words.extend(program.leaves.iter().map(|l| dtype(l.dtype)));
    words.push(program.scalars.len() as u64);
    words.extend(program.scalars.iter().map(|s| dtype(s.dtype)));
    words.push(program.instrs.len() as u64);
    for i in &program.instrs {
        match i {
            Instr::Leaf { leaf } => words.extend([1, *leaf as u64]),
            Instr::Scalar { slot } => words.extend([2, *slot as u64]),
            Instr::Op {
                name,
                cuda,
                args,
                params,
                out,
            } => {
                words.push(3);
                text(words, name);
                text(words, cuda);
                words.push(args.len() as u64);
                for &(a, t) in args.iter() {
                    words.extend([a as u64, dtype(t)]);
                }
                match params {
                    Some([p, q]) => words.extend([1, *p as u64, *q as u64]),
                    None => words.push(0),
                }
                words.push(dtype(*out));
            }
            Instr::Current { output } => words.extend([4, *output as u64]),
            Instr::Cast { arg, from, to } => {
                words.extend([5, *arg as u64, dtype(*from), dtype(*to)])
            }
            Instr::Row {
                arg,
                kind,
                dim_from_end,
                len,
                param,
            } => words.extend([
                6,
                *arg as u64,
                *kind as u64,
                *dim_from_end as u64,
                *len as u64,
                param.to_bits(),
            ]),
        }
    }
    words.push(program.results.len() as u64);
    words.extend(program.results.iter().map(|&r| r as u64));
    words.push(program.currents.len() as u64);
    for &(o, t) in &program.currents {
        words.extend([o as u64, dtype(t)]);
    }
    if let Some(first) = layouts.first() {
        words.push(first.rank() as u64);
        words.extend(first.shape().iter().map(|&n| n as u64));
    }
    for ((layout, &t), &ptr) in layouts.iter().zip(dtypes).zip(ptrs) {
        words.extend([dtype(t), ptr % 16, layout.offset() as u64]);
        words.extend(layout.strides().iter().map(|&s| s as u64));
    }
}
