//! A kernel's parameters as `cuLaunchKernel` takes them: [`KernelArgs`], packed by a launch
//! ([`super::launch`]) and kept, with its plan, by the plan cache (`plan_cache`),
//! which patches the addresses and scalars of a repeated launch in place.

use std::ffi::c_void;

/// A kernel's parameters for `cuLaunchKernel`: each parameter's bytes at an 8-byte aligned
/// slot (the largest alignment of any parameter type used) of one buffer.
#[derive(Clone, Debug, Default)]
pub struct KernelArgs {
    words: Vec<u64>,
    /// (first word, byte length) of each parameter.
    slots: Vec<(usize, usize)>,
}

impl KernelArgs {
    /// Appends one parameter.
    pub fn push(&mut self, bytes: &[u8]) {
        let start = self.words.len();
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.words.push(u64::from_le_bytes(w));
        }
        self.slots.push((start, bytes.len()));
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Parameter `i`'s bytes, or `None` past the end.
    #[cfg(test)]
    pub fn param(&self, i: usize) -> Option<Vec<u8>> {
        let &(start, len) = self.slots.get(i)?;
        let bytes: Vec<u8> = self.words[start..]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .take(len)
            .collect();
        Some(bytes)
    }

    /// Replaces parameter `i` with `bytes`, which must have its length; `false` (and no
    /// change) when it does not or there is no parameter `i`.
    pub fn set(&mut self, i: usize, bytes: &[u8]) -> bool {
        match self.slots.get(i) {
            Some(&(start, len)) if len == bytes.len() => {
                for (w, chunk) in self.words[start..].iter_mut().zip(bytes.chunks(8)) {
                    let mut b = [0u8; 8];
                    b[..chunk.len()].copy_from_slice(chunk);
                    *w = u64::from_le_bytes(b);
                }
                true
            }
            _ => false,
        }
    }

    /// The `void**` array: a pointer to each parameter's first byte. The pointers are valid
    /// while `self` is neither moved nor changed.
    #[cfg(test)]
    pub(crate) fn pointers(&mut self) -> Vec<*mut c_void> {
        let mut ptrs = vec![std::ptr::null_mut(); self.len()];
        self.write_pointers(&mut ptrs);
        ptrs
    }

    /// Writes the `void**` array into `ptrs` (one entry per parameter; `ptrs` is at least
    /// [`Self::len`] long). The pointers are valid while `self` is neither moved nor changed.
    pub(crate) fn write_pointers(&mut self, ptrs: &mut [*mut c_void]) {
        let base = self.words.as_mut_ptr();
        for (p, &(start, _)) in ptrs.iter_mut().zip(&self.slots) {
            // `wrapping_add` stays inside the buffer: `start < words.len()` for every
            // parameter of at least one byte, and every parameter here has one.
            *p = base.wrapping_add(start).cast::<c_void>();
        }
    }
}
