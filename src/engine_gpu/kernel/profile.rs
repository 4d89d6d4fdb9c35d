//! Where an eager launch's host time goes: an opt-in stage timer on the calling thread.
//!
//! [`profile`] runs a closure with the timer on and returns the host time each stage of every
//! pointwise launch the closure made on this thread took, summed. The stages are the parts
//! of the launch path ([`Stage`]), so `docs/PERFORMANCE.md` can say which one costs what, and
//! a change to one of them shows up there. Off (the default), the timer costs each launch
//! two reads of a thread-local flag; on, one `Instant::now()` per stage (about 20 ns each on
//! Linux, included in the figures).

use std::cell::Cell;
use std::fmt;
#[cfg(test)]
use std::time::Duration;
use std::time::Instant;

/// A part of the host path of one eager pointwise launch, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Stream order: each operand's storage orders the launch stream after the work it must
    /// wait for (an atomic load per operand while one stream is used).
    Order,
    /// Layout checks and the signature: one shape, the signature's words written and hashed;
    /// on a miss also every view inside its buffer and a writable output.
    Validate,
    /// The plan cache: the plan found by the signature's hash and words, its buffers' lengths
    /// checked and its arguments patched with this launch's addresses and scalars (hit path
    /// only).
    CacheHit,
    /// Collapse of the layouts (miss path).
    Collapse,
    /// Form, index width and vector width, operand addresses and argument packing (miss
    /// path).
    Plan,
    /// The compiled kernel found in the kernel cache (miss path).
    Lookup,
    /// The driver call: binding the context and `cuLaunchKernelEx` (`cuLaunchKernel` before
    /// Hopper); on a miss also the plan kept for the next launch.
    Driver,
}

impl Stage {
    /// Every stage, in path order.
    pub const ALL: [Stage; 7] = [
        Stage::Order,
        Stage::Validate,
        Stage::CacheHit,
        Stage::Collapse,
        Stage::Plan,
        Stage::Lookup,
        Stage::Driver,
    ];

    /// A short lower-case name, as the benchmark prints it.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Order => "stream order",
            Stage::Validate => "validate",
            Stage::CacheHit => "plan cache hit",
            Stage::Collapse => "collapse",
            Stage::Plan => "plan + pack",
            Stage::Lookup => "kernel lookup",
            Stage::Driver => "cuLaunchKernel",
        }
    }
}

/// Host time per [`Stage`], summed over the launches one [`profile`] call saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchProfile {
    /// Launches that reached the driver call.
    pub launches: u64,
    nanos: [u64; Stage::ALL.len()],
}

impl LaunchProfile {
    /// The total time spent in `stage`.
    #[cfg(test)]
    pub fn total(&self, stage: Stage) -> Duration {
        Duration::from_nanos(self.nanos[stage as usize])
    }

    /// The mean time per launch spent in `stage`, in µs (0 when there was no launch).
    pub fn per_launch_us(&self, stage: Stage) -> f64 {
        if self.launches == 0 {
            return 0.0;
        }
        self.nanos[stage as usize] as f64 / self.launches as f64 / 1000.0
    }

    /// The sum over all stages per launch, in µs.
    pub fn timed_us(&self) -> f64 {
        Stage::ALL.iter().map(|&s| self.per_launch_us(s)).sum()
    }
}

impl fmt::Display for LaunchProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in Stage::ALL {
            writeln!(f, "{:<16} {:>7.3} us", s.name(), self.per_launch_us(s))?;
        }
        write!(
            f,
            "{:<16} {:>7.3} us over {} launches",
            "stages",
            self.timed_us(),
            self.launches
        )
    }
}

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static TIMES: Cell<LaunchProfile> = const {
        Cell::new(LaunchProfile { launches: 0, nanos: [0; Stage::ALL.len()] })
    };
}

/// Runs `f` with the stage timer on for this thread, and returns its result with the time
/// every pointwise launch made by `f` on this thread spent in each stage. Launches made by
/// other threads are not counted. Nested calls time into the innermost one.
///
/// ```no_run
/// use crate::engine_gpu::kernel::profile::{profile, Stage};
/// # fn launch_many() {}
/// let ((), p) = profile(|| launch_many());
/// println!("{p}");
/// println!("driver: {:.2} us per launch", p.per_launch_us(Stage::Driver));
/// ```
#[cfg(test)]
pub fn profile<R>(f: impl FnOnce() -> R) -> (R, LaunchProfile) {
    /// Restores the outer state even if `f` panics.
    struct Restore(bool, LaunchProfile);
    impl Drop for Restore {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(self.0));
            TIMES.with(|t| t.set(self.1));
        }
    }
    let outer = Restore(
        ACTIVE.with(|a| a.replace(true)),
        TIMES.with(|t| t.replace(LaunchProfile::default())),
    );
    let r = f();
    let p = TIMES.with(Cell::get);
    drop(outer);
    (r, p)
}

/// A running stage timer: [`Lap::start`] at the top of a timed path, [`Lap::lap`] at the end
/// of each stage. Does nothing unless a [`profile`] call is running on this thread.
pub(crate) struct Lap(Option<Instant>);

impl Lap {
    /// Starts timing if this thread is profiling.
    #[inline]
    pub(crate) fn start() -> Lap {
        // A thread being torn down (a launch from a thread-local's destructor) is not profiling.
        let active = ACTIVE.try_with(Cell::get).unwrap_or(false);
        Lap(active.then(Instant::now))
    }

    /// A timer that never times: for launches the profile does not count (fused ones).
    #[inline]
    pub(crate) fn off() -> Lap {
        Lap(None)
    }

    /// Adds the time since the last lap to `stage` (and counts a launch at [`Stage::Driver`]).
    #[inline]
    pub(crate) fn lap(&mut self, stage: Stage) {
        if let Some(last) = &mut self.0 {
            let now = Instant::now();
            let ns = u64::try_from((now - *last).as_nanos()).unwrap_or(u64::MAX);
            *last = now;
            let _ = TIMES.try_with(|t| {
                let mut p = t.get();
                p.nanos[stage as usize] = p.nanos[stage as usize].saturating_add(ns);
                if stage == Stage::Driver {
                    p.launches += 1;
                }
                t.set(p);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laps_add_up_only_inside_profile() {
        let mut outside = Lap::start();
        outside.lap(Stage::Driver);
        let ((), p) = profile(|| {
            let mut lap = Lap::start();
            std::thread::sleep(Duration::from_millis(2));
            lap.lap(Stage::Validate);
            lap.lap(Stage::Driver);
            let mut again = Lap::start();
            again.lap(Stage::Driver);
        });
        assert_eq!(p.launches, 2);
        assert!(p.total(Stage::Validate) >= Duration::from_millis(2));
        assert!(p.per_launch_us(Stage::Validate) >= 1000.0);
        assert_eq!(p.total(Stage::Collapse), Duration::ZERO);
        // Off again after the call.
        let ((), q) = profile(|| {});
        assert_eq!(q.launches, 0);
        let mut after = Lap::start();
        after.lap(Stage::Driver);
        assert!(after.0.is_none());
        assert!(p.to_string().contains("cuLaunchKernel"));
    }
}
