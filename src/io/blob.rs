//! A [`Blob`]'s data and diff in a safetensors file, under the keys `<name>.data` and
//! `<name>.diff` (Caffe keeps both in its snapshots; PyTorch's `state_dict` keeps parameters
//! by dotted names the same way), each with the blob's shape.
//!
//! Saving reads both sides on the CPU, so it takes a blob whose data and diff are readable
//! there (the head at the CPU, or synced): a blob whose head is on the GPU is moved first
//! (`into_cpu_data()` / `into_cpu_diff()`), which the type system asks for. Loading gives a
//! CPU blob with both sides current on the CPU (`Blob<T, HeadAtCpu>`), ready for
//! `into_gpu_data()` and friends.

use std::collections::HashMap;
use std::path::Path;

use super::safetensors::{self, SafetensorsFile};
use super::tensor_ref::TensorRef;
use crate::device::Cpu;
use crate::element::Element;
use crate::error::{IoError, Result};
use crate::synced::{Blob, BlobSide, CpuReadable, HeadAtCpu};
use crate::tensor::TensorView;

/// The two entries of a blob, `<name>.data` and `<name>.diff`, to pass to
/// [`safetensors::save`] with other tensors and blobs.
pub fn blob_entries<'a, T, D, G>(
    name: &str,
    blob: &'a Blob<T, D, G>,
) -> Result<[(String, TensorRef<'a>); 2]>
where
    T: Element,
    D: BlobSide,
    G: BlobSide,
    D::Base: CpuReadable,
    G::Base: CpuReadable,
{
    let data: TensorView<'a, T, Cpu> = blob.cpu_data_view()?;
    let diff: TensorView<'a, T, Cpu> = blob.cpu_diff_view()?;
    Ok([
        (format!("{name}.data"), TensorRef::from_view(data)),
        (format!("{name}.diff"), TensorRef::from_view(diff)),
    ])
}

/// Saves one blob as `<name>.data` and `<name>.diff` to the file at `path`.
pub fn save_blob<T, D, G>(
    path: impl AsRef<Path>,
    name: &str,
    blob: &Blob<T, D, G>,
    metadata: Option<&HashMap<String, String>>,
) -> Result<()>
where
    T: Element,
    D: BlobSide,
    G: BlobSide,
    D::Base: CpuReadable,
    G::Base: CpuReadable,
{
    safetensors::save(path, blob_entries(name, blob)?, metadata)
}

impl SafetensorsFile {
    /// The blob `name` (its `<name>.data` and `<name>.diff`, which must have one shape and
    /// hold `T`s), on the CPU with both sides current there.
    pub fn blob<T: Element>(&self, name: &str) -> Result<Blob<T, HeadAtCpu>> {
        let data = self.tensor::<T>(&format!("{name}.data"))?;
        let diff = self.tensor::<T>(&format!("{name}.diff"))?;
        if data.shape() != diff.shape() {
            return Err(IoError::BadBlob {
                file: self.path().to_string(),
                blob: name.to_string(),
                reason: format!(
                    "data of shape {:?}, diff of shape {:?}",
                    data.shape(),
                    diff.shape()
                ),
            }
            .into());
        }
        let shape = data.shape().to_vec();
        let blob = Blob::from_vec(&shape, data.into_vec()).map_err(|e| e.error)?;
        let mut blob = blob.into_cpu_diff_mut().map_err(|e| e.error)?;
        blob.cpu_diff_mut().copy_from_slice(&diff.into_vec());
        Ok(blob)
    }
}

/// The blob `name` of the file at `path` (read into memory).
pub fn load_blob<T: Element>(path: impl AsRef<Path>, name: &str) -> Result<Blob<T, HeadAtCpu>> {
    SafetensorsFile::open(path)?.blob(name)
}
