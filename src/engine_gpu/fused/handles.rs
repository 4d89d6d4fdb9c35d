//! Type-erased handles to the storage of a fused kernel's operands: the leaves' element
//! types differ, and one launch takes them all.

use crate::element::Element;
use crate::error::Error;
use crate::runtime::{GpuStorage, Stream};

/// A leaf's storage, read by a fused kernel. Implemented by [`GpuStorage`] only.
pub trait ReadBuffer: Send + Sync {
    /// Orders a read on `stream` ([`GpuStorage`]'s stream order).
    fn order_read(&self, op: &'static str, stream: &Stream) -> Result<(), Error>;
    /// The device address of element 0.
    fn address(&self) -> u64;
    /// The length in elements.
    fn elements(&self) -> usize;
}

/// An output's storage, written by a fused kernel. Implemented by [`GpuStorage`] only.
pub trait WriteBuffer: Send + Sync {
    /// Orders a write on `stream`.
    fn order_write(&mut self, op: &'static str, stream: &Stream) -> Result<(), Error>;
    /// The device address of element 0, for writing.
    fn address_mut(&mut self) -> u64;
    /// The length in elements.
    fn elements(&self) -> usize;
}

impl<T: Element> ReadBuffer for GpuStorage<T> {
    fn order_read(&self, op: &'static str, stream: &Stream) -> Result<(), Error> {
        self.access_read(op, stream)
    }
    fn address(&self) -> u64 {
        self.device_ptr()
    }
    fn elements(&self) -> usize {
        self.len()
    }
}

impl<T: Element> WriteBuffer for GpuStorage<T> {
    fn order_write(&mut self, op: &'static str, stream: &Stream) -> Result<(), Error> {
        self.access_write(op, stream)
    }
    fn address_mut(&mut self) -> u64 {
        self.device_ptr_mut()
    }
    fn elements(&self) -> usize {
        self.len()
    }
}
