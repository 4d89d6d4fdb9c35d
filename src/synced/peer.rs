//! Moving a [`SyncedMemory`] to another GPU: Caffe's `device_` made a typed transition.
//!
//! Caffe's `SyncedMemory` records the device its GPU copy lives on (`device_`) and `CHECK`s
//! it on every GPU access; moving data to another GPU means a new memory and a
//! `cudaMemcpyPeer`. Here the memory is tied to one [`Gpu`] (its accelerator), every GPU
//! access checks it ([`GpuError::DeviceMismatch`](crate::error::GpuError::DeviceMismatch)),
//! and [`SyncedMemory::into_gpu_of`] moves it: a consuming transition whose result type says
//! which copy is current, exactly as [`SyncedMemory::into_gpu`] does on the memory's own GPU.
//!
//! | state before | on the new GPU | copies |
//! |---|---|---|
//! | `Uninitialized` | `HeadAtGpu` (allocated zero-filled there) | none |
//! | `HeadAtCpu` | `Synced` (the CPU copy uploaded there; the stale old GPU copy dropped) | one host-to-device |
//! | `HeadAtGpu` | `HeadAtGpu` | one GPU-to-GPU (peer) |
//! | `Synced` | `Synced` (the CPU copy kept) | one GPU-to-GPU (peer) |
//!
//! Everything the move needs is built first (the new device copy, filled); only then is the
//! memory retied, so a failure hands it back exactly as it was (`TransitionError`). The peer
//! copy is queued on the memory's stream (the source's GPU) and ordered on both GPUs by the
//! device buffers themselves (`runtime/peer/`); the old device copy is freed in stream
//! order after it has been read. The memory's stream becomes the new GPU's default stream.

use super::accel::GpuAccel;
use super::host::HostSlot;
use super::raw::RawSynced;
use super::state::{Head, HeadState, ToGpu};
use super::synced_memory::SyncedMemory;
use super::transition_error::TransitionError;
use crate::element::Element;
use crate::error::{Error, StateError};
use crate::runtime::{Gpu, GpuStorage, PeerPath};

/// What moving one memory to another GPU builds before the memory changes.
pub(crate) struct Moved<T: Element> {
    accel: GpuAccel,
    device: GpuStorage<T>,
    head: Head,
    /// Bytes uploaded from the CPU copy (`HeadAtCpu`), if any.
    uploaded: Option<usize>,
    /// Bytes copied from the old GPU copy (`HeadAtGpu`, `Synced`), if any.
    copied: Option<usize>,
}

/// Builds the device copy `raw` (in head `head`) will have on `gpu`: zero-filled for
/// `Uninitialized`, uploaded from the CPU copy for `HeadAtCpu`, copied from the old device
/// copy (on the memory's stream, as `path` says) for `HeadAtGpu` and `Synced`. Changes
/// nothing in `raw`.
pub(crate) fn prepare<T: Element, H: HostSlot<T>>(
    raw: &RawSynced<T, H, GpuAccel>,
    gpu: &Gpu,
    head: Head,
    path: PeerPath,
) -> Result<Moved<T>, Error> {
    const OP: &str = "into_gpu_of";
    let accel = GpuAccel::on_default_stream(gpu);
    let stream = accel.stream().clone();
    let (device, uploaded, copied) = match head {
        Head::Uninitialized => (GpuStorage::zeros(gpu, raw.len(), &stream)?, None, None),
        Head::HeadAtCpu => {
            let Some(host) = raw.host() else {
                unreachable!("invariant 3: HeadAtCpu has a CPU copy");
            };
            let device = GpuStorage::from_host(gpu, host, &stream)?;
            (device, Some(raw.bytes()), None)
        }
        Head::HeadAtGpu | Head::Synced => {
            let (Some(old), Some(old_accel)) = (raw.device(), raw.accel()) else {
                unreachable!("invariants 4, 5 and 6: a GPU-readable head has a device copy");
            };
            let (device, _route) = old.peer_copy(gpu, old_accel.stream(), path)?;
            (device, None, Some(raw.bytes()))
        }
        Head::InFlight => return Err(StateError::PushInFlight { op: OP }.into()),
    };
    Ok(Moved {
        accel,
        device,
        head: next_head(head),
        uploaded,
        copied,
    })
}

