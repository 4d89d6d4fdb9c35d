//! [`TensorRef`]: a borrowed tensor of any element type and layout, as the writers take it.

use std::borrow::Cow;

use super::bytes;
use crate::device::Cpu;
use crate::element::{DType, Element};
use crate::error::Result;
use crate::tensor::{ReadRepr, Tensor, TensorView};

/// A tensor to write: a CPU tensor or view of any element type and layout, borrowed. Made by
/// `TensorRef::from(&tensor)` or `(&tensor).into()`; a strided view is written row-major.
pub struct TensorRef<'a> {
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<usize>,
    /// Its little-endian bytes, row-major, or why they could not be gathered.
    pub(crate) bytes: Result<Cow<'a, [u8]>>,
}

impl<'a, T: Element, S: ReadRepr<T, Cpu>> From<&'a Tensor<T, Cpu, S>> for TensorRef<'a> {
    fn from(t: &'a Tensor<T, Cpu, S>) -> TensorRef<'a> {
        TensorRef::from_view(t.view())
    }
}

impl<'a> TensorRef<'a> {
    /// A view to write, borrowed for its own lifetime (`From<&Tensor>` borrows the tensor).
    pub fn from_view<T: Element>(view: TensorView<'a, T, Cpu>) -> TensorRef<'a> {
        // A row-major view of its storage is borrowed as bytes on a little-endian host; any
        // other layout (transposed, stepped, broadcast) is gathered row-major. A broadcast too
        // large for memory is an error at the write, not an abort here.
        let bytes = match view.as_slice() {
            Some(s) if cfg!(target_endian = "little") => Ok(Cow::Borrowed(bytes::as_bytes(s))),
            _ => view.try_to_vec().map(|v| {
                let mut out = Vec::with_capacity(std::mem::size_of_val(&v[..]));
                bytes::encode_le(&v, &mut out);
                Cow::Owned(out)
            }),
        };
        TensorRef {
            dtype: T::DTYPE,
            shape: view.shape().to_vec(),
            bytes,
        }
    }
}

impl std::fmt::Debug for TensorRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorRef")
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .finish()
    }
}
