//! Host buffers of a caller-chosen size, reserved without aborting: used by the CPU engine,
//! the tensor constructors and the GPU runtime's copies back to the host.

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
    v.try_reserve_exact(len).map_err(|_| {
        AllocError::OutOfMemory(Box::new(OutOfMemoryError {
            device: "cpu".to_owned(),
            requested: bytes,
            free: 0,
            total: 0,
            allocated: 0,
            reserved: 0,
            cached: 0,
            hints: Vec::new(),
        }))
    })?;
    Ok(v)
}
