//! How a copy between GPUs may go ([`PeerPath`], chosen by the caller, a [`GpuOptions`]
//! field or [`PEER_PATH_ENV`]) and how it went ([`PeerRoute`]).
//!
//! [`GpuOptions`]: crate::gpu::GpuOptions

use std::sync::OnceLock;

use crate::error::GpuError;

/// The environment variable that picks the default [`PeerPath`] of a GPU whose
/// [`GpuOptions::peer_path`](crate::gpu::GpuOptions::peer_path) is unset: `auto` (or unset)
/// or `staged`. Read once per process.
pub const PEER_PATH_ENV: &str = "TYPESTATE_TENSOR_PEER_PATH";

/// How a copy between the memory of two GPUs may go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PeerPath {
    /// Directly (`cuMemcpyPeerAsync`, with peer access enabled both ways) where the two
    /// devices allow it, staged through pinned host memory where they do not; a plain
    /// device-to-device copy on one GPU.
    #[default]
    Auto,
    /// Always staged through pinned host memory (device to host on the source's GPU, host to
    /// device on the destination's), even on one GPU or where peer access exists: the
    /// fallback, forced, for tests and benchmarks of it.
    Staged,
}

impl PeerPath {
    /// The path [`PEER_PATH_ENV`] asks for: [`PeerPath::Auto`] when unset or `auto`,
    /// [`PeerPath::Staged`] for `staged` (read once per process).
    ///
    /// # Errors
    /// [`GpuError::InvalidPeerPath`] for any other value.
    pub fn from_env() -> Result<PeerPath, GpuError> {
        static FROM_ENV: OnceLock<Result<PeerPath, String>> = OnceLock::new();
        FROM_ENV
            .get_or_init(|| match std::env::var(PEER_PATH_ENV) {
                Err(std::env::VarError::NotPresent) => Ok(PeerPath::Auto),
                // Not Unicode: not `auto` or `staged` either, so refused like any other value.
                Err(std::env::VarError::NotUnicode(value)) => {
                    Err(value.to_string_lossy().into_owned())
                }
                Ok(value) => value.parse().map_err(|_| value),
            })
            .clone()
            .map_err(|value| GpuError::InvalidPeerPath {
                var: PEER_PATH_ENV,
                value,
            })
    }
}

impl std::str::FromStr for PeerPath {
    type Err = GpuError;

    /// `auto` or `staged` (case and surrounding spaces ignored).
    fn from_str(s: &str) -> Result<PeerPath, GpuError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(PeerPath::Auto),
            "staged" => Ok(PeerPath::Staged),
            _ => Err(GpuError::InvalidPeerPath {
                var: PEER_PATH_ENV,
                value: s.to_owned(),
            }),
        }
    }
}

/// How a copy between GPU memories went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerRoute {
    /// Both memories on one GPU: a device-to-device copy.
    Local,
    /// Between two GPUs with peer access: one `cuMemcpyPeerAsync`, no host memory involved.
    Direct,
    /// Through pinned host memory, in chunks.
    Staged,
}
