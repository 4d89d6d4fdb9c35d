//! Bytes in and out of files: the only `unsafe` of `io/` (reinterpreting element slices as
//! bytes and back), an aligned owned buffer, and memory maps.
//!
//! Every element type is plain old data without padding (`Element`'s safety contract), so an
//! element slice may be read as bytes. The other direction needs more: the bytes must be
//! aligned for the type, and every bit pattern must be a value. That holds for every type but
//! `bool` (integers, IEEE floats and `half`'s `u16` wrappers), so `bool` bytes are checked to
//! be 0 or 1 first ([`check_bools`]).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::element::{DType, Element};
use crate::error::IoError;

/// The bytes of a file: read into an 8-byte aligned owned buffer, or mapped.
///
/// Invariant: `Owned(words, len)` has `len <= words.len() * 8`; the bytes are the first `len`
/// of `words`. Both forms start at an address aligned to 8 (a `u64` allocation, a page), so a
/// tensor at a file offset that is a multiple of its element size is aligned in memory.
pub(crate) enum FileBytes {
    Owned(Vec<u64>, usize),
    Mapped(memmap2::Mmap),
}

impl FileBytes {
    /// The file's bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            FileBytes::Owned(words, len) => &words_as_bytes(words)[..*len],
            FileBytes::Mapped(map) => map,
        }
    }

    /// An aligned copy of `bytes`.
    pub(crate) fn from_slice(bytes: &[u8]) -> FileBytes {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        words_as_bytes_mut(&mut words)[..bytes.len()].copy_from_slice(bytes);
        FileBytes::Owned(words, bytes.len())
    }

    /// Reads the file at `path` into memory, straight into the aligned buffer (one copy of
    /// the file in memory, not two). Memory for it is reserved fallibly: a file larger than
    /// memory is an error, not an abort.
    pub(crate) fn read_file(path: &Path) -> Result<FileBytes, IoError> {
        let file = path.display().to_string();
        let mut f = File::open(path).map_err(|source| os("open", &file, source))?;
        let len = f
            .metadata()
            .map_err(|source| os("stat", &file, source))?
            .len();
        let too_big = || os("read", &file, std::io::ErrorKind::OutOfMemory.into());
        let len = usize::try_from(len).map_err(|_| too_big())?;
        let mut words: Vec<u64> = Vec::new();
        words
            .try_reserve_exact(len.div_ceil(8))
            .map_err(|_| too_big())?;
        words.resize(len.div_ceil(8), 0);
        // A file that shrank since `metadata` is an error here; one that grew is read to the
        // length it had.
        f.read_exact(&mut words_as_bytes_mut(&mut words)[..len])
            .map_err(|source| os("read", &file, source))?;
        Ok(FileBytes::Owned(words, len))
    }

    /// Maps the file at `path` read-only.
    ///
    /// # Safety
    ///
    /// The file must not be written, truncated or replaced in place (by this process or
    /// another) while the map lives: memmap2's contract. A write would change bytes a borrowed
    /// tensor reads; a truncation would make reading them a bus error.
    pub(crate) unsafe fn map_file(path: &Path) -> Result<FileBytes, IoError> {
        let file = path.display().to_string();
        let f = File::open(path).map_err(|source| os("open", &file, source))?;
        // SAFETY: the caller promises the file is not modified while the map lives (this
        // function's contract, passed on from `SafetensorsFile::map` etc.). The map is
        // read-only (`Mmap`, `PROT_READ`), so nothing here writes it.
        let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|source| os("map", &file, source))?;
        Ok(FileBytes::Mapped(map))
    }
}

/// An [`IoError::Os`].
pub(crate) fn os(op: &'static str, file: &str, source: std::io::Error) -> IoError {
    IoError::Os {
        op,
        file: file.to_string(),
        source,
    }
}

fn words_as_bytes(words: &[u64]) -> &[u8] {
    // SAFETY: `u64` has no padding and `u8` no alignment; the byte slice covers exactly the
    // words' memory and borrows it for as long as `words`.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), std::mem::size_of_val(words)) }
}

fn words_as_bytes_mut(words: &mut [u64]) -> &mut [u8] {
    // SAFETY: as in `words_as_bytes`; any byte written leaves a valid `u64` (every bit
    // pattern is one), and the mutable borrow is exclusive for as long as `words`'.
    unsafe {
        std::slice::from_raw_parts_mut(
            words.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(words),
        )
    }
}

