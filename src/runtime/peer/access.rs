//! Peer access, asked of the driver once per ordered pair of GPUs and process.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use cudarc::driver::CudaContext;

use crate::error::GpuError;
use crate::runtime::device::Gpu;
use crate::runtime::driver;

/// What the driver said about one ordered pair `(from, to)`: whether `from`'s context may
/// reach `to`'s memory. The contexts are kept retained so that the answer stays true.
struct Link {
    enabled: bool,
    _contexts: [Arc<CudaContext>; 2],
}

static LINKS: LazyLock<Mutex<HashMap<(usize, usize), Link>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Whether peer access from `from` to `to` is enabled, enabling it on first ask. The table
/// lock is held over the driver calls, so each pair is asked once even when threads race
/// (rare: once per pair per process). A driver failure other than "unsupported" is returned
/// and not remembered.
pub(super) fn link(from: &Gpu, to: &Gpu) -> Result<bool, GpuError> {
    let key = (from.ordinal(), to.ordinal());
    let mut links = LINKS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(link) = links.get(&key) {
        return Ok(link.enabled);
    }
    let enabled = driver::can_access_peer(from.context(), to.context())?
        && driver::enable_peer_access(from.context(), to.context())?;
    links.insert(
        key,
        Link {
            enabled,
            _contexts: [Arc::clone(from.context()), Arc::clone(to.context())],
        },
    );
    Ok(enabled)
}

impl Gpu {
    /// Whether this GPU can reach `peer`'s memory directly (`cuDeviceCanAccessPeer`: NVLink
    /// or PCIe peer-to-peer). A GPU always reaches its own memory (`true` for the same
    /// ordinal).
    pub fn can_access_peer(&self, peer: &Gpu) -> Result<bool, GpuError> {
        if self.ordinal() == peer.ordinal() {
            return Ok(true);
        }
        driver::can_access_peer(self.context(), peer.context())
    }

    /// Enables access from this GPU to `peer`'s memory where the devices allow it
    /// (`cuCtxEnablePeerAccess`), and says whether it is enabled. Asked of the driver once
    /// per ordered pair and process (THC's `p2pAccessEnabled`); later calls answer from the
    /// table. `true` for the same ordinal.
    ///
    /// Copies between GPUs ([`GpuStorage::copy_from_peer_async`](crate::runtime::GpuStorage::copy_from_peer_async), `Tensor::to_device`) call
    /// this for both directions themselves; call it early to keep the one-time cost (the
    /// driver maps every allocation of each device into the other) out of a timed region.
    pub fn enable_peer_access(&self, peer: &Gpu) -> Result<bool, GpuError> {
        if self.ordinal() == peer.ordinal() {
            return Ok(true);
        }
        link(self, peer)
    }
}
