//! safetensors files (Hugging Face's format, candle's and PyTorch's `save_file` /
//! `load_file`): [`save`], [`to_bytes`], [`write()`], and [`SafetensorsFile`] to read.
//!
//! Writing goes through the `safetensors` crate (its `serialize`, `serialize_to_file`: a
//! sibling temporary file renamed over `path`, so a map of the old file is never truncated
//! under a reader). Tensors are sorted by descending alignment, so every tensor of a file
//! written here starts at an offset aligned for its type and reads back without a copy.
//!
//! Reading parses the header into the crate's `Metadata`, which checks that the tensors'
//! byte ranges follow each other without gap or overlap and that each range is its shape's
//! size (no overflow); this module adds the checks it leaves to `SafeTensors::deserialize`,
//! without its arithmetic that can overflow on a lying header: a header length past the end,
//! data past the end or after the last tensor.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use ::safetensors::tensor::Metadata;
use ::safetensors::{Dtype, SafeTensorError, View};

use super::bytes::{self, FileBytes};
use super::dtype::{from_safetensors, to_safetensors, with_dtype, AnyTensor};
use crate::device::Cpu;
use crate::element::{DType, Element};
use crate::error::{IoError, Result};
use crate::layout::Layout;
use crate::tensor::{Tensor, TensorView};

pub use super::tensor_ref::TensorRef;

/// The largest header the `safetensors` crate accepts (100 MB).
const MAX_HEADER: u64 = 100_000_000;
/// The file name errors show for a byte buffer.
pub(crate) const MEMORY: &str = "<memory>";

/// What `safetensors::serialize` reads of one tensor.
struct Prepared<'a> {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Cow<'a, [u8]>,
}

impl View for Prepared<'_> {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// Checks names (unique, not `__metadata__`) and gathers the bytes.
fn prepare<'a, N: AsRef<str>>(
    file: &str,
    tensors: impl IntoIterator<Item = (N, TensorRef<'a>)>,
) -> Result<Vec<(String, Prepared<'a>)>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (name, t) in tensors {
        let name = name.as_ref().to_string();
        if name == "__metadata__" {
            return Err(
                bad_header(file, "the name `__metadata__` is reserved for metadata").into(),
            );
        }
        if !seen.insert(name.clone()) {
            return Err(IoError::DuplicateName {
                file: file.to_string(),
                tensor: name,
            }
            .into());
        }
        let prepared = Prepared {
            dtype: to_safetensors(t.dtype),
            shape: t.shape,
            bytes: t.bytes?,
        };
        out.push((name, prepared));
    }
    Ok(out)
}

/// Writes `tensors` with `metadata` (the header's `__metadata__`, free text) to the file at
/// `path`, replacing it atomically (a temporary file beside it, renamed).
pub fn save<'a, N: AsRef<str>>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = (N, TensorRef<'a>)>,
    metadata: Option<&HashMap<String, String>>,
) -> Result<()> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let prepared = prepare(&file, tensors)?;
    ::safetensors::serialize_to_file(prepared, metadata.cloned(), path)
        .map_err(|e| from_crate(&file, "write", e).into())
}

/// The bytes of a safetensors file holding `tensors` and `metadata`.
pub fn to_bytes<'a, N: AsRef<str>>(
    tensors: impl IntoIterator<Item = (N, TensorRef<'a>)>,
    metadata: Option<&HashMap<String, String>>,
) -> Result<Vec<u8>> {
    let prepared = prepare(MEMORY, tensors)?;
    ::safetensors::serialize(prepared, metadata.cloned())
        .map_err(|e| from_crate(MEMORY, "write", e).into())
}

/// Writes a safetensors file holding `tensors` and `metadata` to `writer`.
pub fn write<'a, N: AsRef<str>>(
    mut writer: impl std::io::Write,
    tensors: impl IntoIterator<Item = (N, TensorRef<'a>)>,
    metadata: Option<&HashMap<String, String>>,
) -> Result<()> {
    let bytes = to_bytes(tensors, metadata)?;
    writer
        .write_all(&bytes)
        .map_err(|e| bytes::os("write", MEMORY, e).into())
}

fn from_crate(file: &str, op: &'static str, e: SafeTensorError) -> IoError {
    match e {
        SafeTensorError::IoError(source) => bytes::os(op, file, source),
        other => bad_header(file, &other.to_string()),
    }
}

