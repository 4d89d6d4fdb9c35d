//! What a blob's data or diff side can be: an owned memory in a head state, or a shared,
//! frozen one ([`Frozen`]).

use std::marker::PhantomData;
use std::sync::Arc;

use crate::element::Element;
use crate::synced::accel::GpuAccel;
use crate::synced::host::OwnedHost;
use crate::synced::raw::RawSynced;
use crate::synced::shared::SharedMemory;
use crate::synced::state::{Head, HeadState};
use crate::synced::synced_memory::SyncedMemory;

/// A blob side shared read-only with other blobs, frozen in state `S` (see
/// [`crate::synced::SharedMemory`]). Reads follow `S`; writes and transitions need the side
/// back in its head state (`thaw_data()` / `thaw_diff()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Frozen<S: HeadState>(PhantomData<S>);

// The sealed-trait pattern: `SideImpl` is public (a supertrait of `BlobSide`) but lives in a
// module users cannot name, so they can neither implement it nor call its methods; its
// signatures may mention crate-private types.
#[allow(private_interfaces)]
pub(crate) mod private {
    use super::*;

    /// The memory a side holds, and how to reach its run-time body.
    pub trait SideImpl {
        /// `SyncedMemory<T, S>` for a head state, `SharedMemory<T, S>` for `Frozen<S>`.
        type Slot<T: Element>: Send + Sync;
        /// The run-time body.
        fn raw<T: Element>(slot: &Self::Slot<T>) -> &RawSynced<T, OwnedHost<T>, GpuAccel>;
        /// The body with its ownership, for erasure.
        fn into_any<T: Element>(slot: Self::Slot<T>) -> AnySide<T>;
        /// Back from erasure, if the ownership matches (the caller checked the head).
        fn from_any<T: Element>(side: AnySide<T>) -> Result<Self::Slot<T>, AnySide<T>>;
    }

    /// An owned side's slot is the memory itself: these are identities for head states.
    pub trait OwnedImpl: super::BlobSide {
        fn into_owned<T: Element>(slot: Self::Slot<T>) -> SyncedMemory<T, Self::Base>;
        fn from_owned<T: Element>(mem: SyncedMemory<T, Self::Base>) -> Self::Slot<T>;
        fn owned_mut<T: Element>(slot: &mut Self::Slot<T>) -> &mut SyncedMemory<T, Self::Base>;
    }
}
use private::{OwnedImpl, SideImpl};

/// A side's memory with its ownership known only at run time.
pub(crate) enum AnySide<T: Element> {
    Owned(Box<RawSynced<T, OwnedHost<T>, GpuAccel>>),
    Shared(Arc<RawSynced<T, OwnedHost<T>, GpuAccel>>),
}

impl<T: Element> AnySide<T> {
    pub(crate) fn raw(&self) -> &RawSynced<T, OwnedHost<T>, GpuAccel> {
        match self {
            AnySide::Owned(r) => r,
            AnySide::Shared(r) => r,
        }
    }
}

/// The state of a blob's data or diff: a head state (owned memory) or [`Frozen`] (shared).
/// Sealed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a state of a blob side",
    note = "blob sides are `Uninitialized`, `HeadAtCpu`, `HeadAtGpu`, `Synced`, `InFlight`, or `Frozen<_>` of one of them"
)]
pub trait BlobSide: SideImpl + Send + Sync + 'static {
    /// The head state reads are checked against (`S` for both `S` and `Frozen<S>`).
    type Base: HeadState;
    /// Whether the side is shared.
    const FROZEN: bool;
    /// The head at run time.
    const HEAD: Head = <Self::Base as HeadState>::HEAD;
}

#[allow(private_interfaces)] // see `private`
impl<S: HeadState> SideImpl for S {
    type Slot<T: Element> = SyncedMemory<T, S>;
    fn raw<T: Element>(slot: &SyncedMemory<T, S>) -> &RawSynced<T, OwnedHost<T>, GpuAccel> {
        &slot.raw
    }
    fn into_any<T: Element>(slot: SyncedMemory<T, S>) -> AnySide<T> {
        AnySide::Owned(slot.raw)
    }
    fn from_any<T: Element>(side: AnySide<T>) -> Result<SyncedMemory<T, S>, AnySide<T>> {
        match side {
            AnySide::Owned(raw) => Ok(SyncedMemory::from_raw(raw)),
            shared => Err(shared),
        }
    }
}
impl<S: HeadState> BlobSide for S {
    type Base = S;
    const FROZEN: bool = false;
}

/// Blob sides the blob owns, in a head state: only these can be written or change state.
/// A [`Frozen`] side is shared read-only until thawed.
#[diagnostic::on_unimplemented(
    message = "this blob side is shared read-only (`{Self}`): it cannot be written or change state",
    label = "other blobs read this memory and rely on its state",
    note = "call `.thaw_data()` / `.thaw_diff()` first: it hands the side back in its head state once no other blob shares it"
)]
pub trait OwnedSide: OwnedImpl {}

impl<S: HeadState> OwnedImpl for S {
    fn into_owned<T: Element>(slot: SyncedMemory<T, S>) -> SyncedMemory<T, S> {
        slot
    }
    fn from_owned<T: Element>(mem: SyncedMemory<T, S>) -> SyncedMemory<T, S> {
        mem
    }
    fn owned_mut<T: Element>(slot: &mut SyncedMemory<T, S>) -> &mut SyncedMemory<T, S> {
        slot
    }
}
impl<S: HeadState> OwnedSide for S {}

#[allow(private_interfaces)] // see `private`
impl<S: HeadState> SideImpl for Frozen<S> {
    type Slot<T: Element> = SharedMemory<T, S>;
    fn raw<T: Element>(slot: &SharedMemory<T, S>) -> &RawSynced<T, OwnedHost<T>, GpuAccel> {
        &slot.raw
    }
    fn into_any<T: Element>(slot: SharedMemory<T, S>) -> AnySide<T> {
        AnySide::Shared(slot.raw)
    }
    fn from_any<T: Element>(side: AnySide<T>) -> Result<SharedMemory<T, S>, AnySide<T>> {
        match side {
            AnySide::Shared(raw) => Ok(SharedMemory::from_arc(raw)),
            owned => Err(owned),
        }
    }
}
impl<S: HeadState> BlobSide for Frozen<S> {
    type Base = S;
    const FROZEN: bool = true;
}

static_assertions::assert_eq_size!(Frozen<crate::synced::Synced>, ());

/// A side's state at run time: its head, and whether it is shared ([`Frozen`]).
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

    pub(crate) fn of<S: BlobSide>() -> Self {
        SideState {
            head: S::HEAD,
            frozen: S::FROZEN,
        }
    }
}
