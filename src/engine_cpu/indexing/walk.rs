//! A row-major walk over a shape that carries the storage offsets of several strided
//! operands at once (the indexing ops' loops).

use crate::layout::{Layout, MAX_DIMS};

/// One operand of a walk: where it starts and how far each dim moves it.
#[derive(Clone)]
pub struct Operand {
    /// The storage offset of position 0.
    pub base: isize,
    /// The stride of each dim (0 where the operand does not move).
    pub strides: [isize; MAX_DIMS],
}

impl Operand {
    /// The operand of `layout` (its rank at most [`MAX_DIMS`], as every layout's).
    pub fn of(layout: &Layout) -> Self {
        let mut strides = [0; MAX_DIMS];
        for (s, &l) in strides.iter_mut().zip(layout.strides()) {
            *s = l;
        }
        Operand {
            base: layout.offset() as isize,
            strides,
        }
    }

    /// An operand that stays at offset 0.
    pub fn zero(_rank: usize) -> Self {
        Operand {
            base: 0,
            strides: [0; MAX_DIMS],
        }
    }
}

/// Calls `f` with the offsets of the `N` operands at every position of `shape`, in
/// row-major order (never for an empty shape; once for a 0-d one). Each operand's offsets
/// are those of a valid layout of `shape` (or, for the stride-0 dims a caller zeroed, of
/// its own layout at position 0 there), so they are non-negative.
pub fn for_each<const N: usize>(shape: &[usize], ops: [Operand; N], mut f: impl FnMut([usize; N])) {
    if shape.contains(&0) {
        return;
    }
    let rank = shape.len();
    let mut pos = [0usize; MAX_DIMS];
    let mut off: [isize; N] = std::array::from_fn(|k| ops[k].base);
    if rank == 0 {
        f(off.map(|o| o as usize));
        return;
    }
    let last = rank - 1;
    let inner: [isize; N] = std::array::from_fn(|k| ops[k].strides[last]);
    loop {
        let mut o = off;
        for _ in 0..shape[last] {
            f(o.map(|x| x as usize));
            for k in 0..N {
                o[k] += inner[k];
            }
        }
        // Carry into the outer dims.
        let mut d = last;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            pos[d] += 1;
            for k in 0..N {
                off[k] += ops[k].strides[d];
            }
            if pos[d] < shape[d] {
                break;
            }
            for k in 0..N {
                off[k] -= ops[k].strides[d] * shape[d] as isize;
            }
            pos[d] = 0;
        }
    }
}
