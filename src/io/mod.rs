//! Tensors on disk: safetensors ([`safetensors`]), numpy's `.npy` ([`npy`]) and `.npz`
//! ([`npz`]), loading straight to a GPU through pinned memory, and Blobs saved with their
//! diffs ([`blob`]).
//!
//! Every reader checks the file before it trusts a number in it: a truncated file, a header
//! that lies about sizes or offsets, overlapping tensors, an unknown element type or a shape
//! whose size overflows is an [`IoError`](crate::error::IoError) naming the file, the tensor
//! and the values, never a panic, a read out of bounds or an allocation larger than the file.
//!
//! ```
//! use std::collections::HashMap;
//! use typestate_tensor::io::{npy, safetensors, SafetensorsFile};
//! use typestate_tensor::Tensor;
//!
//! # fn main() -> typestate_tensor::Result<()> {
//! let dir = std::env::temp_dir().join(format!("tt-io-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let w = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
//! let b = Tensor::from_vec(&[3], vec![1i64, 2, 3])?;
//! let meta = HashMap::from([("format".to_string(), "pt".to_string())]);
//!
//! // Any layout: the transpose is written row-major.
//! let wt = w.t();
//! let path = dir.join("model.safetensors");
//! safetensors::save(&path, [("w", (&w).into()), ("wt", (&wt).into()), ("b", (&b).into())], Some(&meta))?;
//!
//! let file = SafetensorsFile::open(&path)?;
//! assert_eq!(file.metadata()["format"], "pt");
//! let view = file.view::<f32>("wt")?; // borrowed from the file's bytes, no copy
//! assert_eq!(view.shape(), &[3, 2]);
//! assert_eq!(view.to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
//! assert_eq!(file.tensor::<i64>("b")?.to_vec(), vec![1, 2, 3]);
//! assert!(file.tensor::<f32>("b").is_err()); // the file holds i64: a typed error
//!
//! npy::save(dir.join("w.npy"), &w)?;
//! assert_eq!(npy::load::<f32>(dir.join("w.npy"))?.to_vec(), w.to_vec());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok(())
//! # }
//! ```

pub mod blob;
mod bytes;
mod dtype;
mod gpu;
mod header;
pub mod npy;
pub mod npz;
pub mod safetensors;
mod tensor_ref;

pub use dtype::AnyTensor;
pub use safetensors::{SafetensorsFile, TensorInfo, TensorRef};