/// The bytes of an element slice, in the host's byte order.
pub(crate) fn as_bytes<T: Element>(data: &[T]) -> &[u8] {
    // SAFETY: `Element`'s contract: the type is plain old data with no padding, so each of its
    // bytes is initialised; `u8` needs no alignment; the length is the slice's byte size and
    // the borrow is `data`'s.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// Checks that every byte of a `bool` tensor is 0 or 1.
pub(crate) fn check_bools(bytes: &[u8], file: &str, tensor: &str) -> Result<(), IoError> {
    match bytes.iter().position(|&b| b > 1) {
        None => Ok(()),
        Some(index) => Err(IoError::InvalidBool {
            file: file.to_string(),
            tensor: tensor.to_string(),
            byte: bytes[index],
            index,
        }),
    }
}

/// `bytes` as `T`s in place, without a copy: little-endian host, aligned, whole elements,
/// and valid `bool`s. `None` when the bytes are not aligned or the host is big-endian (the
/// caller reports [`IoError::Misaligned`] or copies).
pub(crate) fn borrow<'a, T: Element>(
    bytes: &'a [u8],
    file: &str,
    tensor: &str,
) -> Result<Option<&'a [T]>, IoError> {
    let size = std::mem::size_of::<T>();
    if cfg!(target_endian = "big") || !bytes.len().is_multiple_of(size) {
        return Ok(None);
    }
    if !bytes.as_ptr().cast::<T>().is_aligned() {
        return Ok(None);
    }
    if T::DTYPE == DType::Bool {
        check_bools(bytes, file, tensor)?;
    }
    // SAFETY: the pointer is aligned for `T` (checked above) and the length a whole number of
    // elements; every byte pattern is a `T`: `bool` bytes were checked to be 0 or 1, and every
    // other element type is an integer or IEEE float (the half types wrap a `u16`), for which
    // every bit pattern is a value. The file's byte order is little-endian (the caller's
    // format says so) and so is the host (checked above). The slice borrows `bytes`.
    Ok(Some(unsafe {
        std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size)
    }))
}

/// A copy of `bytes` as `T`s (any alignment), swapping the byte order when the file's
/// (`big_endian`) is not the host's. `bytes.len()` must be a whole number of elements (the
/// callers checked the size against the shape); a `bool` byte other than 0 or 1 is an error.
pub(crate) fn decode<T: Element>(
    bytes: &[u8],
    big_endian: bool,
    file: &str,
    tensor: &str,
) -> Result<Vec<T>, IoError> {
    let mut out = vec![T::ZERO; bytes.len() / std::mem::size_of::<T>()];
    decode_into(bytes, big_endian, &mut out, file, tensor)?;
    Ok(out)
}

/// [`decode`] into `dst`, whose elements are the first `dst.len()` of `bytes` (fewer bytes
/// than that is an [`IoError::Truncated`]).
pub(crate) fn decode_into<T: Element>(
    bytes: &[u8],
    big_endian: bool,
    dst: &mut [T],
    file: &str,
    tensor: &str,
) -> Result<(), IoError> {
    let size = std::mem::size_of::<T>();
    let n = std::mem::size_of_val(dst);
    let Some(src) = bytes.get(..n) else {
        return Err(IoError::Truncated {
            file: file.to_string(),
            tensor: tensor.to_string(),
            expected: n as u64,
            available: bytes.len() as u64,
        });
    };
    if T::DTYPE == DType::Bool {
        check_bools(src, file, tensor)?;
    }
    // SAFETY: `dst` is `n` bytes of initialised `T`s, borrowed exclusively; the bytes copied
    // in are values of `T` (checked bools; every bit pattern for the other types, as in
    // `borrow`), and the byte order is fixed below before anything reads them as `T`s.
    let out = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<u8>(), n) };
    out.copy_from_slice(src);
    if big_endian != cfg!(target_endian = "big") && size > 1 {
        for chunk in out.chunks_exact_mut(size) {
            chunk.reverse();
        }
    }
    Ok(())
}

/// Appends the elements' little-endian bytes to `out`.
pub(crate) fn encode_le<T: Element>(data: &[T], out: &mut Vec<u8>) {
    let bytes = as_bytes(data);
    let size = std::mem::size_of::<T>();
    if cfg!(target_endian = "big") && size > 1 {
        for chunk in bytes.chunks_exact(size) {
            out.extend(chunk.iter().rev());
        }
    } else {
        out.extend_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_swaps_and_checks_bools() {
        let be = [0x3f, 0x80, 0, 0, 0x40, 0, 0, 0];
        assert_eq!(decode::<f32>(&be, true, "f", "t").unwrap(), vec![1.0, 2.0]);
        let le = 1.5f64.to_le_bytes();
        assert_eq!(decode::<f64>(&le[..], false, "f", "t").unwrap(), vec![1.5]);
        assert!(matches!(
            decode::<bool>(&[0, 1, 2], false, "f", "t"),
            Err(IoError::InvalidBool {
                byte: 2,
                index: 2,
                ..
            })
        ));
        let mut out = Vec::new();
        encode_le(&[1u16, 0x0203], &mut out);
        assert_eq!(out, [1, 0, 3, 2]);
    }

    #[test]
    fn borrow_refuses_misaligned() {
        let buf = FileBytes::from_slice(&[0u8; 17]);
        let s = buf.as_slice();
        assert!(borrow::<f32>(&s[..16], "f", "t").unwrap().is_some());
        assert!(borrow::<f32>(&s[1..17], "f", "t").unwrap().is_none());
        assert!(borrow::<f32>(&s[..3], "f", "t").unwrap().is_none());
    }
}