/// The head after `into_gpu_of` (the same table as `ToGpu`).
fn next_head(head: Head) -> Head {
    match head {
        Head::Uninitialized => Head::HeadAtGpu,
        Head::HeadAtCpu => Head::Synced,
        other => other,
    }
}

/// Ties `raw` to the new GPU with the device copy `moved` built; cannot fail.
pub(crate) fn commit<T: Element, H: HostSlot<T>>(
    raw: &mut RawSynced<T, H, GpuAccel>,
    moved: Moved<T>,
) {
    let stats = raw.stats_mut();
    stats.device_allocs += 1;
    if let Some(bytes) = moved.uploaded {
        stats.h2d_copies += 1;
        stats.h2d_bytes += bytes;
    }
    if let Some(bytes) = moved.copied {
        stats.peer_copies += 1;
        stats.peer_bytes += bytes;
    }
    raw.retie(moved.accel, Some(moved.device), moved.head);
}

impl<T: Element, S: HeadState, H: HostSlot<T>> SyncedMemory<T, S, H> {
    /// Makes the GPU copy readable on `gpu` and ties the memory to it (Caffe's `device_`,
    /// moved): on the GPU the memory is tied to already (same ordinal) this is
    /// [`into_gpu`](Self::into_gpu); on another GPU the device copy is rebuilt there, with
    /// the same resulting state as `into_gpu` (the table in this module's docs), and the
    /// memory's stream becomes `gpu`'s default stream. CPU-only memory becomes tied to `gpu`.
    /// A GPU-to-GPU copy goes as the destination GPU's [`peer_path`](Gpu::peer_path) says (directly where the GPUs allow
    /// it, else through pinned host memory) and is counted in [`stats`](Self::stats)
    /// (`peer_copies`).
    ///
    /// A failure (out of memory, a driver error) hands the memory back unchanged, still tied
    /// to its GPU.
    ///
    /// ```no_run
    /// use typestate_tensor::gpu::Gpu;
    /// use typestate_tensor::synced::{HeadAtGpu, SyncedMemory};
    ///
    /// # fn main() -> typestate_tensor::Result<()> {
    /// let (g0, g1) = (Gpu::new(0)?, Gpu::new(1)?);
    /// let mut m: SyncedMemory<f32, HeadAtGpu> = SyncedMemory::with_gpu(&g0, 4)?.into_gpu_mut()?;
    /// m.gpu_mut().copy_from_host(&[1.0, 2.0, 3.0, 4.0], g0.default_stream())?;
    /// let m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_of(&g1)?; // one peer copy
    /// assert_eq!(m.gpu().gpu().ordinal(), 1);
    /// assert_eq!(m.stats().peer_copies, 1);
    /// # Ok(()) }
    /// ```
    // `N` rather than `<S as ToGpu>::Next` in the signature: with the projection in the
    // return type, a state without `ToGpu` makes the method vanish from lookup (E0599)
    // instead of reporting the trait's message; `N` is inferred from `S`.
    pub fn into_gpu_of<N: HeadState>(
        self,
        gpu: &Gpu,
    ) -> Result<SyncedMemory<T, N, H>, TransitionError<Self>>
    where
        S: ToGpu<Next = N>,
    {
        match gpu.peer_path() {
            Ok(path) => self.into_gpu_of_via(gpu, path),
            Err(e) => Err(TransitionError::new(self, e)),
        }
    }

    /// [`into_gpu_of`](Self::into_gpu_of), with the GPU-to-GPU copy going as `path` says.
    /// With [`PeerPath::Staged`] the device copy is rebuilt even on the same GPU (through
    /// pinned host memory), which tests the staged path on one GPU.
    pub fn into_gpu_of_via<N: HeadState>(
        mut self,
        gpu: &Gpu,
        path: PeerPath,
    ) -> Result<SyncedMemory<T, N, H>, TransitionError<Self>>
    where
        S: ToGpu<Next = N>,
    {
        let here = self.gpu_device().map(Gpu::ordinal) == Some(gpu.ordinal());
        if here && path == PeerPath::Auto {
            return self.into_gpu();
        }
        match prepare(&self.raw, gpu, S::HEAD, path) {
            Ok(moved) => {
                debug_assert_eq!(moved.head, N::HEAD);
                commit(&mut self.raw, moved);
                Ok(SyncedMemory::from_raw(self.raw))
            }
            Err(e) => Err(TransitionError::new(self, e)),
        }
    }
}
