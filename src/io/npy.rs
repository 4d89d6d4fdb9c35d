//! numpy's `.npy` files: [`save`] / [`write()`] / [`to_bytes`], [`load`] / [`read`] /
//! [`from_bytes`] (and `_any` forms for a type not known in advance), [`header`].
//!
//! Reading takes format versions 1.0, 2.0 and 3.0, C and Fortran order (a Fortran file is
//! read without a copy into a tensor with column-major strides: `contiguous()` makes it
//! row-major), little- and big-endian data (swapped on read), and every element type this
//! crate has, `f16` (`<f2`) included. The header, a Python dict literal, is parsed strictly
//! (`header.rs`): exactly the keys `descr`, `fortran_order` and `shape`, nothing else.
//!
//! Writing gives version 1.0 (2.0 past 65535 header bytes), C order, little-endian, the
//! header padded to 64 bytes as numpy pads it. `bf16` is refused with
//! [`IoError::Unsupported`]: numpy has no bfloat16, and the usual workaround, raw `<V2`
//! bytes, reads in numpy as opaque void and cannot be told from `f16` or `i16` when read
//! back, so a file would lose its type silently. Cast to `f32` or use safetensors.

use std::io::{Read, Write};
use std::path::Path;

use super::bytes::{self, FileBytes};
use super::dtype::{from_npy_descr, npy_code, with_dtype, AnyTensor};
use super::header::{parse_dict, NpyDict};
use super::safetensors::MEMORY;
use super::tensor_ref::TensorRef;
use crate::device::Cpu;
use crate::element::{DType, Element};
use crate::error::{IoError, Result};
use crate::layout::Layout;
use crate::tensor::Tensor;

const MAGIC: &[u8] = b"\x93NUMPY";
/// The longest header read: numpy's own limit is 10 000 bytes; a larger one is no array
/// numpy wrote, and the cap keeps a lying length from allocating gigabytes.
const MAX_HEADER: usize = 1 << 20;

/// What an `.npy` header says.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NpyHeader {
    /// The format version (`(1, 0)`, `(2, 0)` or `(3, 0)`).
    pub version: (u8, u8),
    /// The element type.
    pub dtype: DType,
    /// Whether the data is big-endian.
    pub big_endian: bool,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<usize>,
}

impl NpyHeader {
    /// Elements times element size, checked (`None` on overflow).
    fn byte_len(&self) -> Option<usize> {
        self.shape
            .iter()
            .try_fold(self.dtype.size_in_bytes(), |acc, &d| acc.checked_mul(d))
    }
}

fn bad(file: &str, reason: impl Into<String>) -> IoError {
    IoError::BadHeader {
        file: file.to_string(),
        format: "npy",
        reason: reason.into(),
    }
}

/// Reads the magic, version and header from `reader`; returns the header and its total
/// length in bytes (where the data starts).
fn read_header(mut reader: impl Read, file: &str, tensor: &str) -> Result<(NpyHeader, usize)> {
    let mut pre = [0u8; 8];
    read_exact(&mut reader, &mut pre, file, tensor)?;
    if &pre[..6] != MAGIC {
        return Err(bad(file, format!("magic {:?} is not \\x93NUMPY", &pre[..6])).into());
    }
    let version = (pre[6], pre[7]);
    let (len_bytes, utf8) = match version {
        (1, 0) => (2, false),
        (2, 0) => (4, false),
        (3, 0) => (4, true),
        (a, b) => return Err(bad(file, format!("unknown format version {a}.{b}")).into()),
    };
    let mut len = [0u8; 4];
    read_exact(&mut reader, &mut len[..len_bytes], file, tensor)?;
    let header_len = u32::from_le_bytes(len) as usize;
    if header_len > MAX_HEADER {
        return Err(bad(
            file,
            format!("header length {header_len} exceeds {MAX_HEADER}"),
        )
        .into());
    }
    let mut text = vec![0u8; header_len];
    read_exact(&mut reader, &mut text, file, tensor)?;
    if !utf8 && !text.is_ascii() {
        return Err(bad(file, "a version 1 or 2 header must be ASCII").into());
    }
    let text =
        std::str::from_utf8(&text).map_err(|e| bad(file, format!("header is not UTF-8: {e}")))?;
    let NpyDict {
        descr,
        fortran_order,
        shape,
    } = parse_dict(text).map_err(|e| bad(file, e))?;
    let (dtype, big_endian) = match from_npy_descr(&descr) {
        Some(d) => d,
        None => {
            return Err(IoError::UnknownDtype {
                file: file.to_string(),
                tensor: tensor.to_string(),
                dtype: descr,
            }
            .into())
        }
    };
    let header = NpyHeader {
        version,
        dtype,
        big_endian,
        fortran_order,
        shape,
    };
    Ok((header, 6 + 2 + len_bytes + header_len))
}

