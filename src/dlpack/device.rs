//! [`DlpackDevice`]: the devices whose tensors cross DLPack ([`Cpu`], [`Gpu`]), and what each
//! does differently: where its memory is, how an import holds foreign memory, and the
//! stream handshake (the GPU's; host memory needs none).

use std::ptr::NonNull;

use super::ffi::{DLDevice, DLDeviceType};
use crate::device::Cpu;
use crate::element::Element;
use crate::error::{DlpackError, Error, Result};
use crate::runtime::buffer::GpuStorage;
use crate::runtime::device::Gpu;
use crate::runtime::foreign_stream::{device_of_address, ForeignStream};
use crate::runtime::stream::Stream;
use crate::tensor::Backend;

/// A consumer's stream in the handshake: one of ours, or one another library owns. (`pub`
/// for the sealed trait's signatures; this module is private, so nothing outside names it.)
#[derive(Clone, Debug)]
pub enum Consumer {
    /// One of this crate's streams.
    Ours(Stream),
    /// A stream another library owns.
    Foreign(ForeignStream),
}

pub(crate) mod sealed {
    use super::*;

    /// The per-device machinery behind [`DlpackDevice`](super::DlpackDevice). Sealed: only
    /// this module implements it, and what unsafe code relies on (the addresses, the
    /// adopted memory) comes from here alone.
    pub trait DlpackImpl: Backend {
        /// An import's memory on this device: it borrows as [`Backend::Slice`] and, when
        /// dropped, releases the memory to its producer (after the work queued on it).
        type Memory<T: Element>: Send + Sync;

        /// The DLPack device of storage on `self`.
        fn dl_device(&self) -> DLDevice;

        /// The address of element 0 of `storage` (0 for empty storage).
        fn storage_addr<T: Element>(storage: &Self::Storage<T>) -> u64;

        /// The handshake: `consumer` waits for the work on `storage` it must see (the last
        /// write; and every read since when it may `write`).
        fn order_consumer<T: Element>(
            storage: &Self::Storage<T>,
            consumer: &Consumer,
            write: bool,
        ) -> Result<()>;

        /// Before the export's storage is let go: later work of ours on it (and the
        /// allocator's reuse of it) waits for the work queued on `consumers` so far.
        fn hold_back<T: Element>(storage: &Self::Storage<T>, consumers: &[Consumer]) -> Result<()>;

        /// Records an error met where none can be returned (a deleter): the GPU's error slot
        /// ([`Gpu::check_err`]); dropped on the host, which has none to meet.
        fn record_error(&self, e: Error);

        /// Checks that a DLPack tensor on `device` can be read here.
        fn check_dl_device(&self, op: &'static str, device: DLDevice, addr: u64) -> Result<()>;

        /// Takes foreign memory over.
        ///
        /// # Safety
        ///
        /// `[addr, addr + len * size_of::<T>())` is memory of this device (for the GPU:
        /// ordered for work queued on `self`'s default stream from now on), aligned for `T`,
        /// holding `len` valid `T`s, that stays allocated and unwritten by others until
        /// `owner` drops; if `writable`, nobody else reads it until then either.
        unsafe fn adopt<T: Element>(
            &self,
            addr: u64,
            len: usize,
            owner: Box<dyn Send + Sync>,
        ) -> Result<Self::Memory<T>>;

        /// The memory, borrowed as a view's storage.
        fn memory<T: Element>(memory: &Self::Memory<T>) -> &Self::Slice<T>;

        /// The memory, borrowed writable.
        fn memory_mut<T: Element>(memory: &mut Self::Memory<T>) -> &mut Self::Slice<T>;
    }
}

/// A device whose tensors can be exported to and imported from DLPack: [`Cpu`] (host memory,
/// `kDLCPU`; imports of `kDLCUDAHost` too) and [`Gpu`] (`kDLCUDA` of its ordinal). Sealed.
pub trait DlpackDevice: sealed::DlpackImpl {}

impl DlpackDevice for Cpu {}
impl DlpackDevice for Gpu {}

/// Host memory of an import (`kDLCPU`, `kDLCUDAHost`): what a [`DlpackTensor<T,
/// Cpu>`](super::DlpackTensor) borrows its views from.
///
/// Invariant: `ptr` points to `len` valid, aligned `T`s (dangling when `len == 0`) that stay
/// allocated, and are written by nobody else, until `_owner` drops.
pub struct HostMemory<T: Element> {
    ptr: NonNull<T>,
    len: usize,
    _owner: Box<dyn Send + Sync>,
}

// SAFETY: the memory is a `[T]` owned through `_owner` (itself `Send + Sync`); it is shared
// (`&self`) or written (`&mut self`) exactly as a `Box<[T]>` would be, and `T: Send + Sync`
// (every `Element` is).
unsafe impl<T: Element> Send for HostMemory<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Element> Sync for HostMemory<T> {}

impl sealed::DlpackImpl for Cpu {
    type Memory<T: Element> = HostMemory<T>;

    fn dl_device(&self) -> DLDevice {
        DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0,
        }
    }

    fn storage_addr<T: Element>(storage: &Vec<T>) -> u64 {
        if storage.is_empty() {
            0
        } else {
            storage.as_ptr() as u64
        }
    }

