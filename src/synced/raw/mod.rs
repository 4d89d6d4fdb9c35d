//! The head state machine over run-time values: Caffe's `to_cpu` / `to_gpu` /
//! `mutable_*_data`, written once and shared by the typed [`super::SyncedMemory`] (which
//! passes its state's [`Head`] constant) and the erased [`super::AnySyncedMemory`] (which
//! stores the head).
//!
//! Every transition takes the current head and returns the next one; on error it returns the
//! error and the caller keeps the old head. What a failed transition may leave behind is a
//! newly allocated, unused side (kept for the retry); the data and the head are untouched.

use super::accel::Accel;
use super::host::{HostBuffer, HostSlot, OwnsHost};
use super::state::Head;
use crate::element::Element;
use crate::error::{Error, StateError};
use crate::layout::checked_bytes;

/// Copies and allocations one memory has made since it was created.
///
/// Copies count whole-buffer transfers made by transitions (a zero-length memory still counts
/// its logical copies); allocations count buffers the memory allocated itself, not adopted or
/// borrowed ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferStats {
    /// Host-to-device copies.
    pub h2d_copies: usize,
    /// Bytes copied host to device.
    pub h2d_bytes: usize,
    /// Device-to-host copies.
    pub d2h_copies: usize,
    /// Bytes copied device to host.
    pub d2h_bytes: usize,
    /// CPU buffers allocated (zero-filled).
    pub host_allocs: usize,
    /// GPU buffers allocated (zero-filled).
    pub device_allocs: usize,
    /// Copies of the GPU copy to another GPU (`into_gpu_of`).
    pub peer_copies: usize,
    /// Bytes copied to another GPU.
    pub peer_bytes: usize,
}

impl TransferStats {
    /// Copies in any direction (host to device, device to host, device to device).
    pub fn copies(&self) -> usize {
        self.h2d_copies + self.d2h_copies + self.peer_copies
    }
}

/// The run-time body of a synced memory.
///
/// Invariants (relative to the head the owner holds):
/// 1. `host`, when allocated, and `device`, when allocated, hold exactly `len` elements, and
///    `len * size_of::<T>()` fits in `isize`.
/// 2. `Uninitialized`: `device` is `None`; `host` is `None` unless borrowed or adopted.
/// 3. `HeadAtCpu`: `host` is allocated and holds the data.
/// 4. `HeadAtGpu`: `device` is allocated and holds the data.
/// 5. `Synced` and `InFlight`: both are allocated and hold the data (for `InFlight`, once the
///    queued copy has completed).
/// 6. `device` is `Some` only if `accel` is `Some`.
/// 7. `device_newer` is true exactly when the head is `HeadAtGpu` (the device copy holds data
///    the CPU copy lacks): every transition here and [`replace_device`](Self::replace_device)
///    keep it so. When `H` is a borrowed buffer, `Drop` then copies the device copy into it,
///    so the caller's buffer always ends up with the newest data.
pub(crate) struct RawSynced<T: Element, H: HostSlot<T>, A: Accel> {
    len: usize,
    bytes: usize,
    host: H,
    device: Option<A::Buf<T>>,
    accel: Option<A>,
    stats: TransferStats,
    device_newer: bool,
}

impl<T: Element, H: HostSlot<T>, A: Accel> RawSynced<T, H, A> {
    /// A memory of `len` elements with the given CPU slot, tied to `accel` if given.
    pub(crate) fn new(
        op: &'static str,
        len: usize,
        host: H,
        accel: Option<A>,
    ) -> Result<Self, Error> {
        let bytes = checked_bytes(op, &[len], std::mem::size_of::<T>())?;
        Ok(RawSynced {
            len,
            bytes,
            host,
            device: None,
            accel,
            stats: TransferStats::default(),
            device_newer: false,
        })
    }

