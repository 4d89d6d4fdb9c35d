//! Programmatic dependent launch (Hopper and later): when to let a pointwise or fused kernel
//! start while the kernel before it on its stream is still finishing.
//!
//! Every pointwise and fused entry point begins with `ts_pdl_enter()` (`kernels/apply.cuh`):
//! `griddepcontrol.launch_dependents` (the next kernel on the stream may be scheduled now),
//! then `griddepcontrol.wait` (block until the previous kernel on the stream has completed and
//! its memory operations are visible), before it reads a parameter-addressed byte of global
//! memory. Launched normally, the wait returns at once: the stream already ordered the
//! kernel after its predecessor. Launched with the programmatic-serialization attribute
//! (`driver::launch_kernel_programmatic`), the kernel's blocks may be resident and at the
//! wait before the previous kernel is done: the launch latency of a chain of small dependent
//! kernels overlaps the previous kernel's tail. docs/GRAPHS.md has the whole safety
//! argument; in short, the attribute goes only on launches of kernels that wait before any
//! global memory access, so no such kernel can touch memory its predecessor has not finished
//! with, and every other kind of work (copies, memsets, event records and waits, other
//! kernels) keeps full stream order.
//!
//! [`PDL_ENV`] picks when launches use it ([`PdlPolicy`]); the default is every launch that
//! can: a replayed graph of small kernels is bound by exactly that latency (0.83 against
//! 1.05 µs per op on an H100), and so is an eager chain of dependent small ops (3.7 against
//! 5.5 µs per op), docs/PERFORMANCE.md. Benchmarks flip it per process with [`set_pdl_policy`].

use std::sync::atomic::{AtomicU8, Ordering};

use crate::runtime::graph::state::capturing_here;

/// When pointwise and fused kernels are launched as programmatic dependents of the kernel
/// before them on their stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PdlPolicy {
    /// Never: every launch is a plain `cuLaunchKernel`.
    Off,
    /// Only launches recorded by a CUDA graph capture on this thread (`Gpu::capture`): the
    /// captured edges between consecutive kernels become programmatic.
    Capture,
    /// Every launch on a device of compute capability 9.0 or later, eager and captured. The
    /// default.
    Always,
}

/// The environment variable that sets [`PdlPolicy`] for the process: `off`, `capture` or
/// `on` (the default).
pub const PDL_ENV: &str = "TYPESTATE_TENSOR_PDL";

const UNSET: u8 = 0;

static POLICY: AtomicU8 = AtomicU8::new(UNSET);

impl PdlPolicy {
    fn code(self) -> u8 {
        match self {
            PdlPolicy::Off => 1,
            PdlPolicy::Capture => 2,
            PdlPolicy::Always => 3,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(PdlPolicy::Off),
            2 => Some(PdlPolicy::Capture),
            3 => Some(PdlPolicy::Always),
            _ => None,
        }
    }

    /// Parses a [`PDL_ENV`] value (`off`/`0`, `capture`, `on`/`1`/`always`); `None` for
    /// anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "off" | "0" => Some(PdlPolicy::Off),
            "capture" => Some(PdlPolicy::Capture),
            "on" | "1" | "always" => Some(PdlPolicy::Always),
            _ => None,
        }
    }
}

/// The process's policy: the last [`set_pdl_policy`], else [`PDL_ENV`] (read on first use),
/// else [`PdlPolicy::Always`].
pub fn pdl_policy() -> PdlPolicy {
    if let Some(p) = PdlPolicy::from_code(POLICY.load(Ordering::Relaxed)) {
        return p;
    }
    let p = std::env::var(PDL_ENV)
        .ok()
        .and_then(|v| PdlPolicy::parse(&v))
        .unwrap_or(PdlPolicy::Always);
    // A racing `set_pdl_policy` wins.
    let _ = POLICY.compare_exchange(UNSET, p.code(), Ordering::Relaxed, Ordering::Relaxed);
    PdlPolicy::from_code(POLICY.load(Ordering::Relaxed)).unwrap_or(p)
}

/// Whether a launch of a kernel whose image waits for its predecessor (`pdl_capable`) is
/// programmatic under `policy`, given whether this thread is capturing.
pub(crate) fn decide(policy: PdlPolicy, pdl_capable: bool, capturing: bool) -> bool {
    pdl_capable
        && match policy {
            PdlPolicy::Off => false,
            PdlPolicy::Capture => capturing,
            PdlPolicy::Always => true,
        }
}

/// Whether this launch of a kernel with `pdl_capable` images is programmatic.
#[inline]
pub(crate) fn programmatic(pdl_capable: bool) -> bool {
    pdl_capable && decide(pdl_policy(), true, capturing_here())
}

/// Whether kernels compiled for the architecture named `arch_name` (`sm_90`, `compute_90a`,
/// ...) contain the `griddepcontrol` instructions of `ts_pdl_enter` (`__CUDA_ARCH__ >= 900`).
pub(crate) fn arch_has_griddepcontrol(arch_name: &str) -> bool {
    let digits: String = arch_name
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse::<u32>().is_ok_and(|n| n >= 90)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_decides_per_launch() {
        use PdlPolicy::*;
        for capturing in [false, true] {
            assert!(!decide(Off, true, capturing));
            assert!(decide(Always, true, capturing));
            assert_eq!(decide(Capture, true, capturing), capturing);
            // A kernel without the wait is never programmatic.
            for p in [Off, Capture, Always] {
                assert!(!decide(p, false, capturing));
            }
        }
    }

    #[test]
    fn policies_parse_and_round_trip() {
        assert_eq!(PdlPolicy::parse(" on "), Some(PdlPolicy::Always));
        assert_eq!(PdlPolicy::parse("capture"), Some(PdlPolicy::Capture));
        assert_eq!(PdlPolicy::parse("0"), Some(PdlPolicy::Off));
        assert_eq!(PdlPolicy::parse("sometimes"), None);
        for p in [PdlPolicy::Off, PdlPolicy::Capture, PdlPolicy::Always] {
            assert_eq!(PdlPolicy::from_code(p.code()), Some(p));
        }
        assert_eq!(PdlPolicy::from_code(UNSET), None);
    }

    #[test]
    fn only_hopper_and_later_images_wait() {
        assert!(arch_has_griddepcontrol("sm_90"));
        assert!(arch_has_griddepcontrol("compute_90a"));
        assert!(arch_has_griddepcontrol("sm_100"));
        assert!(arch_has_griddepcontrol("sm_120"));
        assert!(!arch_has_griddepcontrol("sm_89"));
        assert!(!arch_has_griddepcontrol("compute_80"));
        assert!(!arch_has_griddepcontrol("sm_75"));
        assert!(!arch_has_griddepcontrol(""));
    }
}