fn read_exact(reader: &mut impl Read, buf: &mut [u8], file: &str, tensor: &str) -> Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(IoError::Truncated {
                    file: file.to_string(),
                    tensor: format!("{tensor} <npy header>"),
                    expected: buf.len() as u64,
                    available: got as u64,
                }
                .into())
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(bytes::os("read", file, e).into()),
        }
    }
    Ok(())
}

/// The byte length of the data `header` announces, checked against `available` bytes.
fn data_len(header: &NpyHeader, available: u64, file: &str, tensor: &str) -> Result<usize> {
    let too_large = || IoError::TooLarge {
        file: file.to_string(),
        tensor: tensor.to_string(),
        shape: header.shape.clone(),
        dtype: header.dtype.name().to_string(),
        available,
    };
    let n = header.byte_len().ok_or_else(too_large)?;
    if n as u64 > available {
        return Err(too_large().into());
    }
    Ok(n)
}

/// The tensor of `header` over `data` (exactly its bytes).
fn decode<T: Element>(
    header: &NpyHeader,
    data: &[u8],
    file: &str,
    tensor: &str,
) -> Result<Tensor<T>> {
    if header.dtype != T::DTYPE {
        return Err(IoError::DTypeMismatch {
            file: file.to_string(),
            tensor: tensor.to_string(),
            file_dtype: header.dtype.name().to_string(),
            requested: T::DTYPE,
        }
        .into());
    }
    let values = bytes::decode::<T>(data, header.big_endian, file, tensor)?;
    if !header.fortran_order {
        return Tensor::from_vec(&header.shape, values);
    }
    // Column-major strides: the first index moves fastest. The byte size fits (checked), so
    // the products of dims do too.
    let mut strides = Vec::with_capacity(header.shape.len());
    let mut step = 1usize;
    for &d in &header.shape {
        strides.push(step as isize);
        step = step.saturating_mul(d.max(1));
    }
    let layout = Layout::new(&header.shape, &strides, 0)?;
    Tensor::from_parts(values, layout, Cpu).map_err(|h| h.error)
}

/// Parses a whole `.npy` file in memory: header and the data, which must be all the rest.
fn parse_bytes<T: Element>(data: &[u8], file: &str, tensor: &str) -> Result<Tensor<T>> {
    let (header, start) = read_header(data, file, tensor)?;
    let rest = data.get(start..).unwrap_or_default();
    let n = data_len(&header, rest.len() as u64, file, tensor)?;
    if rest.len() > n {
        return Err(bad(file, format!("{} bytes after the data", rest.len() - n)).into());
    }
    decode(&header, rest, file, tensor)
}

/// Reads the `.npy` file at `path` as a tensor of `T` (the file's type must be `T`:
/// [`IoError::DTypeMismatch`] names it otherwise).
pub fn load<T: Element>(path: impl AsRef<Path>) -> Result<Tensor<T>> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let bytes = FileBytes::read_file(path)?;
    parse_bytes(bytes.as_slice(), &file, "array")
}

/// Reads an `.npy` file held in `data`.
pub fn from_bytes<T: Element>(data: &[u8]) -> Result<Tensor<T>> {
    parse_bytes(data, MEMORY, "array")
}

/// Reads one array from `reader`, leaving what follows it unread (several arrays written one
/// after another read back one call each, as with numpy's `np.load` on an open file).
pub fn read<T: Element>(reader: impl Read) -> Result<Tensor<T>> {
    read_named(reader, MEMORY, "array", u64::MAX)
}

