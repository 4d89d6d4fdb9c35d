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
//! Every launch of a kernel whose image has the wait ([`LoadedKernel::pdl`], from
//! [`arch_has_griddepcontrol`]) is programmatic, eager and captured alike: a replayed graph of
//! small kernels is bound by exactly that latency (0.83 against 1.05 µs per op on an H100),
//! and so is an eager chain of dependent small ops (3.7 against 5.5 µs per op),
//! docs/PERFORMANCE.md. A launch on an older device is a plain one.
//!
//! [`LoadedKernel::pdl`]: super::cache::LoadedKernel::pdl

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
