//! [`DynBlob`]: a blob whose sides' states are known only at run time, for collections of
//! blobs in different states (a net's).

use super::side::AnySide;
use super::{Blob, BlobShape, BlobSide};
use crate::element::Element;
use crate::error::StateError;
use crate::synced::state::Head;
use crate::synced::transition_error::TransitionError;
use crate::synced::TransferStats;

/// A side's state at run time: its head, and whether it is shared ([`super::Frozen`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SideState {
    /// The head.
    pub head: Head,
    /// Whether the side is frozen and shared.
    pub frozen: bool,
}

impl SideState {
    /// The state's type name, e.g. `"HeadAtCpu"` or `"Frozen<Synced>"`.
    pub const fn name(self) -> &'static str {
        if !self.frozen {
            return self.head.name();
        }
        match self.head {
            Head::Uninitialized => "Frozen<Uninitialized>",
            Head::HeadAtCpu => "Frozen<HeadAtCpu>",
            Head::HeadAtGpu => "Frozen<HeadAtGpu>",
            Head::Synced => "Frozen<Synced>",
            Head::InFlight => "Frozen<InFlight>",
        }
    }

    fn of<S: BlobSide>() -> Self {
        SideState {
            head: S::HEAD,
            frozen: S::FROZEN,
        }
    }
}

/// A [`Blob`] with its sides' states stored as values (stm32's `DynamicPin`, for blobs).
///
/// Invariants: each stored [`SideState`] is the truth about its memory, as the type
/// parameters of a [`Blob`] would be; the memories meet [`Blob`]'s invariants 1 and 3.
pub struct DynBlob<T: Element> {
    // Boxed: a failed conversion hands the blob back inside an error that stays small.
    inner: Box<DynInner<T>>,
}

struct DynInner<T: Element> {
    shape: BlobShape,
    data: (SideState, AnySide<T>),
    diff: (SideState, AnySide<T>),
}

impl<T: Element> DynBlob<T> {
    pub(super) fn from_sides(
        shape: BlobShape,
        data: (Head, AnySide<T>),
        diff: (Head, AnySide<T>),
    ) -> Self {
        let state = |(head, side): (Head, AnySide<T>)| {
            let frozen = matches!(side, AnySide::Shared(_));
            (SideState { head, frozen }, side)
        };
        DynBlob {
            inner: Box::new(DynInner {
                shape,
                data: state(data),
                diff: state(diff),
            }),
        }
    }

    /// The shape.
    pub fn shape(&self) -> &BlobShape {
        &self.inner.shape
    }

    /// Number of elements.
    pub fn count(&self) -> usize {
        self.inner.shape.count()
    }

    /// The data side's state.
    pub fn data_state(&self) -> SideState {
        self.inner.data.0
    }

    /// The diff side's state.
    pub fn diff_state(&self) -> SideState {
        self.inner.diff.0
    }

    /// Copies and allocations made by the data memory.
    pub fn data_stats(&self) -> TransferStats {
        self.inner.data.1.raw().stats()
    }

    /// Copies and allocations made by the diff memory.
    pub fn diff_stats(&self) -> TransferStats {
        self.inner.diff.1.raw().stats()
    }

    /// Converts back to the typed `Blob<T, D, G>`, or hands the value back with
    /// [`StateError::WrongState`] naming the first side that does not match.
    pub fn try_into_blob<D: BlobSide, G: BlobSide>(
        self,
    ) -> Result<Blob<T, D, G>, TransitionError<Self>> {
        for (want, have) in [
            (SideState::of::<D>(), self.inner.data.0),
            (SideState::of::<G>(), self.inner.diff.0),
        ] {
            if want != have {
                let error = StateError::WrongState {
                    expected: want.name(),
                    actual: have.name(),
                };
                return Err(TransitionError::new(self, error));
            }
        }
        let DynInner { shape, data, diff } = *self.inner;
        // The states matched, so the ownerships (owned vs shared) match too.
        match (D::from_any(data.1), G::from_any(diff.1)) {
            (Ok(data), Ok(diff)) => Ok(Blob { shape, data, diff }),
            _ => unreachable!("the frozen flags were compared above"),
        }
    }
}

impl<T: Element, D: BlobSide, G: BlobSide> From<Blob<T, D, G>> for DynBlob<T> {
    fn from(b: Blob<T, D, G>) -> Self {
        b.erase()
    }
}

impl<T: Element> std::fmt::Debug for DynBlob<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynBlob")
            .field("dtype", &T::DTYPE)
            .field("shape", &self.inner.shape.to_string())
            .field("data", &self.inner.data.0.name())
            .field("diff", &self.inner.diff.0.name())
            .finish()
    }
}

static_assertions::assert_impl_all!(DynBlob<f32>: Send, Sync);
