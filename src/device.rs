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

/// Traits no type implements, bounds of the hidden methods that turn a call on the wrong
/// device into a message naming the right call. Not part of the API (a crate-private
/// module): nothing outside can name or implement them.
pub(crate) mod wrong_device {
    mod never {
        pub trait Never {}
    }

    /// The transfers of GPU tensors (`to_device`): implemented by no type. A host tensor has a
    /// hidden `to_device` that requires it, so calling one is a compile error that names
    /// `to_gpu` instead of "no method named `to_device`".
    #[diagnostic::on_unimplemented(
        message = "`{Self}` lives on the host: `to_device` moves tensors between GPUs",
        label = "a method of `Tensor<T, Gpu>`",
        note = "copy a host tensor to a GPU with `.to_gpu(&gpu)?` (`.to_gpu_on(&gpu, &stream)?` on a stream of your own)"
    )]
    pub trait GpuTensorOnly: never::Never {
        /// Never called: no type implements this trait.
        fn absurd<R>(&self) -> R;
    }

    /// The transfers of host tensors (`to_gpu`): implemented by no type. A GPU tensor has a
    /// hidden `to_gpu` that requires it, so calling one is a compile error that names
    /// `to_device` and `to_cpu` instead of "no method named `to_gpu`".
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is on a GPU already: `to_gpu` copies host tensors",
        label = "a method of `Tensor<T, Cpu>`",
        note = "move it to another GPU with `.to_device(&gpu)?`, copy it into a tensor there with `dst.copy_from_peer(&src)?`, or bring it to the host with `.to_cpu()?`"
    )]
    pub trait HostTensorOnly: never::Never {
        /// Never called: no type implements this trait.
        fn absurd<R>(&self) -> R;
    }
}