    /// A memory whose CPU side is already present in `host` (adopted or borrowed); its
    /// length is the buffer's. Cannot overflow: a live slice's byte size fits in `isize`.
    pub(crate) fn from_host_buffer(host: H, accel: Option<A>) -> Self {
        let (len, bytes) = match host.get() {
            Some(s) => (s.len(), std::mem::size_of_val(s)),
            None => (0, 0),
        };
        RawSynced {
            len,
            bytes,
            host,
            device: None,
            accel,
            stats: TransferStats::default(),
            device_newer: false,
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn stats(&self) -> TransferStats {
        self.stats
    }

    pub(crate) fn accel(&self) -> Option<&A> {
        self.accel.as_ref()
    }

    pub(crate) fn host(&self) -> Option<&[T]> {
        self.host.get()
    }

    pub(crate) fn host_mut(&mut self) -> Option<&mut [T]> {
        self.host.get_mut()
    }

    pub(crate) fn host_slot(&self) -> &H {
        &self.host
    }

    pub(crate) fn host_slot_mut(&mut self) -> &mut H {
        &mut self.host
    }

    /// The CPU slot, taken out. Callers hand back the slot in a state whose CPU copy is
    /// current (after [`write_back`](Self::write_back) for `HeadAtGpu`), so `Drop` has
    /// nothing left to copy.
    pub(crate) fn into_host_slot(mut self) -> H {
        self.device_newer = false;
        self.host.take_slot()
    }

    pub(crate) fn device(&self) -> Option<&A::Buf<T>> {
        self.device.as_ref()
    }

    #[cfg(test)]
    pub(crate) fn device_mut(&mut self) -> Option<&mut A::Buf<T>> {
        self.device.as_mut()
    }

    /// The device copy, mutably, beside the device it lives on (a borrow of each field).
    /// Only for states holding a device copy, which implies a device (invariant 6).
    pub(crate) fn device_mut_and_accel(&mut self) -> (&mut A::Buf<T>, &A) {
        match (&mut self.device, &self.accel) {
            (Some(d), Some(a)) => (d, a),
            _ => unreachable!("invariant 6: a device copy implies a device"),
        }
    }

    /// Replaces the device buffer (adoption), which becomes the head; returns the old one.
    pub(crate) fn replace_device(&mut self, buf: A::Buf<T>) -> Option<A::Buf<T>> {
        self.device_newer = true;
        self.device.replace(buf)
    }

    /// Ties the memory to another device, `accel`, with `device` as its device copy, in head
    /// `head` (the caller built `device` so that `head`'s invariants hold with the CPU copy
    /// as it is); the old device copy is dropped. Keeps invariant 7.
    pub(crate) fn retie(&mut self, accel: A, device: Option<A::Buf<T>>, head: Head) {
        self.accel = Some(accel);
        self.device = device;
        self.device_newer = head == Head::HeadAtGpu;
    }

    /// The counts, for transitions written outside this module (`into_gpu_of`).
    pub(crate) fn stats_mut(&mut self) -> &mut TransferStats {
        &mut self.stats
    }

    /// Keeps invariant 7 after a transition.
    fn noted(&mut self, next: Result<Head, Error>) -> Result<Head, Error> {
        if let Ok(head) = next {
            self.device_newer = head == Head::HeadAtGpu;
        }
        next
    }

    /// Copies the device copy into the CPU copy if the device copy is newer (head
    /// `HeadAtGpu`), leaving the head to the caller: the typed owner hands the buffer back
    /// after it, and `Drop` uses it for a borrowed buffer. A no-op in every other state.
    pub(crate) fn write_back(&mut self) -> Result<(), Error> {
        if !self.device_newer {
            return Ok(());
        }
        self.ensure_host()?;
        let (Some(accel), Some(device), Some(host)) =
            (&self.accel, &self.device, self.host.get_mut())
        else {
            unreachable!(
                "invariants 4, 6 and 7: the device copy is newer, a CPU copy was just ensured"
            );
        };
        accel.download(device, host)?;
        self.stats.d2h_copies += 1;
        self.stats.d2h_bytes += self.bytes;
        self.device_newer = false;
        Ok(())
    }

    /// The CPU copy, allocating it (zero-filled; pinned when tied to a GPU) if absent.
    fn ensure_host(&mut self) -> Result<&mut [T], Error> {
        let (len, accel) = (self.len, &self.accel);
        let (slice, allocated) = self.host.get_or_try_alloc(|| match accel {
            Some(a) => a.alloc_host(len),
            None => HostBuffer::zeroed_plain(len),
        })?;
        if allocated {
            self.stats.host_allocs += 1;
        }
        Ok(slice)
    }

    /// The device copy, allocating it zero-filled if absent.
    fn ensure_device(&mut self, op: &'static str) -> Result<(), Error> {
        let accel = self.accel.as_ref().ok_or(StateError::NoGpu { op })?;
        if self.device.is_none() {
            self.device = Some(accel.alloc_device(self.len)?);
            self.stats.device_allocs += 1;
        }
        Ok(())
    }

    /// Caffe's `to_cpu()`.
    pub(crate) fn ensure_cpu_readable(&mut self, head: Head) -> Result<Head, Error> {
        let next = self.cpu_step(head);
        self.noted(next)
    }

    fn cpu_step(&mut self, head: Head) -> Result<Head, Error> {
        const OP: &str = "to_cpu";
        match head {
            Head::Uninitialized => {
                // A borrowed or adopted buffer in this state holds ignored values: Caffe
                // zero-fills on this transition.
                self.ensure_host()?.fill(T::ZERO);
                Ok(Head::HeadAtCpu)
            }
            Head::HeadAtGpu => {
                self.ensure_host()?;
                let (Some(accel), Some(device), Some(host)) =
                    (&self.accel, &self.device, self.host.get_mut())
                else {
                    unreachable!("invariants 4 and 6: HeadAtGpu has a device copy, and a CPU copy was just ensured");
                };
                accel.download(device, host)?;
                self.stats.d2h_copies += 1;
                self.stats.d2h_bytes += self.bytes;
                Ok(Head::Synced)
            }
            Head::HeadAtCpu | Head::Synced => Ok(head),
            Head::InFlight => Err(StateError::PushInFlight { op: OP }.into()),
        }
    }

    /// Caffe's `to_gpu()`.
    pub(crate) fn ensure_gpu_readable(&mut self, head: Head) -> Result<Head, Error> {
        let next = self.gpu_step(head);
        self.noted(next)
    }

    fn gpu_step(&mut self, head: Head) -> Result<Head, Error> {
        const OP: &str = "to_gpu";
        match head {
            Head::Uninitialized => {
                // Device allocations are zero-filled by the accelerator.
                self.ensure_device(OP)?;
                Ok(Head::HeadAtGpu)
            }
            Head::HeadAtCpu => {
                self.ensure_device(OP)?;
                let (Some(accel), Some(device), Some(host)) =
                    (&self.accel, &mut self.device, self.host.get())
                else {
                    unreachable!("invariants 3 and 6: HeadAtCpu has a CPU copy, and a device was just ensured");
                };
                accel.upload(host, device)?;
                self.stats.h2d_copies += 1;
                self.stats.h2d_bytes += self.bytes;
                Ok(Head::Synced)
            }
            Head::HeadAtGpu | Head::Synced => Ok(head),
            Head::InFlight => Err(StateError::PushInFlight { op: OP }.into()),
        }
    }

    /// Caffe's `mutable_cpu_data()`: `to_cpu()`, then the CPU side is the head.
    pub(crate) fn make_cpu_head(&mut self, head: Head) -> Result<Head, Error> {
        let next = self.cpu_step(head).map(|_| Head::HeadAtCpu);
        self.noted(next)
    }

    /// Caffe's `mutable_gpu_data()`: `to_gpu()`, then the GPU side is the head.
    pub(crate) fn make_gpu_head(&mut self, head: Head) -> Result<Head, Error> {
        let next = self.gpu_step(head).map(|_| Head::HeadAtGpu);
        self.noted(next)
    }
}

/// A borrowed CPU buffer gets the newest data back when the memory goes (invariant 7): one
/// blocking device-to-host copy if the device copy is newer. A failure cannot be returned
/// from here, so it is recorded with the device ([`Accel::record_err`], `Gpu::check_err`)
/// and the buffer keeps its old values; `release()` is the form that returns the error.
impl<T: Element, H: HostSlot<T>, A: Accel> Drop for RawSynced<T, H, A> {
    fn drop(&mut self) {
        if !H::BORROWED || !self.device_newer {
            return;
        }
        if let Err(e) = self.write_back() {
            if let Some(accel) = &self.accel {
                accel.record_err(e);
            }
        }
    }
}

impl<T: Element, H: OwnsHost<T>, A: Accel> RawSynced<T, H, A> {
    /// Caffe's `async_gpu_push(stream)` from `HeadAtCpu`: allocates the device copy if
    /// needed and queues the upload on `stream`. The caller's head becomes `InFlight`.
    pub(crate) fn push(&mut self, stream: &A::Stream) -> Result<Head, Error> {
        const OP: &str = "async_gpu_push";
        self.ensure_device(OP)?;
        let (Some(accel), Some(device), Some(host)) =
            (&self.accel, &mut self.device, self.host.buffer())
        else {
            unreachable!("invariants 3 and 6: HeadAtCpu has a CPU copy; a device was ensured");
        };
        accel.upload_async(host, device, stream)?;
        self.stats.h2d_copies += 1;
        self.stats.h2d_bytes += self.bytes;
        self.device_newer = false;
        Ok(Head::InFlight)
    }

    /// Waits for a queued push: `InFlight -> Synced`.
    pub(crate) fn wait_push(&self) -> Result<Head, Error> {
        if let (Some(accel), Some(host)) = (&self.accel, self.host.buffer()) {
            accel.wait_host(host)?;
        }
        Ok(Head::Synced)
    }

    /// The device copy for work on `stream`, ordered after a queued push.
    pub(crate) fn device_after(&self, stream: &A::Stream) -> Result<&A::Buf<T>, Error> {
        let (Some(accel), Some(device), Some(host)) =
            (&self.accel, &self.device, self.host.buffer())
        else {
            unreachable!("invariant 5: InFlight has both copies");
        };
        accel.order_after(host, device, stream)?;
        Ok(device)
    }
}

#[cfg(test)]
mod tests {
    use super::super::accel::{SimAccel, SimOp};
    use super::super::host::OwnedHost;
    use super::*;
    use proptest::prelude::*;

    type Raw = RawSynced<f32, OwnedHost<f32>, SimAccel>;

    fn raw(len: usize) -> (Raw, SimAccel) {
        let sim = SimAccel::default();
        let r = Raw::new("test", len, OwnedHost::empty(), Some(sim.clone())).unwrap();
        (r, sim)
    }

    fn stats(h2d: usize, d2h: usize, host: usize, dev: usize, bytes: usize) -> TransferStats {
        TransferStats {
            h2d_copies: h2d,
            h2d_bytes: h2d * bytes,
            d2h_copies: d2h,
            d2h_bytes: d2h * bytes,
            host_allocs: host,
            device_allocs: dev,
            ..TransferStats::default()
        }
    }

    /// Caffe's documented walkthrough, step by step, starting from data written on the CPU.
    #[test]
    fn caffe_walkthrough_copies_exactly_where_documented() {
        let n = 7;
        let (mut m, _) = raw(n);
        let mut h = m.make_cpu_head(Head::Uninitialized).unwrap();
        let data: Vec<f32> = (0..n).map(|i| i as f32 * 1.5 - 2.0).collect();
        m.host_mut().unwrap().copy_from_slice(&data);
        let b = n * 4;
        // (call, head after, h2d so far, d2h so far)
        type Step = fn(&mut Raw, Head) -> Result<Head, Error>;
        let steps: [(Step, Head, usize, usize); 9] = [
            (Raw::ensure_gpu_readable, Head::Synced, 1, 0), // gpu_data: copied cpu->gpu
            (Raw::ensure_cpu_readable, Head::Synced, 1, 0), // cpu_data: none
            (Raw::make_gpu_head, Head::HeadAtGpu, 1, 0),    // mutable_gpu_data: none
            (Raw::make_gpu_head, Head::HeadAtGpu, 1, 0),    // mutable_gpu_data again: none
            (Raw::ensure_cpu_readable, Head::Synced, 1, 1), // cpu_data: copied gpu->cpu
            (Raw::ensure_gpu_readable, Head::Synced, 1, 1), // gpu_data: none
            (Raw::make_cpu_head, Head::HeadAtCpu, 1, 1),    // mutable_cpu_data: none
            (Raw::make_gpu_head, Head::HeadAtGpu, 2, 1),    // mutable_gpu_data: copied cpu->gpu
            (Raw::make_cpu_head, Head::HeadAtCpu, 2, 2),    // mutable_cpu_data: copied gpu->cpu
        ];
        for (i, (step, want, h2d, d2h)) in steps.into_iter().enumerate() {
            h = step(&mut m, h).unwrap();
            assert_eq!(h, want, "step {i}");
            assert_eq!(m.stats(), stats(h2d, d2h, 1, 1, b), "step {i}");
        }
        assert_eq!(m.host().unwrap(), &data[..]);
        assert_eq!(m.device().unwrap(), &data);
    }

    #[test]
    fn push_counts_one_upload_and_waits_to_synced() {
        let (mut m, sim) = raw(3);
        let h = m.make_cpu_head(Head::Uninitialized).unwrap();
        m.host_mut().unwrap().copy_from_slice(&[4.0, -5.0, 6.5]);
        sim.fail_next(SimOp::Upload);
        assert!(
            m.push(&()).is_err(),
            "a failed push leaves the caller's head"
        );
        assert_eq!(m.stats().h2d_copies, 0);
        assert_eq!(m.push(&()).unwrap(), Head::InFlight);
        assert_eq!(m.device_after(&()).unwrap(), &vec![4.0, -5.0, 6.5]);
        assert_eq!(m.wait_push().unwrap(), Head::Synced);
        assert_eq!(m.stats(), stats(1, 0, 1, 1, 12));
        assert_eq!(h, Head::HeadAtCpu);
    }

    #[test]
    fn lazy_sides_are_zero_filled_and_allocated_once() {
        let (mut m, _) = raw(5);
        assert_eq!(
            m.ensure_gpu_readable(Head::Uninitialized).unwrap(),
            Head::HeadAtGpu
        );
        assert!(m.host().is_none(), "CPU side stays unallocated");
        assert_eq!(m.device().unwrap(), &vec![0.0; 5]);
        assert_eq!(
            m.ensure_cpu_readable(Head::HeadAtGpu).unwrap(),
            Head::Synced
        );
        assert_eq!(m.host().unwrap(), &[0.0; 5]);
        assert_eq!(m.stats(), stats(0, 1, 1, 1, 20));
    }

    #[test]
    fn failed_transitions_keep_head_data_and_counts() {
        let (mut m, sim) = raw(4);
        let h = m.make_cpu_head(Head::Uninitialized).unwrap();
        m.host_mut()
            .unwrap()
            .copy_from_slice(&[1.0, -2.0, 3.5, 9.0]);
        for op in [SimOp::AllocDevice, SimOp::Upload] {
            sim.fail_next(op);
            let before = m.stats();
            assert!(m.ensure_gpu_readable(h).is_err(), "{op:?}");
            assert_eq!(m.stats().h2d_copies, before.h2d_copies);
            assert_eq!(m.host().unwrap(), &[1.0, -2.0, 3.5, 9.0]);
        }
        // The retry succeeds and copies once.
        assert_eq!(m.make_gpu_head(h).unwrap(), Head::HeadAtGpu);
        assert_eq!(m.stats().h2d_copies, 1);
        m.device_mut().unwrap()[2] = -7.0;
        sim.fail_next(SimOp::Download);
        assert!(m.ensure_cpu_readable(Head::HeadAtGpu).is_err());
        assert_eq!(
            m.ensure_cpu_readable(Head::HeadAtGpu).unwrap(),
            Head::Synced
        );
        assert_eq!(m.host().unwrap(), &[1.0, -2.0, -7.0, 9.0]);
        assert_eq!(m.stats().d2h_copies, 1);
    }

    #[test]
    fn host_allocation_failure_is_an_error() {
        let (mut m, sim) = raw(3);
        sim.fail_next(SimOp::AllocHost);
        assert!(m.ensure_cpu_readable(Head::Uninitialized).is_err());
        assert!(m.host().is_none());
        assert_eq!(m.stats(), TransferStats::default());
    }

    #[test]
    fn gpu_side_without_gpu_is_a_typed_error() {
        let mut m = Raw::new("test", 3, OwnedHost::empty(), None).unwrap();
        let err = m.ensure_gpu_readable(Head::Uninitialized).unwrap_err();
        assert!(
            matches!(err, Error::State(StateError::NoGpu { .. })),
            "{err}"
        );
        assert_eq!(
            m.ensure_cpu_readable(Head::Uninitialized).unwrap(),
            Head::HeadAtCpu
        );
        assert!(!m.host_slot().buffer().unwrap().is_pinned());
    }

    type Borrowed<'a> = RawSynced<f32, &'a mut [f32], SimAccel>;

    fn borrowed<'a>(buf: &'a mut [f32], sim: &SimAccel) -> Borrowed<'a> {
        RawSynced::from_host_buffer(buf, Some(sim.clone()))
    }