fn bad_header(file: &str, reason: &str) -> IoError {
    IoError::BadHeader {
        file: file.to_string(),
        format: "safetensors",
        reason: reason.to_string(),
    }
}

/// One tensor of a file, as its header gives it: the type-erased listing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TensorInfo {
    /// Its name.
    pub name: String,
    /// Its element type, `None` for a type this crate has not (the 8-bit floats, ...).
    pub dtype: Option<DType>,
    /// The type as the file spells it (`"F32"`, `"F8_E4M3"`).
    pub file_dtype: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Where its bytes start, from the start of the file.
    pub offset: usize,
    /// How many bytes it has.
    pub byte_len: usize,
}

/// A safetensors file, read into memory or mapped, with its header checked: list its tensors
/// ([`tensors`](Self::tensors)), borrow one in place ([`view`](Self::view)), copy one
/// ([`tensor`](Self::tensor)) or load several to a GPU ([`to_gpu`](Self::to_gpu)).
///
/// [`open`](Self::open) reads the whole file (safe: nothing can change it afterwards);
/// [`map`](Self::map) maps it, which is `unsafe` because a file changed by anyone while mapped
/// changes (or, truncated, faults) the views borrowed from it: memmap2's contract, which
/// this crate cannot check, passed on to the caller.
pub struct SafetensorsFile {
    file: String,
    bytes: FileBytes,
    tensors: Vec<TensorInfo>,
    index: HashMap<String, usize>,
    metadata: HashMap<String, String>,
}

impl SafetensorsFile {
    /// Reads the file at `path` into memory and checks its header.
    pub fn open(path: impl AsRef<Path>) -> Result<SafetensorsFile> {
        let path = path.as_ref();
        let bytes = FileBytes::read_file(path)?;
        Self::parse(path.display().to_string(), bytes)
    }

    /// Maps the file at `path` read-only and checks its header; nothing is copied until a
    /// tensor is read, and [`view`](Self::view) borrows the map itself.
    ///
    /// # Safety
    ///
    /// The file must not be written, truncated or replaced in place (by this process or any
    /// other) while the returned value or a view of it lives. Replacing it by a rename, as
    /// [`save`] does, is fine: the map keeps the old file.
    pub unsafe fn map(path: impl AsRef<Path>) -> Result<SafetensorsFile> {
        let path = path.as_ref();
        // SAFETY: our caller's promise, this function's contract.
        let bytes = unsafe { FileBytes::map_file(path) }?;
        Self::parse(path.display().to_string(), bytes)
    }

    /// A file held in memory (copied once, to align it).
    pub fn from_bytes(data: &[u8]) -> Result<SafetensorsFile> {
        Self::parse(MEMORY.to_string(), FileBytes::from_slice(data))
    }

    fn parse(file: String, bytes: FileBytes) -> Result<SafetensorsFile> {
        let data = bytes.as_slice();
        let len = data.len() as u64;
        let Some(n) = data.get(..8).and_then(|b| <[u8; 8]>::try_from(b).ok()) else {
            return Err(truncated(&file, "<header length>", 8, len));
        };
        let n = u64::from_le_bytes(n);
        if n > MAX_HEADER {
            return Err(
                bad_header(&file, &format!("header length {n} exceeds {MAX_HEADER}")).into(),
            );
        }
        // `n <= MAX_HEADER`, so neither sum overflows.
        let start = 8 + n as usize;
        let Some(header) = data.get(8..start) else {
            return Err(truncated(&file, "<header>", 8 + n, len));
        };
        let meta: Metadata =
            serde_json::from_slice(header).map_err(|e| bad_header(&file, &format!("{e}")))?;
        let data_len = meta.data_len();
        let available = data.len() - start;
        if data_len != available {
            let last = meta.offset_keys().pop().unwrap_or_default();
            if data_len > available {
                return Err(truncated(&file, &last, data_len as u64, available as u64));
            }
            let extra = available - data_len;
            return Err(bad_header(&file, &format!("{extra} bytes after the last tensor")).into());
        }
        let mut tensors = Vec::new();
        for name in meta.offset_keys() {
            let Some(info) = meta.info(&name) else {
                continue;
            };
            let (s, e) = info.data_offsets;
            tensors.push(TensorInfo {
                dtype: from_safetensors(info.dtype),
                file_dtype: info.dtype.to_string(),
                shape: info.shape.clone(),
                offset: start + s,
                byte_len: e - s,
                name,
            });
        }
        let index = tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        let metadata = meta.metadata().clone().unwrap_or_default();
        Ok(SafetensorsFile {
            file,
            bytes,
            tensors,
            index,
            metadata,
        })
    }

