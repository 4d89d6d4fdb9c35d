//! GPU architectures as NVRTC names them.
//!
//! NVRTC takes `--gpu-architecture=sm_XY` (real: SASS in a CUBIN the driver loads as is) or
//! `compute_XY` (virtual: PTX the driver JIT-compiles on load). cudarc wants `&'static str`
//! options, and so do cache keys, so every name comes from one static table.

/// A compute capability, `major.minor` (9.0 for H100 and H200).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

/// `(major, minor, real name, virtual name)` for every architecture NVRTC 11 to 13 knows.
const TABLE: &[(u32, u32, &str, &str)] = &[
    (3, 5, "sm_35", "compute_35"),
    (3, 7, "sm_37", "compute_37"),
    (5, 0, "sm_50", "compute_50"),
    (5, 2, "sm_52", "compute_52"),
    (5, 3, "sm_53", "compute_53"),
    (6, 0, "sm_60", "compute_60"),
    (6, 1, "sm_61", "compute_61"),
    (6, 2, "sm_62", "compute_62"),
    (7, 0, "sm_70", "compute_70"),
    (7, 2, "sm_72", "compute_72"),
    (7, 5, "sm_75", "compute_75"),
    (8, 0, "sm_80", "compute_80"),
    (8, 6, "sm_86", "compute_86"),
    (8, 7, "sm_87", "compute_87"),
    (8, 8, "sm_88", "compute_88"),
    (8, 9, "sm_89", "compute_89"),
    (9, 0, "sm_90", "compute_90"),
    (10, 0, "sm_100", "compute_100"),
    (10, 1, "sm_101", "compute_101"),
    (10, 3, "sm_103", "compute_103"),
    (11, 0, "sm_110", "compute_110"),
    (12, 0, "sm_120", "compute_120"),
    (12, 1, "sm_121", "compute_121"),
];

impl Arch {
    /// The architecture `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// The number NVRTC's `nvrtcGetSupportedArchs` uses: `10 * major + minor`.
    pub const fn number(self) -> u32 {
        10 * self.major + self.minor
    }

    /// The architecture of an NVRTC arch number (`90` -> 9.0, `120` -> 12.0).
    pub const fn from_number(n: u32) -> Self {
        Self::new(n / 10, n % 10)
    }

    fn entry(self) -> Option<&'static (u32, u32, &'static str, &'static str)> {
        TABLE
            .iter()
            .find(|(major, minor, _, _)| *major == self.major && *minor == self.minor)
    }

    /// `sm_XY`, or `None` for an architecture the table does not know.
    pub fn real_name(self) -> Option<&'static str> {
        self.entry().map(|e| e.2)
    }

    /// `compute_XY`, or `None` for an architecture the table does not know.
    pub fn virtual_name(self) -> Option<&'static str> {
        self.entry().map(|e| e.3)
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What NVRTC is asked to produce: SASS for the device itself (CUBIN), or PTX for a virtual
/// architecture the device can JIT (when this NVRTC does not know the device).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// `--gpu-architecture=sm_XY`; the image is a CUBIN.
    Cubin(&'static str),
    /// `--gpu-architecture=compute_XY`; the image is PTX text.
    Ptx(&'static str),
}

impl Target {
    /// The `--gpu-architecture` value.
    pub fn arch_name(self) -> &'static str {
        match self {
            Target::Cubin(name) | Target::Ptx(name) => name,
        }
    }

    /// The target for `device`, given the arch numbers this NVRTC supports (ascending or
    /// not): CUBIN for the device's own `sm_XY` when supported; else PTX for the newest
    /// supported architecture not newer than the device (the driver JIT-compiles it, and PTX
    /// runs on every later architecture). `None` when no supported architecture fits.
    pub fn choose(device: Arch, supported: &[u32]) -> Option<Self> {
        if supported.contains(&device.number()) {
            if let Some(name) = device.real_name() {
                return Some(Target::Cubin(name));
            }
        }
        supported
            .iter()
            .copied()
            .filter(|&n| n <= device.number() && Arch::from_number(n).virtual_name().is_some())
            .max()
            .and_then(|n| Arch::from_number(n).virtual_name())
            .map(Target::Ptx)
    }
}