    /// A borrowed buffer dropped with the head on the device gets the device's data back.
    #[test]
    fn borrowed_buffer_gets_the_newest_data_on_drop() {
        let sim = SimAccel::default();
        let mut buf = vec![1.0f32, 2.0, 3.0];
        {
            let mut m = borrowed(&mut buf, &sim);
            let h = m.make_gpu_head(Head::HeadAtCpu).unwrap();
            assert_eq!(h, Head::HeadAtGpu);
            m.device_mut().unwrap()[1] = -20.0;
        }
        assert_eq!(buf, [1.0, -20.0, 3.0]);
        assert!(sim.take_recorded().is_none());

        // Through every path to a device head: Uninitialized -> HeadAtGpu, adoption.
        {
            let mut m = borrowed(&mut buf, &sim);
            m.ensure_gpu_readable(Head::Uninitialized).unwrap();
        }
        assert_eq!(
            buf, [0.0; 3],
            "an Uninitialized memory's device copy is zeros"
        );
        {
            let mut m = borrowed(&mut buf, &sim);
            m.replace_device(vec![7.0, 8.0, 9.0]);
        }
        assert_eq!(buf, [7.0, 8.0, 9.0]);
    }

    /// In every other state the buffer is current: dropping copies nothing (an armed
    /// download failure stays armed and nothing is recorded).
    #[test]
    fn borrowed_buffer_in_a_cpu_state_is_left_alone() {
        let sim = SimAccel::default();
        let mut buf = vec![1.0f32, 2.0];
        {
            let mut m = borrowed(&mut buf, &sim);
            let h = m.make_gpu_head(Head::HeadAtCpu).unwrap();
            m.device_mut().unwrap()[0] = 5.0;
            let h = m.ensure_cpu_readable(h).unwrap();
            assert_eq!(h, Head::Synced);
            let h = m.make_cpu_head(h).unwrap();
            m.host_mut().unwrap()[1] = 6.0;
            assert_eq!((h, m.stats().d2h_copies), (Head::HeadAtCpu, 1));
            sim.fail_next(SimOp::Download);
        }
        assert_eq!(
            buf,
            [5.0, 6.0],
            "no stale device copy overwrote the CPU write"
        );
        assert!(sim.take_recorded().is_none());
        let mut scratch = [0.0f32; 1];
        assert!(
            sim.download(&vec![1.0], &mut scratch).is_err(),
            "still armed"
        );
    }

