//! The plan cache: the heuristic's algorithm per [`Problem`] and device, so a repeated call
//! (same shapes, strides, element type, epilogue and pointer alignment) does not pay
//! `cublasLtMatmulAlgoGetHeuristic` again (PyTorch caches its cuBLASLt plans the same way).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use cudarc::driver::CudaContext;

use super::cublaslt::{self, Algo, Problem};
use crate::error::GpuError;

/// Entries kept before the cache is emptied (a bound on memory for programs that multiply
/// ever new shapes; each entry is under 200 bytes).
const MAX_ENTRIES: usize = 4096;

type Cache = HashMap<(usize, Problem), Option<Algo>>;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The algorithm for `p` on the device of `ctx` (`None`: cuBLASLt has none), from the cache
/// or asked once. Errors are not cached.
///
/// # Errors
/// As [`cublaslt::call::heuristic`].
pub(crate) fn algo(ctx: &CudaContext, p: &Problem) -> Result<Option<Algo>, GpuError> {
    let key = (ctx.ordinal(), *p);
    // A poisoned lock only means another thread panicked mid-insert: the map is still a map.
    if let Some(hit) = cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(*hit);
    }
    let found = cublaslt::call::heuristic(ctx, p)?;
    let mut map = cache().lock().unwrap_or_else(|e| e.into_inner());
    if map.len() >= MAX_ENTRIES {
        map.clear();
    }
    map.insert(key, found);
    Ok(found)
}