    fn order_consumer<T: Element>(_: &Vec<T>, _: &Consumer, _: bool) -> Result<()> {
        Ok(())
    }

    fn hold_back<T: Element>(_: &Vec<T>, _: &[Consumer]) -> Result<()> {
        Ok(())
    }

    fn record_error(&self, _: Error) {}

    fn check_dl_device(&self, op: &'static str, device: DLDevice, _addr: u64) -> Result<()> {
        match device.device_type {
            DLDeviceType::CPU | DLDeviceType::CUDA_HOST => Ok(()),
            other => Err(mismatch(op, "cpu".to_owned(), device, other)),
        }
    }

    unsafe fn adopt<T: Element>(
        &self,
        addr: u64,
        len: usize,
        owner: Box<dyn Send + Sync>,
    ) -> Result<HostMemory<T>> {
        let ptr = match NonNull::new(addr as usize as *mut T) {
            Some(p) if len > 0 => p,
            _ => NonNull::dangling(),
        };
        Ok(HostMemory {
            ptr,
            len,
            _owner: owner,
        })
    }

    fn memory<T: Element>(m: &HostMemory<T>) -> &[T] {
        // SAFETY: `HostMemory`'s invariant: `len` valid aligned `T`s at `ptr` (or a dangling
        // pointer and 0), alive while `m` is borrowed, written by nobody else.
        unsafe { std::slice::from_raw_parts(m.ptr.as_ptr(), m.len) }
    }

    fn memory_mut<T: Element>(m: &mut HostMemory<T>) -> &mut [T] {
        // SAFETY: as in `memory`; `&mut m` makes this the only borrow of the memory.
        unsafe { std::slice::from_raw_parts_mut(m.ptr.as_ptr(), m.len) }
    }
}

impl sealed::DlpackImpl for Gpu {
    type Memory<T: Element> = GpuStorage<T>;

    fn dl_device(&self) -> DLDevice {
        DLDevice {
            device_type: DLDeviceType::CUDA,
            // Ordinals come from `cuDeviceGet(int)`, so they fit.
            device_id: i32::try_from(self.ordinal()).unwrap_or(i32::MAX),
        }
    }

    fn storage_addr<T: Element>(storage: &GpuStorage<T>) -> u64 {
        storage.device_ptr()
    }

    fn order_consumer<T: Element>(
        storage: &GpuStorage<T>,
        consumer: &Consumer,
        write: bool,
    ) -> Result<()> {
        match consumer {
            Consumer::Ours(s) => {
                let pending = storage.pending_streams();
                let count = if write { pending.len() } else { 1 };
                for p in pending.iter().take(count) {
                    s.wait_stream(p)?;
                }
                Ok(())
            }
            Consumer::Foreign(f) => storage.order_foreign(f, write),
        }
    }

    fn hold_back<T: Element>(storage: &GpuStorage<T>, consumers: &[Consumer]) -> Result<()> {
        // The home stream (where the allocator reuses the memory) and the streams a later
        // access of ours waits for (the last writer, the readers since).
        let mut ours = storage.pending_streams();
        if !ours.contains(storage.stream()) {
            ours.push(storage.stream().clone());
        }
        for s in &ours {
            for c in consumers {
                match c {
                    Consumer::Ours(c) => s.wait_stream(c)?,
                    Consumer::Foreign(f) => f.hold_back(s)?,
                }
            }
        }
        Ok(())
    }

    fn record_error(&self, e: Error) {
        self.errors().record(e);
    }

    fn check_dl_device(&self, op: &'static str, device: DLDevice, addr: u64) -> Result<()> {
        let ordinal = i32::try_from(self.ordinal()).unwrap_or(i32::MAX);
        if device.device_type != DLDeviceType::CUDA || device.device_id != ordinal {
            return Err(mismatch(
                op,
                crate::device::Device::name(self),
                device,
                device.device_type,
            ));
        }
        // The driver's own record of the address: a host pointer labelled `kDLCUDA`, or memory
        // of another GPU, is refused before anything is launched on it.
        if addr != 0 {
            let at = device_of_address(self, addr)?;
            if at != ordinal {
                let got = DLDevice {
                    device_type: DLDeviceType::CUDA,
                    device_id: at,
                };
                return Err(mismatch(
                    op,
                    crate::device::Device::name(self),
                    got,
                    got.device_type,
                ));
            }
        }
        Ok(())
    }

    unsafe fn adopt<T: Element>(
        &self,
        addr: u64,
        len: usize,
        owner: Box<dyn Send + Sync>,
    ) -> Result<GpuStorage<T>> {
        // SAFETY: this function's contract is `from_foreign`'s, for the default stream.
        unsafe { GpuStorage::from_foreign(self, addr, len, self.default_stream(), owner) }
    }

    fn memory<T: Element>(m: &GpuStorage<T>) -> &GpuStorage<T> {
        m
    }

    fn memory_mut<T: Element>(m: &mut GpuStorage<T>) -> &mut GpuStorage<T> {
        m
    }
}

fn mismatch(op: &'static str, expected: String, got: DLDevice, ty: DLDeviceType) -> Error {
    DlpackError::DeviceMismatch {
        op,
        expected,
        got: ty.name(),
        got_type: got.device_type.0,
        got_id: got.device_id,
    }
    .into()
}
