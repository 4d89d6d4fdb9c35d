//! Host buffers of a caller-chosen size, reserved without aborting: used by the CPU engine,
//! the tensor constructors and the GPU runtime's copies back to the host.

use crate::element::Element;
use crate::error::{AllocError, OutOfMemoryError, Result};

/// An empty `Vec` with room for exactly `len` elements, or a typed error: the one way host
/// buffers of a caller-chosen size are reserved in this crate, so a huge request is an
/// error value, never an abort or a capacity-overflow panic.
///
/// # Errors
/// [`AllocError::TooLarge`] when `len` elements exceed `isize::MAX` bytes,
/// [`AllocError::OutOfMemory`] when the allocator refuses.
pub(crate) fn vec_with_capacity<T>(len: usize) -> Result<Vec<T>> {
    let elem_size = std::mem::size_of::<T>();
    let bytes = len
        .checked_mul(elem_size)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| AllocError::TooLarge {
            device: "cpu".to_owned(),
            elements: len,
            elem_size,
        })?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| out_of_memory(bytes))?;
    Ok(v)
}

/// `len` zeros in a new `Vec`, from zeroed memory (`alloc_zeroed`: for large buffers the
/// operating system's lazily zeroed pages), so nothing is written here: the pages are
/// touched, and faulted in, by whoever writes the tensor first, on as many threads as it
/// uses. A fill of `T::ZERO` instead wrote every byte once on the calling thread before the
/// (parallel) writer wrote them again.
///
/// # Errors
/// As [`vec_with_capacity`].
pub(crate) fn zeroed_vec<T: Element>(len: usize) -> Result<Vec<T>> {
    let elem_size = std::mem::size_of::<T>();
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| AllocError::TooLarge {
        device: "cpu".to_owned(),
        elements: len,
        elem_size,
    })?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: `layout` has a non-zero size (checked above).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(out_of_memory(layout.size()));
    }
    // SAFETY: `ptr` comes from the global allocator with `Layout::array::<T>(len)`, the
    // layout a `Vec<T>` of capacity `len` uses (size `len * size_of::<T>()`, `T`'s
    // alignment), and is not null. Its `len` elements are initialised: the bytes are zero,
    // and the all-zero bit pattern is a valid value of every element type, equal to
    // `T::ZERO` (`Element` is sealed: `0.0`/`+0` for the floats and integers, `false` for
    // `bool`; `zeroed_vec_holds_each_types_zero` checks all thirteen).
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

fn out_of_memory(requested: usize) -> crate::Error {
    AllocError::OutOfMemory(Box::new(OutOfMemoryError {
        device: "cpu".to_owned(),
        requested,
        free: 0,
        total: 0,
        allocated: 0,
        reserved: 0,
        cached: 0,
        hints: Vec::new(),
    }))
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zero_bits<T: Element>() {
        let v = zeroed_vec::<T>(5).unwrap();
        assert_eq!(v.len(), 5);
        assert!(v.iter().all(|&x| x == T::ZERO), "{}", T::DTYPE.name());
        assert!(zeroed_vec::<T>(0).unwrap().is_empty());
    }

    #[test]
    fn zeroed_vec_holds_each_types_zero() {
        zero_bits::<f32>();
        zero_bits::<f64>();
        zero_bits::<half::f16>();
        zero_bits::<half::bf16>();
        zero_bits::<i8>();
        zero_bits::<i16>();
        zero_bits::<i32>();
        zero_bits::<i64>();
        zero_bits::<u8>();
        zero_bits::<u16>();
        zero_bits::<u32>();
        zero_bits::<u64>();
        zero_bits::<bool>();
        // The sign of the zeros: positive, whose bits are all zero.
        assert_eq!(f32::ZERO.to_bits(), 0);
        assert_eq!(f64::ZERO.to_bits(), 0);
        assert_eq!(half::f16::ZERO.to_bits(), 0);
        assert_eq!(half::bf16::ZERO.to_bits(), 0);
        assert!(matches!(
            zeroed_vec::<f64>(usize::MAX / 4),
            Err(crate::Error::Alloc(AllocError::TooLarge { .. }))
        ));
    }
}
