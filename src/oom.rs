//! The out-of-memory message: PyTorch's "CUDA out of memory. Tried to allocate ..." with the
//! numbers that explain it and the settings that may help ([`OomHint`]). A base module so
//! that [`crate::error`] can format it; published as `error::OomHint` and `error::OutOfMemoryError`.

use std::fmt;

/// Something to try after an out-of-memory error, chosen from the error's numbers and the
/// allocator that failed. Each names a real setting of this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OomHint {
    /// Much of the reserved memory is cached but unallocated: free pieces of segments too
    /// small for the request (fragmentation). The caching allocator's
    /// `max_split_size_mb` (in `TYPESTATE_TENSOR_ALLOC_CONF`) keeps large blocks whole for
    /// large requests.
    MaxSplitSize,
    /// Fragmentation again: `roundup_power2_divisions` rounds near-miss sizes to shared
    /// steps, so freed blocks fit later requests.
    RoundupPower2Divisions,
    /// The caching allocator is capped below the device's memory by a memory fraction
    /// (`CachingConfig::with_memory_fraction`), and the cap is what refused.
    MemoryFraction,
    /// The pooled allocator reuses a cached region only for requests of its rounded size;
    /// the caching allocator (the default, `AllocatorKind::Caching`) splits and merges.
    UseCachingAllocator,
    /// Memory of the device is held outside this allocator (other processes, other
    /// allocators of this process, the CUDA context): `total - free - reserved` bytes.
    HeldElsewhere {
        /// Those bytes.
        bytes: usize,
    },
}

impl fmt::Display for OomHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OomHint::MaxSplitSize => f.write_str(
                "if reserved but unallocated memory is large, try \
                 TYPESTATE_TENSOR_ALLOC_CONF=max_split_size_mb:<MiB> (at least 20) so that \
                 blocks that large are never split for smaller requests",
            ),
            OomHint::RoundupPower2Divisions => f.write_str(
                "or TYPESTATE_TENSOR_ALLOC_CONF=roundup_power2_divisions:4 so that \
                 near-miss sizes round to shared steps and reuse freed blocks",
            ),
            OomHint::MemoryFraction => f.write_str(
                "the allocator is capped by CachingConfig::with_memory_fraction; \
                 raise the fraction",
            ),
            OomHint::UseCachingAllocator => f.write_str(
                "the pooled allocator reuses a cached region only for its own rounded size; \
                 the caching allocator (AllocatorKind::Caching, the default) splits and \
                 merges cached segments",
            ),
            OomHint::HeldElsewhere { bytes } => write!(
                f,
                "{} of the device is held outside this allocator (other processes, other \
                 allocators, the CUDA context)",
                Bytes(*bytes)
            ),
        }
    }
}

/// Bytes in the larger binary unit, with two decimals ("20.00 MiB"), as PyTorch writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bytes(pub(crate) usize);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 7] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
        // A display value: the float rounding is the point.
        let mut value = self.0 as f64;
        let mut unit = 0;
        while value >= 1024.0 && unit + 1 < UNITS.len() {
            value /= 1024.0;
            unit += 1;
        }
        if unit == 0 {
            write!(f, "{} bytes", self.0)
        } else {
            write!(f, "{value:.2} {}", UNITS[unit])
        }
    }
}

/// What an out-of-memory failure knew ([`AllocError::OutOfMemory`](crate::error::AllocError::OutOfMemory)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfMemoryError {
    /// Which device or source.
    pub device: String,
    /// Bytes asked for.
    pub requested: usize,
    /// Bytes free on the device, as the driver reports (0 when unknown).
    pub free: usize,
    /// Total device bytes (0 when unknown).
    pub total: usize,
    /// Bytes handed out to users by this allocator.
    pub allocated: usize,
    /// Bytes this allocator holds from the driver.
    pub reserved: usize,
    /// Reserved but not allocated bytes: after the allocator's recovery steps, pieces of
    /// segments too small for the request (fragmentation).
    pub cached: usize,
    /// What to try, from these numbers and the failing allocator's settings (empty when
    /// nothing applies).
    pub hints: Vec<OomHint>,
}

impl std::error::Error for OutOfMemoryError {}

impl fmt::Display for OutOfMemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "out of memory on {}: tried to allocate {} bytes ({}).",
            self.device,
            self.requested,
            Bytes(self.requested)
        )?;
        if self.total > 0 {
            write!(
                f,
                " The device has a total capacity of {} of which {} is free.",
                Bytes(self.total),
                Bytes(self.free)
            )?;
        }
        write!(
            f,
            " Of the memory this allocator holds ({} reserved), {} is allocated and {} is \
             reserved but unallocated.",
            Bytes(self.reserved),
            Bytes(self.allocated),
            Bytes(self.cached)
        )?;
        for hint in &self.hints {
            write!(f, " Hint: {hint}.")?;
        }
        Ok(())
    }
}

/// The hints that apply to an out-of-memory error with these numbers, given those the failing
/// allocator can act on (`applicable`):
///
/// - [`OomHint::MaxSplitSize`] and [`OomHint::RoundupPower2Divisions`] when the reserved
///   but unallocated bytes are at least a fifth of the reserved bytes, or at least the
///   request (the allocator already returned every whole cached segment before failing, so
///   what is left is fragmentation).
/// - [`OomHint::HeldElsewhere`] when more than a twentieth of the device (by `total`) is
///   neither free nor reserved by this allocator.
/// - [`OomHint::MemoryFraction`] and [`OomHint::UseCachingAllocator`] whenever given.
pub(crate) fn applicable_hints(
    applicable: &[OomHint],
    requested: usize,
    free: usize,
    total: usize,
    reserved: usize,
    cached: usize,
) -> Vec<OomHint> {
    let fragmented = cached > 0 && (cached >= reserved / 5 || cached >= requested);
    let mut hints: Vec<OomHint> = applicable
        .iter()
        .copied()
        .filter(|h| match h {
            OomHint::MaxSplitSize | OomHint::RoundupPower2Divisions => fragmented,
            OomHint::HeldElsewhere { .. } => false,
            _ => true,
        })
        .collect();
    let elsewhere = total.saturating_sub(free).saturating_sub(reserved);
    if total > 0 && elsewhere > total / 20 {
        hints.push(OomHint::HeldElsewhere { bytes: elsewhere });
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_pytorch() {
        assert_eq!(Bytes(512).to_string(), "512 bytes");
        assert_eq!(Bytes(20 << 20).to_string(), "20.00 MiB");
        assert_eq!(Bytes(3 << 29).to_string(), "1.50 GiB");
    }

    #[test]
    fn fragmentation_hints_only_when_the_cache_is_large() {
        let knobs = [OomHint::MaxSplitSize, OomHint::RoundupPower2Divisions];
        // 100 MiB reserved, 10 MiB of it cached, 40 MiB asked: not fragmentation.
        assert!(applicable_hints(&knobs, 40 << 20, 0, 0, 100 << 20, 10 << 20).is_empty());
        // 30 MiB cached: it is.
        assert_eq!(
            applicable_hints(&knobs, 40 << 20, 0, 0, 100 << 20, 30 << 20),
            knobs
        );
        // 1 GiB device, 100 MiB free, 100 MiB reserved: 824 MiB elsewhere.
        assert_eq!(
            applicable_hints(&[], 1, 100 << 20, 1 << 30, 100 << 20, 0),
            [OomHint::HeldElsewhere { bytes: 824 << 20 }]
        );
    }
}