    /// The file's path (or `<memory>`).
    pub fn path(&self) -> &str {
        &self.file
    }

    /// Every tensor, in file order: names, types, shapes, without reading any data.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The names, in file order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.iter().map(|t| t.name.as_str())
    }

    /// The tensor called `name`, if any.
    pub fn info(&self, name: &str) -> Option<&TensorInfo> {
        self.index.get(name).map(|&i| &self.tensors[i])
    }

    /// The header's `__metadata__` (empty when it has none).
    pub fn metadata(&self) -> &HashMap<String, String> {
        &self.metadata
    }

    /// The header entry of `name` and its element type (errors: no such name, a type we
    /// have not).
    fn lookup(&self, name: &str) -> Result<(&TensorInfo, DType)> {
        let info = self.info(name).ok_or_else(|| IoError::NotFound {
            file: self.file.clone(),
            tensor: name.to_string(),
            available: self.names().take(16).map(str::to_string).collect(),
        })?;
        let dtype = info.dtype.ok_or_else(|| IoError::UnknownDtype {
            file: self.file.clone(),
            tensor: name.to_string(),
            dtype: info.file_dtype.clone(),
        })?;
        Ok((info, dtype))
    }

    /// The header entry and bytes of `name`, checked to hold `T`s.
    pub(crate) fn checked<T: Element>(&self, name: &str) -> Result<(&TensorInfo, &[u8])> {
        let (info, dtype) = self.lookup(name)?;
        if dtype != T::DTYPE {
            return Err(self.mismatch::<T>(name, dtype.name()));
        }
        // The ranges were checked against the file at `parse`.
        let end = info.offset + info.byte_len;
        let bytes = self
            .bytes
            .as_slice()
            .get(info.offset..end)
            .unwrap_or_default();
        Ok((info, bytes))
    }

    fn mismatch<T: Element>(&self, name: &str, file_dtype: &str) -> crate::error::Error {
        IoError::DTypeMismatch {
            file: self.file.clone(),
            tensor: name.to_string(),
            file_dtype: file_dtype.to_string(),
            requested: T::DTYPE,
        }
        .into()
    }

    /// The tensor `name` borrowed in place, without a copy (from the map, for a mapped
    /// file). Errors: [`IoError::Misaligned`] when its bytes are not aligned for `T` (files
    /// written by old writers; read a copy with [`tensor`](Self::tensor)), or on a
    /// big-endian host; [`IoError::DTypeMismatch`] for another type.
    pub fn view<T: Element>(&self, name: &str) -> Result<TensorView<'_, T, Cpu>> {
        let (info, data) = self.checked::<T>(name)?;
        let layout = Layout::contiguous(&info.shape)?;
        let slice: &[T] = if data.is_empty() {
            &[]
        } else {
            bytes::borrow::<T>(data, &self.file, name)?.ok_or_else(|| IoError::Misaligned {
                file: self.file.clone(),
                tensor: name.to_string(),
                offset: info.offset as u64,
                align: std::mem::align_of::<T>(),
                dtype: T::DTYPE,
            })?
        };
        TensorView::new(slice, layout, &Cpu)
    }

    /// A copy of the tensor `name` (any alignment). [`IoError::DTypeMismatch`] names the
    /// file's type when it is not `T`.
    pub fn tensor<T: Element>(&self, name: &str) -> Result<Tensor<T>> {
        let (info, data) = self.checked::<T>(name)?;
        let values = bytes::decode::<T>(data, false, &self.file, name)?;
        Tensor::from_vec(&info.shape, values)
    }

    /// A copy of the tensor `name`, of whatever type it holds.
    pub fn tensor_any(&self, name: &str) -> Result<AnyTensor> {
        let (_, dtype) = self.lookup(name)?;
        with_dtype!(dtype, T => self.tensor::<T>(name).map(AnyTensor::from))
    }
}

fn truncated(file: &str, tensor: &str, expected: u64, available: u64) -> crate::error::Error {
    IoError::Truncated {
        file: file.to_string(),
        tensor: tensor.to_string(),
        expected,
        available,
    }
    .into()
}

impl std::fmt::Debug for SafetensorsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SafetensorsFile")
            .field("file", &self.file)
            .field("tensors", &self.tensors)
            .field("metadata", &self.metadata)
            .finish()
    }
}