    /// A failed write-back on drop is recorded with the device, never a panic; the buffer
    /// keeps its old values.
    #[test]
    fn failed_write_back_on_drop_is_recorded() {
        let sim = SimAccel::default();
        let mut buf = vec![1.0f32, 2.0];
        {
            let mut m = borrowed(&mut buf, &sim);
            m.make_gpu_head(Head::HeadAtCpu).unwrap();
            m.device_mut().unwrap()[0] = 9.0;
            sim.fail_next(SimOp::Download);
        }
        assert_eq!(buf, [1.0, 2.0]);
        let err = sim.take_recorded().expect("the drop recorded its error");
        assert!(err.to_string().contains("Download"), "{err}");
    }

    /// The consuming form returns the error and keeps the memory, then succeeds.
    #[test]
    fn write_back_then_hand_back() {
        let sim = SimAccel::default();
        let mut buf = vec![1.0f32, 2.0];
        let mut m = borrowed(&mut buf, &sim);
        m.make_gpu_head(Head::HeadAtCpu).unwrap();
        m.device_mut().unwrap()[1] = 4.0;
        sim.fail_next(SimOp::Download);
        assert!(m.write_back().is_err());
        assert_eq!(m.host().unwrap(), &[1.0, 2.0]);
        m.write_back().unwrap();
        assert_eq!(m.stats().d2h_copies, 1);
        m.write_back().unwrap();
        assert_eq!(
            m.stats().d2h_copies,
            1,
            "once current, nothing more to copy"
        );
        let back = m.into_host_slot();
        assert_eq!(back, &[1.0, 4.0]);
        assert!(sim.take_recorded().is_none());
    }

