//! Moving a [`Blob`] to another GPU: both sides at once (invariant 3: one GPU or none).

use super::{Blob, BlobSide, OwnedSide};
use crate::element::Element;
use crate::runtime::{Gpu, PeerPath};
use crate::synced::peer::{commit, prepare};
use crate::synced::state::{Head, HeadState, ToGpu};
use crate::synced::synced_memory::SyncedMemory;
use crate::synced::transition_error::TransitionError;

impl<T: Element, D: BlobSide, G: BlobSide> Blob<T, D, G> {
    /// Moves both sides to `gpu` ([`SyncedMemory::into_gpu_of`] for the data and the diff):
    /// each side ends in the state `into_gpu_data()` / `into_gpu_diff()` would give, on
    /// `gpu`, and the blob's transitions then copy on `gpu`'s default stream. On the blob's
    /// own GPU this is `into_gpu_data()` then `into_gpu_diff()`. GPU-to-GPU copies go as
    /// the destination GPU's [`peer_path`](Gpu::peer_path) says. Shared ([`Frozen`](super::Frozen)) sides cannot move:
    /// thaw them first.
    ///
    /// Both sides are rebuilt on `gpu` before either changes, so a failure hands the blob
    /// back as it was, with both sides on their old GPU.
    ///
    /// ```no_run
    /// use typestate_tensor::gpu::Gpu;
    /// use typestate_tensor::synced::{Blob, HeadAtCpu, HeadAtGpu, Synced};
    ///
    /// # fn main() -> typestate_tensor::Result<()> {
    /// let (g0, g1) = (Gpu::new(0)?, Gpu::new(1)?);
    /// let mut b = Blob::<f32, _>::with_gpu(&g0, &[2, 3])?.into_cpu_data_mut()?.into_gpu_diff_mut()?;
    /// b.cpu_data_mut().copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// let b: Blob<f32, Synced, HeadAtGpu> = b.into_gpu_of(&g1)?;
    /// assert_eq!(b.gpu_device().map(Gpu::ordinal), Some(1));
    /// # Ok(()) }
    /// ```
    ///
    /// (The next states are the parameters `D2` and `G2`, inferred from `D` and `G`, rather
    /// than projections in the return type, so that a side without `ToGpu` reports the
    /// trait's message.)
    pub fn into_gpu_of<D2: HeadState, G2: HeadState>(
        self,
        gpu: &Gpu,
    ) -> Result<Blob<T, D2, G2>, TransitionError<Self>>
    where
        D: OwnedSide,
        G: OwnedSide,
        D::Base: ToGpu<Next = D2>,
        G::Base: ToGpu<Next = G2>,
    {
        match gpu.peer_path() {
            Ok(path) => self.into_gpu_of_via(gpu, path),
            Err(e) => Err(TransitionError::new(self, e)),
        }
    }

    /// [`into_gpu_of`](Self::into_gpu_of), with GPU-to-GPU copies going as `path` says
    /// ([`PeerPath::Staged`] rebuilds both sides through pinned host memory even on the
    /// blob's own GPU).
    pub fn into_gpu_of_via<D2: HeadState, G2: HeadState>(
        self,
        gpu: &Gpu,
        path: PeerPath,
    ) -> Result<Blob<T, D2, G2>, TransitionError<Self>>
    where
        D: OwnedSide,
        G: OwnedSide,
        D::Base: ToGpu<Next = D2>,
        G::Base: ToGpu<Next = G2>,
    {
        let here = self.gpu_device().map(Gpu::ordinal) == Some(gpu.ordinal());
        let Blob { shape, data, diff } = self;
        let data = D::into_owned(data);
        let diff = G::into_owned(diff);
        let back = |data: SyncedMemory<T, D::Base>, diff: SyncedMemory<T, G::Base>| Blob {
            shape: shape.clone(),
            data: D::from_owned(data),
            diff: G::from_owned(diff),
        };
        if here && path == PeerPath::Auto {
            let data = match data.into_gpu() {
                Ok(d) => d,
                Err(e) => {
                    let (data, error) = e.into_parts();
                    return Err(TransitionError::new(back(data, diff), error));
                }
            };
            return match diff.into_gpu() {
                Ok(diff) => Ok(Blob {
                    shape: shape.clone(),
                    data,
                    diff,
                }),
                Err(e) => {
                    let (diff, error) = e.into_parts();
                    Err(TransitionError::new(back(undo_into_gpu(data), diff), error))
                }
            };
        }
        let prepared = prepare(&data.raw, gpu, D::HEAD, path)
            .and_then(|d| Ok((d, prepare(&diff.raw, gpu, G::HEAD, path)?)));
        match prepared {
            Ok((moved_data, moved_diff)) => {
                let (mut data, mut diff) = (data, diff);
                commit(&mut data.raw, moved_data);
                commit(&mut diff.raw, moved_diff);
                Ok(Blob {
                    shape: shape.clone(),
                    data: data.retype(),
                    diff: diff.retype(),
                })
            }
            Err(error) => Err(TransitionError::new(back(data, diff), error)),
        }
    }
}

/// Takes a side that `into_gpu` moved from state `S` on its own GPU back to `S`, with its
/// data as it was: `Uninitialized` drops the zero-filled device copy just allocated;
/// `HeadAtCpu` (now `Synced`) keeps the device copy, which `HeadAtCpu` counts as stale; the
/// GPU-readable states did not change.
fn undo_into_gpu<T: Element, S: ToGpu>(
    mem: SyncedMemory<T, <S as ToGpu>::Next>,
) -> SyncedMemory<T, S> {
    let mut mem = mem;
    if S::HEAD == Head::Uninitialized {
        if let Some(accel) = mem.raw.accel().cloned() {
            mem.raw.retie(accel, None, Head::Uninitialized);
        }
    }
    mem.retype()
}
