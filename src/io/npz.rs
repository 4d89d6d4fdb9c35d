//! numpy's `.npz` files: a zip of `.npy` files, one per array (`np.savez`,
//! `np.savez_compressed`). [`save`] writes one (stored, or deflated with
//! [`Compression::Deflated`]); [`NpzFile`] reads one, stored or deflated.
//!
//! An entry's `.npy` data is checked against the size the zip's directory declares for it, so
//! a lying header cannot make the reader allocate more than the archive says the entry holds
//! (a deflated entry can still legitimately expand to its declared size).

use std::collections::HashSet;
use std::io::{Cursor, Read, Seek, Write};
use std::path::Path;

use zip::result::ZipError;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use super::bytes;
use super::dtype::{with_dtype, AnyTensor};
use super::npy::{self, NpyHeader};
use super::safetensors::MEMORY;
use super::tensor_ref::TensorRef;
use crate::element::Element;
use crate::error::{IoError, Result};
use crate::tensor::Tensor;

/// How [`save`] stores the arrays.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Uncompressed (`np.savez`).
    #[default]
    Stored,
    /// Deflated (`np.savez_compressed`).
    Deflated,
}

fn zip_error(file: &str, e: ZipError) -> IoError {
    match e {
        ZipError::Io(source) => bytes::os("read", file, source),
        other => IoError::BadHeader {
            file: file.to_string(),
            format: "npz",
            reason: other.to_string(),
        },
    }
}

/// Writes `tensors` to `writer` as an `.npz` archive (entries `<name>.npy`).
pub fn write<'a, N: AsRef<str>>(
    writer: impl Write + Seek,
    tensors: impl IntoIterator<Item = (N, TensorRef<'a>)>,
    compression: Compression,
) -> Result<()> {
    write_named(writer, tensors, compression, MEMORY)
}

fn write_named<'a, N: AsRef<str>>(
    writer: impl Write + Seek,
    tensors: impl IntoIterator<Item = (N, TensorRef<'a>)>,
    compression: Compression,
    file: &str,
) -> Result<()> {
    let method = match compression {
        Compression::Stored => CompressionMethod::Stored,
        Compression::Deflated => CompressionMethod::Deflated,
    };
    let write_err = |e: ZipError| match e {
        ZipError::Io(source) => bytes::os("write", file, source),
        other => IoError::BadHeader {
            file: file.to_string(),
            format: "npz",
            reason: other.to_string(),
        },
    };
    let mut zip = ZipWriter::new(writer);
    let mut seen = HashSet::new();
    for (name, t) in tensors {
        let name = name.as_ref();
        if !seen.insert(name.to_string()) {
            return Err(IoError::DuplicateName {
                file: file.to_string(),
                tensor: name.to_string(),
            }
            .into());
        }
        let mut data = Vec::new();
        npy::write_named(&mut data, t, file, name)?;
        let options = SimpleFileOptions::default()
            .compression_method(method)
            .large_file(data.len() as u64 >= u32::MAX as u64);
        zip.start_file(format!("{name}.npy"), options)
            .map_err(write_err)?;
        zip.write_all(&data)
            .map_err(|e| bytes::os("write", file, e))?;
    }
    zip.finish().map_err(write_err)?;
    Ok(())
}

/// Writes `tensors` as the `.npz` file at `path` (created or truncated).
pub fn save<'a, N: AsRef<str>>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = (N, TensorRef<'a>)>,
    compression: Compression,
) -> Result<()> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let f = std::fs::File::create(path).map_err(|e| bytes::os("create", &file, e))?;
    write_named(std::io::BufWriter::new(f), tensors, compression, &file)
}

/// The bytes of an `.npz` archive holding `tensors`.
pub fn to_bytes<'a, N: AsRef<str>>(
    tensors: impl IntoIterator<Item = (N, TensorRef<'a>)>,
    compression: Compression,
) -> Result<Vec<u8>> {
    let mut out = Cursor::new(Vec::new());
    write_named(&mut out, tensors, compression, MEMORY)?;
    Ok(out.into_inner())
}

