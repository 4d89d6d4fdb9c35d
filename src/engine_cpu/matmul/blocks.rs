//! Blocks of rows computed in parallel, then stored: the `bf16` and integer paths.

use rayon::prelude::*;

use super::mat::Mat;
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::vec_with_capacity;

/// Rows `start..end` of the product.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Block {
    pub(crate) fn rows(&self) -> usize {
        self.end - self.start
    }
}

/// Fewest rows a thread is given: below this a block's setup outweighs its work.
const MIN_ROWS: usize = 8;

/// Splits the `m` rows of `c` into one block per thread of rayon's pool (at least
/// [`MIN_ROWS`] rows each) and runs `f` on each in parallel. `f(block, old, res)` appends the
/// block's final values, row-major (`rows × n`), to `res`; `old` is the destination's storage
/// as it was (read only where `beta != 0`). The values are then stored through `c` in one
/// sequential pass: the destination's layout may interleave rows in any order, so no thread
/// writes into it.
pub(crate) fn for_row_blocks<T: Element>(
    out: &mut [T],
    c: Mat,
    m: usize,
    n: usize,
    f: impl Fn(Block, &[T], &mut Vec<T>) -> Result<()> + Sync,
) -> Result<()> {
    let threads = rayon::current_num_threads().max(1);
    let rows = m.div_ceil(threads).max(MIN_ROWS);
    let blocks: Vec<Block> = (0..m)
        .step_by(rows)
        .map(|start| Block {
            start,
            end: (start + rows).min(m),
        })
        .collect();
    let old: &[T] = out;
    let run = |blk: &Block| -> Result<Vec<T>> {
        let mut res = vec_with_capacity(blk.rows() * n)?;
        f(*blk, old, &mut res)?;
        Ok(res)
    };
    let results: Vec<Result<Vec<T>>> = if blocks.len() > 1 {
        blocks.par_iter().map(run).collect()
    } else {
        blocks.iter().map(run).collect()
    };
    for (blk, res) in blocks.iter().zip(results) {
        let res = res?;
        for (r, row) in res.chunks_exact(n.max(1)).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                out[c.at(blk.start + r, j)] = v;
            }
        }
    }
    Ok(())
}