    /// Owned memory is never copied back on drop: nobody else sees its CPU buffer.
    #[test]
    fn owned_memory_is_not_written_back() {
        let (mut m, sim) = raw(2);
        m.make_gpu_head(Head::Uninitialized).unwrap();
        sim.fail_next(SimOp::Download);
        drop(m);
        assert!(sim.take_recorded().is_none());
        let mut scratch = [0.0f32; 1];
        assert!(
            sim.download(&vec![1.0], &mut scratch).is_err(),
            "still armed"
        );
    }

    #[test]
    fn byte_size_overflow_is_rejected_at_construction() {
        let r = Raw::new("test", usize::MAX / 2, OwnedHost::empty(), None);
        assert!(matches!(r, Err(Error::Layout(_))));
    }

    /// An independent model of Caffe's machine: head, newest values, copies made.
    #[derive(Debug)]
    struct Model {
        head: Head,
        cpu: Option<Vec<f32>>,
        gpu: Option<Vec<f32>>,
        h2d: usize,
        d2h: usize,
    }

    #[derive(Clone, Debug)]
    enum Step {
        CpuData,
        GpuData,
        MutableCpu(usize, f32),
        MutableGpu(usize, f32),
    }

    fn step_strategy(n: usize) -> impl Strategy<Value = Step> {
        prop_oneof![
            Just(Step::CpuData),
            Just(Step::GpuData),
            (0..n, -100.0f32..100.0).prop_map(|(i, v)| Step::MutableCpu(i, v)),
            (0..n, -100.0f32..100.0).prop_map(|(i, v)| Step::MutableGpu(i, v)),
        ]
    }

