//! [`IoError`]: the errors of reading and writing tensor files (`crate::io`: safetensors,
//! npy, npz), which `?` turns into [`Error::Io`](super::Error::Io).
//!
//! Every variant names the file (its path, or `<memory>` for a byte buffer) and, where one is
//! involved, the tensor (an npz entry, a safetensors name), with the values that did not fit.
//! A bad file is always one of these errors: the readers never read out of bounds, never
//! panic and never allocate more than the file holds.

use crate::element::DType;

/// Errors of tensor files (issue 30).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IoError {
    /// The operating system failed (open, read, write, map); `source` is its error.
    #[error("{op} {file}: {source}")]
    Os {
        /// What was being done (`"open"`, `"read"`, `"write"`, `"map"`).
        op: &'static str,
        /// The file.
        file: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file's header (npy dict, safetensors JSON, zip directory) is malformed.
    #[error("{file}: bad {format} header: {reason}")]
    BadHeader {
        /// The file.
        file: String,
        /// `"npy"`, `"npz"` or `"safetensors"`.
        format: &'static str,
        /// What is wrong, with the offending text or numbers.
        reason: String,
    },
    /// The file ends before the data its header announces.
    #[error("{file}: tensor `{tensor}` needs {expected} bytes, the file holds {available}")]
    Truncated {
        /// The file.
        file: String,
        /// The tensor.
        tensor: String,
        /// Bytes the header announces.
        expected: u64,
        /// Bytes there are.
        available: u64,
    },
    /// A shape whose element count or byte size overflows, or exceeds what the file can hold.
    #[error("{file}: tensor `{tensor}` of shape {shape:?} ({dtype}) is larger than the file ({available} bytes)")]
    TooLarge {
        /// The file.
        file: String,
        /// The tensor.
        tensor: String,
        /// The shape the header gives.
        shape: Vec<usize>,
        /// The file's element type, as the file spells it.
        dtype: String,
        /// Bytes the file has for it.
        available: u64,
    },
    /// An element type this crate has no type for (or the format's spelling of it is unknown).
    #[error("{file}: tensor `{tensor}` has element type `{dtype}`, which this crate cannot hold")]
    UnknownDtype {
        /// The file.
        file: String,
        /// The tensor.
        tensor: String,
        /// The type as the file spells it (`"F8_E4M3"`, `"<c8"`, ...).
        dtype: String,
    },
    /// The tensor holds another element type than the one asked for.
    #[error("{file}: tensor `{tensor}` holds {file_dtype}, but {requested} was asked for; read it as {file_dtype} and `cast` it")]
    DTypeMismatch {
        /// The file.
        file: String,
        /// The tensor.
        tensor: String,
        /// The file's element type (as ours when we have it, else the file's spelling).
        file_dtype: String,
        /// The element type asked for.
        requested: DType,
    },
    /// No tensor of that name in the file.
    #[error("{file}: no tensor named `{tensor}` (the file has {available:?})")]
    NotFound {
        /// The file.
        file: String,
        /// The name asked for.
        tensor: String,
        /// The names the file has (the first 16).
        available: Vec<String>,
    },
    /// A tensor's bytes are not aligned for its element type, so they cannot be borrowed;
    /// the copying readers still read it.
    #[error("{file}: tensor `{tensor}` starts at byte {offset}, not a multiple of {align} ({dtype}): it cannot be borrowed in place; read a copy")]
    Misaligned {
        /// The file.
        file: String,
        /// The tensor.
        tensor: String,
        /// Its address or byte offset.
        offset: u64,
        /// The alignment its type needs.
        align: usize,
        /// Its element type.
        dtype: DType,
    },
    /// A `bool` tensor holds a byte other than 0 or 1.
    #[error("{file}: bool tensor `{tensor}` holds byte {byte} at element {index} (only 0 and 1 are bools)")]
    InvalidBool {
        /// The file.
        file: String,
        /// The tensor.
        tensor: String,
        /// The byte.
        byte: u8,
        /// Its element index.
        index: usize,
    },
    /// The format cannot hold this element type (npy has no bfloat16).
    #[error("{file}: {format} cannot hold tensor `{tensor}` of type {dtype}: {hint}")]
    Unsupported {
        /// The file.
        file: String,
        /// The format.
        format: &'static str,
        /// The tensor.
        tensor: String,
        /// Its element type.
        dtype: DType,
        /// What to do instead.
        hint: &'static str,
    },
    /// Two tensors of one file share a name (writing).
    #[error("{file}: two tensors are named `{tensor}`")]
    DuplicateName {
        /// The file.
        file: String,
        /// The name.
        tensor: String,
    },
    /// A Blob's file entries do not fit together (data and diff shapes differ, one is missing).
    #[error("{file}: blob `{blob}`: {reason}")]
    BadBlob {
        /// The file.
        file: String,
        /// The blob's name (the prefix of `<name>.data` / `<name>.diff`).
        blob: String,
        /// What does not fit.
        reason: String,
    },
}
