//! A list that keeps its first `N` items in place and only spills to the heap past them: the
//! storage of everything an evaluation collects per leaf, per output or per current value
//! (at most [`super::MAX_LEAVES`] and [`super::MAX_OUTPUTS`] of each reach a kernel), so that
//! evaluating an expression of ordinary size allocates nothing.

use std::fmt;

/// Up to `N` items inline, the rest in a `Vec` (allocated only when an item past `N` is
/// pushed). Items keep their order.
pub struct InlineList<T, const N: usize> {
    inline: [Option<T>; N],
    len: usize,
    spill: Vec<T>,
}

impl<T, const N: usize> InlineList<T, N> {
    /// An empty list.
    pub fn new() -> Self {
        InlineList {
            inline: std::array::from_fn(|_| None),
            len: 0,
            spill: Vec::new(),
        }
    }

    /// Appends `item`.
    pub fn push(&mut self, item: T) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = Some(item),
            None => self.spill.push(item),
        }
        self.len += 1;
    }

    /// How many items.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Item `i`, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            None
        } else if i < N {
            self.inline[i].as_ref()
        } else {
            self.spill.get(i - N)
        }
    }

    /// Item `i` for writing, or `None` past the end.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i >= self.len {
            None
        } else if i < N {
            self.inline[i].as_mut()
        } else {
            self.spill.get_mut(i - N)
        }
    }

    /// The first item.
    pub fn first(&self) -> Option<&T> {
        self.get(0)
    }

    /// The items in order.
    pub fn iter(&self) -> Iter<'_, T, N> {
        Iter {
            list: self,
            next: 0,
        }
    }

    /// The items in order, for writing.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        let len = self.len.min(N);
        self.inline
            .iter_mut()
            .take(len)
            .filter_map(Option::as_mut)
            .chain(self.spill.iter_mut())
    }

    /// Removes every item (keeping the spill's capacity).
    pub fn clear(&mut self) {
        for slot in &mut self.inline {
            *slot = None;
        }
        self.spill.clear();
        self.len = 0;
    }
}

/// The items of an [`InlineList`] in order.
pub struct Iter<'a, T, const N: usize> {
    list: &'a InlineList<T, N>,
    next: usize,
}

impl<'a, T, const N: usize> Iterator for Iter<'a, T, N> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        let item = self.list.get(self.next)?;
        self.next += 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.list.len - self.next.min(self.list.len);
        (left, Some(left))
    }
}

impl<T, const N: usize> ExactSizeIterator for Iter<'_, T, N> {}

impl<'a, T, const N: usize> IntoIterator for &'a InlineList<T, N> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T, N>;

    fn into_iter(self) -> Iter<'a, T, N> {
        self.iter()
    }
}

impl<T, const N: usize> Default for InlineList<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> std::ops::Index<usize> for InlineList<T, N> {
    type Output = T;

    /// Item `i`; panics past the end, like a slice.
    fn index(&self, i: usize) -> &T {
        match self.get(i) {
            Some(item) => item,
            None => panic!("index {i} out of range for a list of {} items", self.len),
        }
    }
}

impl<T: Clone, const N: usize> Clone for InlineList<T, N> {
    fn clone(&self) -> Self {
        let mut out = InlineList::new();
        for item in self.iter() {
            out.push(item.clone());
        }
        out
    }
}

impl<T: fmt::Debug, const N: usize> fmt::Debug for InlineList<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T, const N: usize> FromIterator<T> for InlineList<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut out = InlineList::new();
        for item in iter {
            out.push(item);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_across_the_spill() {
        let mut l: InlineList<String, 3> = InlineList::new();
        assert!(l.is_empty() && l.first().is_none());
        for i in 0..7 {
            l.push(i.to_string());
        }
        assert_eq!(l.len(), 7);
        let all: Vec<&str> = l.iter().map(String::as_str).collect();
        assert_eq!(all, ["0", "1", "2", "3", "4", "5", "6"]);
        assert_eq!(l[2], "2");
        assert_eq!(l[5], "5");
        assert!(l.get(7).is_none());
        for s in l.iter_mut() {
            s.push('!');
        }
        assert_eq!(l.get(6).map(String::as_str), Some("6!"));
        if let Some(s) = l.get_mut(0) {
            s.clear();
        }
        assert_eq!(l[0], "");
        let c = l.clone();
        assert_eq!(format!("{c:?}"), format!("{l:?}"));
        l.clear();
        assert_eq!(l.len(), 0);
        assert_eq!(l.iter().count(), 0);
        let from: InlineList<u8, 2> = (0..4).collect();
        assert_eq!(from.iter().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn indexing_past_the_end_panics_like_a_slice() {
        let l: InlineList<u8, 2> = InlineList::new();
        let _ = l[0];
    }
}