/// [`read`] with the names errors show and at most `limit` data bytes (an npz entry's
/// declared size).
pub(crate) fn read_named<T: Element>(
    mut reader: impl Read,
    file: &str,
    tensor: &str,
    limit: u64,
) -> Result<Tensor<T>> {
    let (header, start) = read_header(&mut reader, file, tensor)?;
    let n = data_len(&header, limit.saturating_sub(start as u64), file, tensor)?;
    // Grows as data arrives: a header announcing more than the stream holds costs no more
    // memory than the stream.
    let mut data = Vec::new();
    reader
        .take(n as u64)
        .read_to_end(&mut data)
        .map_err(|e| bytes::os("read", file, e))?;
    if data.len() < n {
        return Err(IoError::Truncated {
            file: file.to_string(),
            tensor: tensor.to_string(),
            expected: n as u64,
            available: data.len() as u64,
        }
        .into());
    }
    decode(&header, &data, file, tensor)
}

/// Reads an `.npy` file of any element type.
pub fn load_any(path: impl AsRef<Path>) -> Result<AnyTensor> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let bytes = FileBytes::read_file(path)?;
    parse_any(bytes.as_slice(), &file, "array")
}

/// Reads an `.npy` file of any element type held in `data`.
pub fn from_bytes_any(data: &[u8]) -> Result<AnyTensor> {
    parse_any(data, MEMORY, "array")
}

pub(crate) fn parse_any(data: &[u8], file: &str, tensor: &str) -> Result<AnyTensor> {
    let (header, _) = read_header(data, file, tensor)?;
    with_dtype!(header.dtype, T => parse_bytes::<T>(data, file, tensor).map(AnyTensor::from))
}

/// The header of the `.npy` file held in `data` (its type, shape, order), without the data.
pub fn header(data: &[u8]) -> Result<NpyHeader> {
    header_named(data, MEMORY, "array")
}

/// [`header`] with the names errors show.
pub(crate) fn header_named(data: &[u8], file: &str, tensor: &str) -> Result<NpyHeader> {
    read_header(data, file, tensor).map(|(h, _)| h)
}

/// The bytes of an `.npy` file holding `tensor` (any layout: written row-major).
pub fn to_bytes<'a>(tensor: impl Into<TensorRef<'a>>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_named(&mut out, tensor.into(), MEMORY, "array")?;
    Ok(out)
}

/// Writes `tensor` as an `.npy` file to `writer`.
pub fn write<'a>(writer: impl Write, tensor: impl Into<TensorRef<'a>>) -> Result<()> {
    write_named(writer, tensor.into(), MEMORY, "array")
}

/// Writes `tensor` as the `.npy` file at `path` (created or truncated).
pub fn save<'a>(path: impl AsRef<Path>, tensor: impl Into<TensorRef<'a>>) -> Result<()> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let f = std::fs::File::create(path).map_err(|e| bytes::os("create", &file, e))?;
    let mut w = std::io::BufWriter::new(f);
    write_named(&mut w, tensor.into(), &file, "array")?;
    w.flush().map_err(|e| bytes::os("write", &file, e).into())
}

/// The `.npy` header for `t`, padded to 64 bytes with a final newline, as numpy writes it.
fn header_bytes(t: &TensorRef<'_>, file: &str, tensor: &str) -> Result<Vec<u8>> {
    let code = npy_code(t.dtype).ok_or_else(|| IoError::Unsupported {
        file: file.to_string(),
        format: "npy",
        tensor: tensor.to_string(),
        dtype: t.dtype,
        hint:
            "numpy has no bfloat16: cast to f32 (`x.cast::<f32>()`) or save as safetensors (BF16)",
    })?;
    let order = if t.dtype.size_in_bytes() == 1 {
        '|'
    } else {
        '<'
    };
    let dims: Vec<String> = t.shape.iter().map(usize::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict =
        format!("{{'descr': '{order}{code}', 'fortran_order': False, 'shape': {shape}, }}");
    let v1 = dict.len() + 1 + 10 <= u16::MAX as usize;
    let pre = if v1 { 10 } else { 12 };
    let total = (pre + dict.len() + 1).next_multiple_of(64);
    dict.extend(std::iter::repeat_n(' ', total - pre - dict.len() - 1));
    dict.push('\n');
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        let len = u32::try_from(dict.len()).map_err(|_| bad(file, "header longer than 4 GiB"))?;
        out.extend_from_slice(&len.to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    Ok(out)
}

pub(crate) fn write_named(
    mut w: impl Write,
    t: TensorRef<'_>,
    file: &str,
    tensor: &str,
) -> Result<()> {
    let header = header_bytes(&t, file, tensor)?;
    let data = t.bytes?;
    w.write_all(&header)
        .and_then(|()| w.write_all(&data))
        .map_err(|e| bytes::os("write", file, e).into())
}
