//! The seam between the head state machine and a device: the few calls the machine makes.
//!
//! [`RawSynced`](super::raw::RawSynced) is generic over an [`Accel`] so the machine's logic
//! (when to allocate, when to copy, what to count) is tested in CI against [`SimAccel`]
//! (host vectors standing in for device memory, with failure injection), and runs on the GPU
//! through the `Gpu` implementation, the one place this module calls the GPU runtime.

use super::host::HostBuffer;
use crate::element::Element;
use crate::error::Error;

/// What the state machine needs from a device: zero-filled allocations on both sides and
/// blocking copies. Every call is fallible and leaves its arguments valid on failure.
pub(crate) trait Accel: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// Device memory of `T`.
    type Buf<T: Element>: Send + Sync;
    /// Zero-filled device memory of `len` elements.
    fn alloc_device<T: Element>(&self, len: usize) -> Result<Self::Buf<T>, Error>;
    /// Zero-filled host memory of `len` elements suited to copies with this device (pinned).
    fn alloc_host<T: Element>(&self, len: usize) -> Result<HostBuffer<T>, Error>;
    /// Copies `src` into `dst` (same length), returning when done.
    fn upload<T: Element>(&self, src: &[T], dst: &mut Self::Buf<T>) -> Result<(), Error>;
    /// Copies `src` into `dst` (same length), returning when done.
    fn download<T: Element>(&self, src: &Self::Buf<T>, dst: &mut [T]) -> Result<(), Error>;
}

/// Stands in for the GPU runtime until `crate::gpu` provides `Gpu` and `GpuStorage`: a
/// device that cannot exist, so no memory can be tied to it.
#[derive(Clone, Copy, Debug)]
pub enum NoGpu {}

impl Accel for NoGpu {
    type Buf<T: Element> = std::convert::Infallible;
    fn alloc_device<T: Element>(&self, _len: usize) -> Result<Self::Buf<T>, Error> {
        match *self {}
    }
    fn alloc_host<T: Element>(&self, _len: usize) -> Result<HostBuffer<T>, Error> {
        match *self {}
    }
    fn upload<T: Element>(&self, _src: &[T], _dst: &mut Self::Buf<T>) -> Result<(), Error> {
        match *self {}
    }
    fn download<T: Element>(&self, _src: &Self::Buf<T>, _dst: &mut [T]) -> Result<(), Error> {
        match *self {}
    }
}

/// The device that typed memories are tied to.
pub(crate) type GpuAccel = NoGpu;

#[cfg(test)]
pub(crate) use sim::{SimAccel, SimOp};

#[cfg(test)]
mod sim {
    use super::*;
    use crate::error::{AllocError, GpuError};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    /// Host vectors standing in for device memory. `fail_next(op)` makes the next call of
    /// that kind fail, to test that failed transitions leave the memory unchanged.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct SimAccel {
        fail: Arc<AtomicU32>,
    }

    /// Which call to fail (bit flags in `SimAccel::fail`).
    #[derive(Clone, Copy, Debug)]
    pub(crate) enum SimOp {
        AllocDevice = 1,
        AllocHost = 2,
        Upload = 4,
        Download = 8,
    }

    impl SimAccel {
        pub(crate) fn fail_next(&self, op: SimOp) {
            self.fail.fetch_or(op as u32, Ordering::SeqCst);
        }

        fn check(&self, op: SimOp) -> Result<(), Error> {
            let bit = op as u32;
            if self.fail.fetch_and(!bit, Ordering::SeqCst) & bit == 0 {
                return Ok(());
            }
            Err(match op {
                SimOp::AllocDevice | SimOp::AllocHost => {
                    Error::Alloc(AllocError::Source(format!("simulated failure of {op:?}")))
                }
                SimOp::Upload | SimOp::Download => Error::Gpu(GpuError::Driver {
                    call: "simulated copy",
                    message: format!("simulated failure of {op:?}"),
                }),
            })
        }
    }

    impl Accel for SimAccel {
        type Buf<T: Element> = Vec<T>;
        fn alloc_device<T: Element>(&self, len: usize) -> Result<Vec<T>, Error> {
            self.check(SimOp::AllocDevice)?;
            Ok(vec![T::ZERO; len])
        }
        fn alloc_host<T: Element>(&self, len: usize) -> Result<HostBuffer<T>, Error> {
            self.check(SimOp::AllocHost)?;
            HostBuffer::zeroed_plain(len)
        }
        fn upload<T: Element>(&self, src: &[T], dst: &mut Vec<T>) -> Result<(), Error> {
            self.check(SimOp::Upload)?;
            dst.copy_from_slice(src);
            Ok(())
        }
        fn download<T: Element>(&self, src: &Vec<T>, dst: &mut [T]) -> Result<(), Error> {
            self.check(SimOp::Download)?;
            dst.copy_from_slice(src);
            Ok(())
        }
    }
}