    impl Model {
        fn cpu_data(&mut self, n: usize) {
            match self.head {
                Head::Uninitialized => {
                    self.cpu = Some(vec![0.0; n]);
                    self.head = Head::HeadAtCpu;
                }
                Head::HeadAtGpu => {
                    self.cpu = self.gpu.clone();
                    self.d2h += 1;
                    self.head = Head::Synced;
                }
                _ => {}
            }
        }
        fn gpu_data(&mut self, n: usize) {
            match self.head {
                Head::Uninitialized => {
                    self.gpu = Some(vec![0.0; n]);
                    self.head = Head::HeadAtGpu;
                }
                Head::HeadAtCpu => {
                    self.gpu = self.cpu.clone();
                    self.h2d += 1;
                    self.head = Head::Synced;
                }
                _ => {}
            }
        }
    }

    proptest! {
        /// Random call sequences with writes on both sides against the model: same head,
        /// same copy counts, and the readable side always holds the model's values.
        #[test]
        fn machine_matches_caffe_model(n in 1usize..9, steps in prop::collection::vec(step_strategy(8), 0..40)) {
            let (mut m, _) = raw(n);
            let mut head = Head::Uninitialized;
            let mut model = Model { head, cpu: None, gpu: None, h2d: 0, d2h: 0 };
            for s in steps {
                match s {
                    Step::CpuData => { head = m.ensure_cpu_readable(head).unwrap(); model.cpu_data(n); }
                    Step::GpuData => { head = m.ensure_gpu_readable(head).unwrap(); model.gpu_data(n); }
                    Step::MutableCpu(i, v) => {
                        head = m.make_cpu_head(head).unwrap();
                        model.cpu_data(n);
                        model.head = Head::HeadAtCpu;
                        m.host_mut().unwrap()[i % n] = v;
                        model.cpu.as_mut().unwrap()[i % n] = v;
                    }
                    Step::MutableGpu(i, v) => {
                        head = m.make_gpu_head(head).unwrap();
                        model.gpu_data(n);
                        model.head = Head::HeadAtGpu;
                        m.device_mut().unwrap()[i % n] = v;
                        model.gpu.as_mut().unwrap()[i % n] = v;
                    }
                }
                prop_assert_eq!(head, model.head);
                prop_assert_eq!(m.stats().h2d_copies, model.h2d);
                prop_assert_eq!(m.stats().d2h_copies, model.d2h);
                if head.cpu_readable() {
                    prop_assert_eq!(m.host().unwrap(), &model.cpu.as_ref().unwrap()[..]);
                }
                if head.gpu_readable() {
                    prop_assert_eq!(m.device().unwrap(), model.gpu.as_ref().unwrap());
                }
            }
        }
    }
}
