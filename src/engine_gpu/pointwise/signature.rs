//! An eager launch's plan signature: everything its kernel, form, grid and packed arguments
//! depend on, as words for the per-thread plan cache ([`crate::engine_gpu::kernel::launch`]).
//!
//! The device, the op (name and CUDA expression, by address: a `&'static str` of the op
//! table), the element types, and per operand the view (offset, strides) and the buffer
//! address modulo 16 (vector alignment depends on it); the shape is the output's (every
//! launch checks that the inputs have it before it looks the plan up). Two launches with
//! equal signatures get equal plans. The buffers' lengths are not in it: a hit checks each
//! buffer against the plan's bound for its view. Launches with more than [`MAX_OPERANDS`]
//! operands or a rank above [`MAX_RANK`] are not cached. The words are hashed as they are
//! written, so a launch hashes its layout once.

use std::hash::Hasher;

use crate::engine_gpu::kernel::cache::WordHasher;
use crate::engine_gpu::kernel::launch::PlanKey;
use crate::engine_gpu::kernel::source::Operand;
use crate::layout::Layout;

/// Most operands of a cached eager launch (an output and three inputs).
pub(crate) const MAX_OPERANDS: usize = 4;
/// Highest rank of a cached launch.
pub(crate) const MAX_RANK: usize = 8;
/// Header words, then the shape, then per operand its offset, its address modulo 16 and
/// its strides.
const WORDS: usize = 6 + MAX_RANK + MAX_OPERANDS * (2 + MAX_RANK);

/// Everything a launch's plan depends on, as words (see the module docs), and their hash.
pub(crate) struct Signature {
    words: [u64; WORDS],
    len: usize,
    hash: WordHasher,
}

impl Signature {
    /// The signature of a launch of the op named `name` with CUDA expression `expr` on device
    /// `ordinal`, scalars of type `scalar`, over `operands` (type, buffer address, view;
    /// output first, all of one shape); `None` when the launch is too large to cache.
    #[inline]
    pub(crate) fn of(
        ordinal: usize,
        name: &'static str,
        expr: &'static str,
        scalar: Operand,
        operands: &[(Operand, u64, &Layout)],
    ) -> Option<Signature> {
        let shape = operands.first()?.2.shape();
        if operands.len() > MAX_OPERANDS || shape.len() > MAX_RANK {
            return None;
        }
        let mut s = Signature {
            words: [0; WORDS],
            len: 0,
            hash: WordHasher::default(),
        };
        // Element types, one byte each: the scalar's, then each operand's.
        let mut types = u64::from(scalar.dtype as u8);
        for (k, (t, _, _)) in operands.iter().enumerate() {
            types |= u64::from(t.dtype as u8 + 1) << (8 * (k + 1));
        }
        s.push(ordinal as u64);
        s.push(name.as_ptr() as usize as u64);
        s.push(expr.as_ptr() as usize as u64);
        s.push(((name.len() as u64) << 32) | expr.len() as u64);
        s.push(types);
        s.push(((operands.len() as u64) << 8) | shape.len() as u64);
        for &n in shape {
            s.push(n as u64);
        }
        for (_, ptr, layout) in operands {
            s.push(layout.offset() as u64);
            s.push(ptr % 16);
            for &st in layout.strides() {
                s.push(st as u64);
            }
        }
        Some(s)
    }

    #[inline]
    fn push(&mut self, w: u64) {
        // `of` checks the operand count and rank, which bound the words to `WORDS`.
        if let Some(slot) = self.words.get_mut(self.len) {
            *slot = w;
            self.len += 1;
            self.hash.write_u64(w);
        }
    }

    /// The plan cache's key: the words and their hash.
    pub(crate) fn key(&self) -> PlanKey<'_> {
        PlanKey::hashed(self.hash.finish(), &self.words[..self.len])
    }
}
