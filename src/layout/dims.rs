//! [`Dims`]: a layout's sizes or strides, inline up to [`INLINE_DIMS`] dims.
//!
//! Every op clones layouts (a view per operand, a broadcast input, the destination's layout
//! for the engine), so with `Vec` fields each clone was two heap allocations on the hot path
//! of a small op. Almost every tensor has at most [`INLINE_DIMS`] dims; those clone as a copy of
//! a few words. Higher ranks (up to [`super::MAX_DIMS`]) spill to the heap.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

/// Dims stored inline; more go to the heap.
pub const INLINE_DIMS: usize = 8;

/// Up to [`INLINE_DIMS`] values inline, more on the heap. Behaves as a slice (`Deref`); equality,
/// hashing and `Debug` are the slice's, so two `Dims` with the same values are equal
/// however they are stored.
#[derive(Clone)]
pub struct Dims<T: Copy + Default>(Repr<T>);

#[derive(Clone)]
enum Repr<T: Copy + Default> {
    /// `buf[..len]` are the values (`len <= INLINE_DIMS`).
    Inline { len: u8, buf: [T; INLINE_DIMS] },
    /// More than [`INLINE_DIMS`] values.
    Heap(Vec<T>),
}

impl<T: Copy + Default> Dims<T> {
    /// No dims.
    pub fn new() -> Self {
        Dims(Repr::Inline {
            len: 0,
            buf: [T::default(); INLINE_DIMS],
        })
    }

    /// A copy of `values`.
    pub fn from_slice(values: &[T]) -> Self {
        if values.len() <= INLINE_DIMS {
            let mut buf = [T::default(); INLINE_DIMS];
            buf[..values.len()].copy_from_slice(values);
            // `values.len() <= INLINE_DIMS = 8` fits a `u8`.
            Dims(Repr::Inline {
                len: values.len() as u8,
                buf,
            })
        } else {
            Dims(Repr::Heap(values.to_vec()))
        }
    }

    /// The values as a `Vec`.
    pub fn to_vec(&self) -> Vec<T> {
        self.deref().to_vec()
    }

    /// Inserts `value` at `index`, shifting the later values up (`Vec::insert`).
    ///
    /// # Panics
    /// When `index > len`, as `Vec::insert` (callers check the dim first).
    pub fn insert(&mut self, index: usize, value: T) {
        let mut v = self.to_vec();
        v.insert(index, value);
        *self = v.into();
    }

    /// Removes and returns the value at `index` (`Vec::remove`).
    ///
    /// # Panics
    /// When `index >= len`, as `Vec::remove` (callers check the dim first).
    pub fn remove(&mut self, index: usize) -> T {
        let mut v = self.to_vec();
        let r = v.remove(index);
        *self = v.into();
        r
    }
}

impl<'a, T: Copy + Default> IntoIterator for &'a Dims<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.deref().iter()
    }
}

impl<T: Copy + Default> Default for Dims<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default> Deref for Dims<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.0 {
            Repr::Inline { len, buf } => &buf[..usize::from(*len)],
            Repr::Heap(v) => v,
        }
    }
}

impl<T: Copy + Default> DerefMut for Dims<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.0 {
            Repr::Inline { len, buf } => &mut buf[..usize::from(*len)],
            Repr::Heap(v) => v,
        }
    }
}

impl<T: Copy + Default> From<&[T]> for Dims<T> {
    fn from(values: &[T]) -> Self {
        Self::from_slice(values)
    }
}

impl<T: Copy + Default> From<Vec<T>> for Dims<T> {
    fn from(values: Vec<T>) -> Self {
        if values.len() <= INLINE_DIMS {
            Self::from_slice(&values)
        } else {
            Dims(Repr::Heap(values))
        }
    }
}

impl<T: Copy + Default> FromIterator<T> for Dims<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut buf = [T::default(); INLINE_DIMS];
        let mut iter = iter.into_iter();
        let mut len = 0;
        while len < INLINE_DIMS {
            match iter.next() {
                Some(v) => {
                    buf[len] = v;
                    len += 1;
                }
                None => {
                    return Dims(Repr::Inline {
                        len: len as u8,
                        buf,
                    })
                }
            }
        }
        match iter.next() {
            None => Dims(Repr::Inline {
                len: len as u8,
                buf,
            }),
            Some(next) => {
                let mut v = buf.to_vec();
                v.push(next);
                v.extend(iter);
                Dims(Repr::Heap(v))
            }
        }
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for Dims<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Copy + Default + Eq> Eq for Dims<T> {}

impl<T: Copy + Default + Hash> Hash for Dims<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.deref().hash(state);
    }
}

impl<T: Copy + Default + fmt::Debug> fmt::Debug for Dims<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.deref().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash_of<T: Hash + ?Sized>(v: &T) -> u64 {
        let mut h = DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    }

    #[test]
    fn inline_and_heap_behave_as_the_same_slice() {
        for n in [0, 1, INLINE_DIMS - 1, INLINE_DIMS, INLINE_DIMS + 1, 32] {
            let values: Vec<isize> = (0..n as isize).map(|i| i * 3 - 7).collect();
            let a = Dims::from_slice(&values);
            let b: Dims<isize> = values.iter().copied().collect();
            let c = Dims::from(values.clone());
            for d in [&a, &b, &c] {
                assert_eq!(&**d, values.as_slice());
                assert_eq!(d.to_vec(), values);
                assert_eq!(hash_of(d), hash_of(values.as_slice()));
                assert_eq!(format!("{d:?}"), format!("{values:?}"));
            }
            assert_eq!(a, b);
            assert_eq!(b, c);
            let mut m = a.clone();
            if let Some(x) = m.first_mut() {
                *x += 1;
                assert_ne!(m, a);
            }
        }
        assert!(Dims::<usize>::new().is_empty());
        assert!(std::mem::size_of::<Dims<usize>>() <= 80);
    }
}
