//! Devices: where a tensor's memory lives, as a type parameter.
//!
//! `Tensor<T, Cpu>` and `Tensor<T, Gpu>` are different types, so an op that mixes devices
//! does not compile; moving data between them is an explicit copy.

use crate::element::Element;

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// A place tensor memory can live. Sealed: [`Cpu`] and [`crate::gpu::Gpu`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a device",
    note = "devices are `Cpu` and `Gpu`"
)]
pub trait Device: sealed::Sealed + Clone + std::fmt::Debug + Send + Sync + 'static {
    /// Owned memory for `len` elements of `T` on this device.
    type Storage<T: Element>: Storage<T>;
    /// Human-readable name for messages (`"cpu"`, `"cuda:0"`).
    fn name(&self) -> String;
}

/// Owned, contiguous memory of one device that a [`crate::layout::Layout`] indexes into.
pub trait Storage<T: Element>: Send + Sync {
    /// Number of elements.
    fn len(&self) -> usize;
    /// Whether it holds no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The host CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cpu;

impl sealed::Sealed for Cpu {}

impl Device for Cpu {
    type Storage<T: Element> = Vec<T>;
    fn name(&self) -> String {
        "cpu".to_owned()
    }
}

impl<T: Element> Storage<T> for Vec<T> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
}

static_assertions::assert_eq_size!(Cpu, ());