/// An `.npz` archive opened for reading: list its arrays ([`names`](Self::names)), read one
/// ([`tensor`](Self::tensor), [`tensor_any`](Self::tensor_any)) or all
/// ([`read_all`](Self::read_all)).
pub struct NpzFile {
    file: String,
    archive: ZipArchive<Cursor<Vec<u8>>>,
    names: Vec<String>,
}

impl NpzFile {
    /// Reads the archive at `path` into memory and its directory.
    pub fn open(path: impl AsRef<Path>) -> Result<NpzFile> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let mut data = Vec::new();
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut data))
            .map_err(|e| bytes::os("read", &file, e))?;
        Self::new(file, data)
    }

    /// An archive held in memory.
    pub fn from_bytes(data: Vec<u8>) -> Result<NpzFile> {
        Self::new(MEMORY.to_string(), data)
    }

    fn new(file: String, data: Vec<u8>) -> Result<NpzFile> {
        let archive = ZipArchive::new(Cursor::new(data)).map_err(|e| zip_error(&file, e))?;
        let mut names = Vec::new();
        for name in archive.file_names() {
            let name = name.map_err(|e| zip_error(&file, e))?;
            // numpy names arrays `<name>.npy`; anything else in the zip is not an array.
            if let Some(stem) = name.strip_suffix(".npy") {
                names.push(stem.to_string());
            }
        }
        Ok(NpzFile {
            file,
            archive,
            names,
        })
    }

    /// The arrays' names (entry names without `.npy`), in archive order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The entry of `name`, its declared size, opened for reading.
    fn entry(&mut self, name: &str) -> Result<(zip::read::ZipFile<'_, Cursor<Vec<u8>>>, u64)> {
        if !self.names.iter().any(|n| n == name) {
            return Err(IoError::NotFound {
                file: self.file.clone(),
                tensor: name.to_string(),
                available: self.names.iter().take(16).cloned().collect(),
            }
            .into());
        }
        let file = self.file.clone();
        let entry = self
            .archive
            .by_name(&format!("{name}.npy"))
            .map_err(|e| zip_error(&file, e))?;
        let size = entry.size();
        Ok((entry, size))
    }

    /// The header of the array `name` (type, shape, order), reading only its first bytes.
    pub fn header(&mut self, name: &str) -> Result<NpyHeader> {
        let file = self.file.clone();
        let (entry, size) = self.entry(name)?;
        // A header is at most 1 MiB + 12 bytes (`npy`'s limit).
        let mut head = Vec::new();
        entry
            .take(size.min((1 << 20) + 12))
            .read_to_end(&mut head)
            .map_err(|e| bytes::os("read", &file, e))?;
        npy::header_named(&head, &file, name)
    }

    /// The array `name` as a tensor of `T` ([`IoError::DTypeMismatch`] names the file's type
    /// otherwise).
    pub fn tensor<T: Element>(&mut self, name: &str) -> Result<Tensor<T>> {
        let file = self.file.clone();
        let (entry, size) = self.entry(name)?;
        npy::read_named(entry, &file, name, size)
    }

    /// The array `name`, of whatever type it holds.
    pub fn tensor_any(&mut self, name: &str) -> Result<AnyTensor> {
        let dtype = self.header(name)?.dtype;
        with_dtype!(dtype, T => self.tensor::<T>(name).map(AnyTensor::from))
    }

    /// Every array, in archive order.
    pub fn read_all(&mut self) -> Result<Vec<(String, AnyTensor)>> {
        let names = self.names.clone();
        names
            .into_iter()
            .map(|n| self.tensor_any(&n).map(|t| (n, t)))
            .collect()
    }
}

impl std::fmt::Debug for NpzFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzFile")
            .field("file", &self.file)
            .field("names", &self.names)
            .finish()
    }
}
