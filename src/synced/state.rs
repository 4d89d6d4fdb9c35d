//! Head states as types, the capabilities each state grants, and the transition table.
//!
//! Caffe's `SyncedMemory` keeps `head_` in a run-time enum and trusts every caller to ask
//! for the right pointer. Here each head is a zero-sized type in a `PhantomData`, so asking
//! for a stale side is a compile error whose message says which call makes it current.
//!
//! | state | CPU copy | GPU copy | CPU read | CPU write | GPU read | GPU write |
//! |---|---|---|---|---|---|---|
//! | [`Uninitialized`] | none | none | no | no | no | no |
//! | [`HeadAtCpu`] | newest | stale or none | yes | yes | no | no |
//! | [`HeadAtGpu`] | stale or none | newest | no | no | yes | yes |
//! | [`Synced`] | equal | equal | yes | no | yes | no |
//! | [`InFlight`] | newest, being read by a copy | being written by a copy | no | no | only on a stream ordered after the copy | no |
//!
//! Capabilities are traits ([`CpuReadable`], [`GpuReadable`], [`CpuWritable`],
//! [`GpuWritable`]); transitions are traits with the next state as an associated type
//! ([`ToCpu`], [`ToGpu`]), so one generic method serves every state and the compiler computes
//! the result. Every trait is sealed: the table above is the whole machine.

use std::fmt::Debug;

mod sealed {
    pub trait Sealed {}
}

/// The head state known only at run time: Caffe's `SyncedHead` plus the in-flight push.
///
/// Used by the erased end of the ladder ([`super::AnySyncedMemory`]) and in messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Head {
    /// No side allocated yet (Caffe `UNINITIALIZED`).
    Uninitialized,
    /// The CPU copy is the newest (Caffe `HEAD_AT_CPU`).
    HeadAtCpu,
    /// The GPU copy is the newest (Caffe `HEAD_AT_GPU`).
    HeadAtGpu,
    /// Both copies are equal (Caffe `SYNCED`).
    Synced,
    /// An asynchronous host-to-device copy is queued and may still run (Caffe sets `SYNCED`
    /// right after `async_gpu_push`; here the state says the GPU copy is not yet safe to read).
    InFlight,
}

impl Head {
    /// The name of the matching state type (`"HeadAtCpu"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Head::Uninitialized => "Uninitialized",
            Head::HeadAtCpu => "HeadAtCpu",
            Head::HeadAtGpu => "HeadAtGpu",
            Head::Synced => "Synced",
            Head::InFlight => "InFlight",
        }
    }

    /// Whether the CPU copy may be read in this state.
    pub const fn cpu_readable(self) -> bool {
        matches!(self, Head::HeadAtCpu | Head::Synced)
    }

    /// Whether the GPU copy may be read (on any stream) in this state.
    pub const fn gpu_readable(self) -> bool {
        matches!(self, Head::HeadAtGpu | Head::Synced)
    }
}

impl std::fmt::Display for Head {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A head state of a [`super::SyncedMemory`]. Sealed: the states are [`Uninitialized`],
/// [`HeadAtCpu`], [`HeadAtGpu`], [`Synced`] and [`InFlight`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a head state of a SyncedMemory",
    label = "expected `Uninitialized`, `HeadAtCpu`, `HeadAtGpu`, `Synced` or `InFlight`",
    note = "a shared `Frozen<_>` blob side is read-only: call `thaw_data()` / `thaw_diff()` to get it back in its head state"
)]
pub trait HeadState:
    sealed::Sealed + Copy + Default + Debug + Send + Sync + Unpin + 'static
{
    /// The run-time tag of this state.
    const HEAD: Head;
}

/// States in which no asynchronous push is queued: every Caffe state. Needed by the
/// transitions that write or reallocate.
#[diagnostic::on_unimplemented(
    message = "an asynchronous push is still in flight in state `{Self}`",
    label = "the host buffer is being copied to the GPU",
    note = "call `.wait()` first: it blocks until the copy is done and gives `Synced` (or `.gpu_after(&stream)` to read the GPU copy on a stream ordered after the copy, without waiting)"
)]
pub trait Settled: HeadState {}

/// States in which the CPU copy is current and may be read (`&[T]`).
#[diagnostic::on_unimplemented(
    message = "the CPU copy may not be read in state `{Self}`: it is stale, not allocated, or being copied",
    label = "this needs a current CPU copy",
    note = "make it current first: from `HeadAtGpu` or `Uninitialized` call `.into_cpu()` (Caffe's `cpu_data()`: it copies from the GPU only when the CPU copy is stale, or allocates it zero-filled); from `InFlight` (after `async_gpu_push`) call `.wait()`, which gives `Synced`; on a Blob call `.into_cpu_data()` / `.into_cpu_diff()`"
)]
pub trait CpuReadable: Settled {}

/// States in which the GPU copy is current and may be read on any stream.
#[diagnostic::on_unimplemented(
    message = "the GPU copy may not be read in state `{Self}`: it is stale, not allocated, or still being pushed",
    label = "this needs a current GPU copy",
    note = "make it current first: from `HeadAtCpu` or `Uninitialized` call `.into_gpu()` (Caffe's `gpu_data()`: it copies from the CPU only when the GPU copy is stale, or allocates it zero-filled); from `InFlight` call `.wait()` (gives `Synced`), or `.gpu_after(&stream)` to read it on a stream ordered after the copy; on a Blob call `.into_gpu_data()` / `.into_gpu_diff()`"
)]
pub trait GpuReadable: Settled {}

/// States in which the CPU side is the head and may be written (`&mut [T]`).
#[diagnostic::on_unimplemented(
    message = "the CPU side is not the head in state `{Self}`, so it may not be written",
    label = "writing here would leave the other copy stale without the type saying so",
    note = "take the CPU side first: from `Synced`, `HeadAtGpu` or `Uninitialized` call `.into_cpu_mut()` (Caffe's `mutable_cpu_data()`: it syncs the CPU copy if stale and makes the CPU side the head); from `InFlight` call `.wait()` first, then `.into_cpu_mut()`; on a Blob call `.into_cpu_data_mut()` / `.into_cpu_diff_mut()`"
)]
pub trait CpuWritable: CpuReadable {}

/// States in which the GPU side is the head and may be written.
#[diagnostic::on_unimplemented(
    message = "the GPU side is not the head in state `{Self}`, so it may not be written",
    label = "writing here would leave the other copy stale without the type saying so",
    note = "take the GPU side first: from `Synced`, `HeadAtCpu` or `Uninitialized` call `.into_gpu_mut()` (Caffe's `mutable_gpu_data()`: it syncs the GPU copy if stale and makes the GPU side the head); from `InFlight` call `.wait()` first, then `.into_gpu_mut()`; on a Blob call `.into_gpu_data_mut()` / `.into_gpu_diff_mut()`"
)]
pub trait GpuWritable: GpuReadable {}

/// Caffe's `to_cpu()`: the state after making the CPU copy readable.
///
/// `Uninitialized -> HeadAtCpu` (zero-filled), `HeadAtGpu -> Synced` (one copy),
/// `HeadAtCpu` and `Synced` unchanged (no copy).
#[diagnostic::on_unimplemented(
    message = "`into_cpu` is not available in state `{Self}`",
    label = "an asynchronous push may still be running",
    note = "call `.wait()` first (it gives `Synced`, where the CPU copy is readable)"
)]
pub trait ToCpu: Settled {
    /// The state after the transition.
    type Next: CpuReadable + Settled;
}

/// Caffe's `to_gpu()`: the state after making the GPU copy readable.
///
/// `Uninitialized -> HeadAtGpu` (zero-filled), `HeadAtCpu -> Synced` (one copy),
/// `HeadAtGpu` and `Synced` unchanged (no copy).
#[diagnostic::on_unimplemented(
    message = "`into_gpu` is not available in state `{Self}`",
    label = "an asynchronous push may still be running",
    note = "call `.wait()` first (it gives `Synced`)"
)]
pub trait ToGpu: Settled {
    /// The state after the transition.
    type Next: GpuReadable + Settled;
}

macro_rules! state {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;
        impl sealed::Sealed for $name {}
        impl HeadState for $name {
            const HEAD: Head = Head::$name;
        }
    };
}

state!(
    /// No side is allocated (Caffe `UNINITIALIZED`).
    ///
    /// Invariants: the memory holds no CPU copy and no GPU copy, unless a borrowed or
    /// adopted buffer was handed in (then its contents are ignored: the first read sees
    /// zeros, as in Caffe). Nothing may be read or written; [`ToCpu`] / [`ToGpu`] allocate
    /// the side asked for, zero-filled.
    Uninitialized
);
state!(
    /// The CPU copy is the newest (Caffe `HEAD_AT_CPU`).
    ///
    /// Invariants: the CPU copy exists and holds the data; the GPU copy, if any, may differ
    /// and must not be read. The CPU side may be read and written.
    HeadAtCpu
);
state!(
    /// The GPU copy is the newest (Caffe `HEAD_AT_GPU`).
    ///
    /// Invariants: the GPU copy exists and holds the data; the CPU copy, if any, may differ
    /// and must not be read. The GPU side may be read and written.
    HeadAtGpu
);
state!(
    /// Both copies exist and are equal (Caffe `SYNCED`).
    ///
    /// Invariants: both copies exist, hold the same values, and no copy between them is
    /// queued. Both sides may be read; neither written (writing one would make the other
    /// stale while the type still says `Synced`): take a side with `into_*_mut` first.
    Synced
);
state!(
    /// An asynchronous host-to-device copy has been queued on a stream (Caffe's
    /// `async_gpu_push`, which sets `SYNCED` at once and trusts the caller).
    ///
    /// Invariants: both copies exist; the CPU copy holds the data and is being read by the
    /// copy, so it may not be written (and the page-locked buffer would block a host read
    /// until the copy ends, so reads wait for `wait()` too); the GPU copy is being written,
    /// so it may be read only on a stream ordered after the copy's event. `wait()` gives
    /// [`Synced`].
    InFlight
);

impl Settled for Uninitialized {}
impl Settled for HeadAtCpu {}
impl Settled for HeadAtGpu {}
impl Settled for Synced {}

impl CpuReadable for HeadAtCpu {}
impl CpuReadable for Synced {}
impl GpuReadable for HeadAtGpu {}
impl GpuReadable for Synced {}
impl CpuWritable for HeadAtCpu {}
impl GpuWritable for HeadAtGpu {}

impl ToCpu for Uninitialized {
    type Next = HeadAtCpu;
}
impl ToCpu for HeadAtCpu {
    type Next = HeadAtCpu;
}
impl ToCpu for HeadAtGpu {
    type Next = Synced;
}
impl ToCpu for Synced {
    type Next = Synced;
}

impl ToGpu for Uninitialized {
    type Next = HeadAtGpu;
}
impl ToGpu for HeadAtGpu {
    type Next = HeadAtGpu;
}
impl ToGpu for HeadAtCpu {
    type Next = Synced;
}
impl ToGpu for Synced {
    type Next = Synced;
}

static_assertions::assert_eq_size!(Uninitialized, ());
static_assertions::assert_eq_size!(HeadAtCpu, ());
static_assertions::assert_eq_size!(HeadAtGpu, ());
static_assertions::assert_eq_size!(Synced, ());
static_assertions::assert_eq_size!(InFlight, ());
static_assertions::assert_impl_all!(Uninitialized: Send, Sync, Copy);
static_assertions::assert_impl_all!(InFlight: Send, Sync, Copy);
static_assertions::assert_not_impl_any!(Synced: CpuWritable, GpuWritable);
static_assertions::assert_not_impl_any!(InFlight: CpuReadable, GpuReadable, Settled);
static_assertions::assert_not_impl_any!(Uninitialized: CpuReadable, GpuReadable);

#[cfg(test)]
mod tests {
    use super::*;

    /// The type-level table agrees with the run-time one, state by state.
    #[test]
    fn capabilities_match_run_time_table() {
        fn cpu<S: CpuReadable>() -> Head {
            S::HEAD
        }
        fn gpu<S: GpuReadable>() -> Head {
            S::HEAD
        }
        for h in [cpu::<HeadAtCpu>(), cpu::<Synced>()] {
            assert!(h.cpu_readable(), "{h}");
        }
        for h in [gpu::<HeadAtGpu>(), gpu::<Synced>()] {
            assert!(h.gpu_readable(), "{h}");
        }
        assert!(!Head::Uninitialized.cpu_readable() && !Head::Uninitialized.gpu_readable());
        assert!(!Head::HeadAtGpu.cpu_readable() && !Head::HeadAtCpu.gpu_readable());
        assert!(!Head::InFlight.gpu_readable() && !Head::InFlight.cpu_readable());
    }

    #[test]
    fn transition_table_is_caffes() {
        fn cpu_next<S: ToCpu>() -> Head {
            <S::Next as HeadState>::HEAD
        }
        fn gpu_next<S: ToGpu>() -> Head {
            <S::Next as HeadState>::HEAD
        }
        assert_eq!(cpu_next::<Uninitialized>(), Head::HeadAtCpu);
        assert_eq!(cpu_next::<HeadAtCpu>(), Head::HeadAtCpu);
        assert_eq!(cpu_next::<HeadAtGpu>(), Head::Synced);
        assert_eq!(cpu_next::<Synced>(), Head::Synced);
        assert_eq!(gpu_next::<Uninitialized>(), Head::HeadAtGpu);
        assert_eq!(gpu_next::<HeadAtGpu>(), Head::HeadAtGpu);
        assert_eq!(gpu_next::<HeadAtCpu>(), Head::Synced);
        assert_eq!(gpu_next::<Synced>(), Head::Synced);
    }
}
