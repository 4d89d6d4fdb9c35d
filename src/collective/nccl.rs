//! The one module that talks to NCCL (as `runtime/driver/` is for the driver).
//!
//! Every function is a thin wrapper over one NCCL call through cudarc's bindings
//! (`cudarc::nccl::sys`, loaded at run time like libcuda), returning
//! `Result<_, NcclError>` whose [`NcclError::Call`] names the call, with NCCL's error string
//! and, where a communicator is at hand, NCCL's last error message. The calls that read or
//! write device memory through raw addresses are `unsafe fn` with their contract under
//! `# Safety`; `launch.rs` upholds it.
//!
//! **The library.** cudarc panics when a symbol is first used and libnccl cannot be loaded,
//! so every entry point checks [`library`] first: libnccl is probed once (loaded and
//! unloaded) and its version read; without it every call is [`NcclError::NoLibrary`],
//! never a panic. cudarc looks the library up under the names of
//! `cudarc::get_lib_name_candidates("nccl")` (`libnccl.so`, `libnccl.so.13`, ...), not
//! `libnccl.so.2`, the name NCCL's packages ship: `scripts/nccl-lib.sh` makes the link.
//!
//! **The ABI.** The bindings are NCCL 2.28's (`nccl-02028`). NCCL's result codes are a C
//! enum that cudarc declares as a Rust enum, so a code the bindings do not know would be an
//! invalid value: the versions accepted are those whose codes the bindings hold
//! ([`MIN_VERSION`] to [`MAX_VERSION`]; 2.30 added code 8, which the bindings hold as
//! `ncclNumResults`). Other versions are [`NcclError::UnsupportedVersion`], before any other
//! call.
//!
//! **Threads.** NCCL communicators are not thread safe. Every call on a communicator
//! handle other than its creation and its destruction is made while holding the
//! process-wide free lock (`launch.rs`, [`crate::runtime::free_lock`]), which serialises them;
//! creation and destruction own the handle.

use std::ffi::{c_int, CStr};
use std::sync::OnceLock;

use cudarc::nccl::sys;

use super::op::ReduceOp;
use crate::element::DType;
use crate::error::{Error, NcclError};
use crate::runtime::{driver, Gpu, Stream};

/// The oldest NCCL accepted: 2.10 brought `ncclAvg` and `bf16`.
pub(crate) const MIN_VERSION: (u32, u32) = (2, 10);
/// The newest NCCL minor version whose result codes the bindings hold.
pub(crate) const MAX_VERSION: (u32, u32) = (2, 30);

/// What the probe of libnccl found: its version, or why it cannot be used.
fn library() -> Result<(u32, u32, u32), NcclError> {
    static LIBRARY: OnceLock<Result<(u32, u32, u32), NcclError>> = OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            // SAFETY: `is_culib_present` is unsafe only because loading a shared library
            // runs its initialisers. It loads libnccl under cudarc's names, exactly what
            // cudarc's first NCCL call would do; NCCL's initialisers are meant to run in
            // any process that links it. The library is unloaded again.
            if !unsafe { sys::is_culib_present() } {
                return Err(NcclError::NoLibrary {
                    tried: cudarc::get_lib_name_candidates("nccl"),
                });
            }
            let mut code: c_int = 0;
            // SAFETY: the library is present (checked above), so cudarc finds the symbol;
            // `ncclGetVersion` writes one `int` through the pointer, which is live.
            let res = unsafe { sys::ncclGetVersion(&mut code) };
            check("ncclGetVersion", res, None)?;
            let code = u32::try_from(code).unwrap_or(0);
            // NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z from 2.9 on, and
            // X * 1000 + Y * 100 + Z before.
            let version = if code >= 20900 {
                (code / 10000, code / 100 % 100, code % 100)
            } else {
                (code / 1000, code / 100 % 10, code % 100)
            };
            let minor = (version.0, version.1);
            if minor < MIN_VERSION || minor > MAX_VERSION {
                return Err(NcclError::UnsupportedVersion {
                    found: format!("{}.{}.{}", version.0, version.1, version.2),
                    required: "2.10 to 2.30",
                });
            }
            Ok(version)
        })
        .clone()
}

/// Whether libnccl can be loaded and is a version the collectives support. Never panics.
pub(crate) fn available() -> bool {
    library().is_ok()
}

/// The version of the NCCL library loaded, `(major, minor, patch)`.
pub(crate) fn version() -> Result<(u32, u32, u32), NcclError> {
    library()
}

/// NCCL's string for `res` (`ncclGetErrorString`).
fn error_string(res: sys::ncclResult_t) -> String {
    // SAFETY: called only once the library was found (`check` runs after a call, which
    // needed the library); `ncclGetErrorString` returns a pointer to a static NUL-terminated
    // string (or null, handled).
    let ptr = unsafe { sys::ncclGetErrorString(res) };
    if ptr.is_null() {
        return format!("{res:?}");
    }
    // SAFETY: a non-null pointer from `ncclGetErrorString` is a static C string.
    let text = unsafe { CStr::from_ptr(ptr) }.to_string_lossy();
    format!("{res:?}: {text}")
}

/// NCCL's last error message on `comm` (`ncclGetLastError`), if any.
fn last_error(comm: sys::ncclComm_t) -> Option<String> {
    // SAFETY: `comm` is a live communicator of this process (the callers hold it), or null,
    // which NCCL accepts (the last error of the thread); the returned pointer is a
    // NUL-terminated string NCCL keeps alive until its next call, read at once.
    let ptr = unsafe { sys::ncclGetLastError(comm) };
    if ptr.is_null() {
        return None;
    }
    // SAFETY: as above: a live C string.
    let text = unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .trim()
        .to_owned();
    (!text.is_empty()).then_some(text)
}

/// `Ok` for `ncclSuccess`, [`NcclError::Call`] naming `call` otherwise.
fn check(
    call: &'static str,
    res: sys::ncclResult_t,
    comm: Option<sys::ncclComm_t>,
) -> Result<(), NcclError> {
    if res == sys::ncclResult_t::ncclSuccess {
        return Ok(());
    }
    let mut message = error_string(res);
    if let Some(last) = last_error(comm.unwrap_or(std::ptr::null_mut())) {
        message = format!("{message} ({last})");
    }
    Err(NcclError::Call { call, message })
}

/// NCCL's data type for the crate's element type (`NcclElement` admits no other).
fn data_type(dtype: DType) -> Result<sys::ncclDataType_t, NcclError> {
    use sys::ncclDataType_t as T;
    Ok(match dtype {
        DType::F32 => T::ncclFloat32,
        DType::F64 => T::ncclFloat64,
        DType::F16 => T::ncclFloat16,
        DType::BF16 => T::ncclBfloat16,
        DType::I32 => T::ncclInt32,
        DType::I64 => T::ncclInt64,
        DType::U8 => T::ncclUint8,
        DType::I8 => T::ncclInt8,
        DType::U32 => T::ncclUint32,
        DType::U64 => T::ncclUint64,
        DType::I16 | DType::U16 => {
            return Err(NcclError::Call {
                call: "ncclDataType_t",
                message: format!("{dtype} has no NCCL data type"),
            })
        }
        DType::Bool => {
            return Err(NcclError::Call {
                call: "ncclDataType_t",
                message: "bool has no NCCL data type".to_owned(),
            })
        }
    })
}

fn red_op(op: ReduceOp) -> sys::ncclRedOp_t {
    use sys::ncclRedOp_t as R;
    match op {
        ReduceOp::Sum => R::ncclSum,
        ReduceOp::Prod => R::ncclProd,
        ReduceOp::Max => R::ncclMax,
        ReduceOp::Min => R::ncclMin,
        ReduceOp::Avg => R::ncclAvg,
    }
}

/// A count of ranks or a rank as NCCL's `int`.
fn as_int(op: &'static str, n: usize, world_size: usize) -> Result<c_int, NcclError> {
    c_int::try_from(n).map_err(|_| NcclError::RankOutOfRange {
        op,
        rank: n,
        world_size,
    })
}

/// A unique id of 128 bytes (`ncclGetUniqueId`). Rank 0 makes it and every rank passes it to
/// [`comm_init_rank`]. It starts NCCL's bootstrap listener in this process.
pub(crate) fn unique_id() -> Result<[u8; 128], NcclError> {
    library()?;
    let mut id = sys::ncclUniqueId { internal: [0; 128] };
    // SAFETY: the library is present; `ncclGetUniqueId` writes one `ncclUniqueId` through
    // the pointer, which is live and of that type.
    let res = unsafe { sys::ncclGetUniqueId(&mut id) };
    check("ncclGetUniqueId", res, None)?;
    // `c_char` is `i8` or `u8` by target; either way a byte.
    Ok(id.internal.map(|c| c as u8))
}

/// A communicator handle (`ncclComm_t`), destroyed with [`comm_destroy`] or [`comm_abort`].
///
/// Invariant: the handle is a live communicator created by [`comm_init_rank`] or
/// [`comm_init_all`], until one of those consumes it.
#[derive(Debug)]
pub(crate) struct RawComm(sys::ncclComm_t);

// SAFETY: an `ncclComm_t` is an opaque handle NCCL owns; it may be used from any thread as
// long as calls on it do not overlap, which the module's threading rule guarantees (every
// call on it is made under the process-wide lock, or consumes it).
unsafe impl Send for RawComm {}
// SAFETY: as for `Send`: `&RawComm` allows only the calls below, all made under the lock.
unsafe impl Sync for RawComm {}

/// `ncclCommInitRank`: rank `rank` of `world_size` on `gpu`, meeting the other ranks through
/// `id`. Blocks until every rank has joined.
pub(crate) fn comm_init_rank(
    gpu: &Gpu,
    world_size: usize,
    id: &[u8; 128],
    rank: usize,
) -> Result<RawComm, Error> {
    const OP: &str = "ncclCommInitRank";
    library()?;
    let nranks = as_int(OP, world_size, world_size)?;
    let rank = as_int(OP, rank, world_size)?;
    // NCCL uses the CUDA runtime's current device, which is the device of the current
    // (primary) context.
    driver::bind(gpu.context())?;
    let id = sys::ncclUniqueId {
        internal: id.map(|b| b as _),
    };
    let mut comm: sys::ncclComm_t = std::ptr::null_mut();
    // SAFETY: the library is present; `comm` is a live out-pointer for one handle, `id` is
    // passed by value.
    let res = unsafe { sys::ncclCommInitRank(&mut comm, nranks, id, rank) };
    check(OP, res, None)?;
    Ok(non_null(OP, comm)?)
}

/// `ncclCommInitAll`: one communicator per device in `ordinals` (rank `i` on
/// `ordinals[i]`), all in this process.
pub(crate) fn comm_init_all(ordinals: &[usize]) -> Result<Vec<RawComm>, NcclError> {
    const OP: &str = "ncclCommInitAll";
    library()?;
    let n = ordinals.len();
    let devices = ordinals
        .iter()
        .map(|&d| as_int(OP, d, n))
        .collect::<Result<Vec<c_int>, _>>()?;
    let mut comms: Vec<sys::ncclComm_t> = vec![std::ptr::null_mut(); n];
    // SAFETY: the library is present; `comms` holds `n` writable handles and `devices` `n`
    // device numbers, both live for the call.
    let res =
        unsafe { sys::ncclCommInitAll(comms.as_mut_ptr(), as_int(OP, n, n)?, devices.as_ptr()) };
    check(OP, res, None)?;
    let mut out = Vec::with_capacity(n);
    for comm in comms {
        match non_null(OP, comm) {
            Ok(c) => out.push(c),
            Err(e) => {
                for c in out {
                    let _ = comm_destroy(c);
                }
                return Err(e);
            }
        }
    }
    Ok(out)
}

fn non_null(op: &'static str, comm: sys::ncclComm_t) -> Result<RawComm, NcclError> {
    if comm.is_null() {
        Err(NcclError::Call {
            call: op,
            message: "NCCL returned no communicator".to_owned(),
        })
    } else {
        Ok(RawComm(comm))
    }
}

/// `ncclCommUserRank` and `ncclCommCuDevice` and `ncclCommCount`: the communicator's rank,
/// device ordinal and number of ranks, to check them against what was asked.
pub(crate) fn comm_info(comm: &RawComm) -> Result<(usize, usize, usize), NcclError> {
    let mut rank: c_int = -1;
    let mut device: c_int = -1;
    let mut count: c_int = -1;
    let _lock = crate::runtime::free_lock();
    // SAFETY: `comm.0` is live (invariant); each call writes one `int` through a live
    // pointer. The lock serialises calls on the handle (module docs).
    let res = unsafe { sys::ncclCommUserRank(comm.0, &mut rank) };
    check("ncclCommUserRank", res, Some(comm.0))?;
    // SAFETY: as above.
    let res = unsafe { sys::ncclCommCuDevice(comm.0, &mut device) };
    check("ncclCommCuDevice", res, Some(comm.0))?;
    // SAFETY: as above.
    let res = unsafe { sys::ncclCommCount(comm.0, &mut count) };
    check("ncclCommCount", res, Some(comm.0))?;
    let us = |v: c_int| usize::try_from(v).unwrap_or(usize::MAX);
    Ok((us(rank), us(device), us(count)))
}

/// `ncclCommGetAsyncError`: an error NCCL met while running this communicator's work (a
/// peer that failed, a network error), if any.
pub(crate) fn async_error(comm: &RawComm) -> Result<(), NcclError> {
    let mut state = sys::ncclResult_t::ncclSuccess;
    let _lock = crate::runtime::free_lock();
    // SAFETY: `comm.0` is live (invariant); the call writes one `ncclResult_t` through a live
    // pointer; the lock serialises calls on the handle.
    let res = unsafe { sys::ncclCommGetAsyncError(comm.0, &mut state) };
    check("ncclCommGetAsyncError", res, Some(comm.0))?;
    check(
        "ncclCommGetAsyncError (asynchronous error)",
        state,
        Some(comm.0),
    )
}

/// `ncclCommDestroy`: waits for the communicator's work and frees it.
pub(crate) fn comm_destroy(comm: RawComm) -> Result<(), NcclError> {
    // SAFETY: `comm.0` is live (invariant) and consumed here, so it is destroyed once and
    // never used again.
    let res = unsafe { sys::ncclCommDestroy(comm.0) };
    check("ncclCommDestroy", res, None)
}

/// `ncclCommAbort`: stops the communicator's work (kernels still waiting for a peer exit)
/// and frees it.
pub(crate) fn comm_abort(comm: RawComm) -> Result<(), NcclError> {
    // SAFETY: as in `comm_destroy`.
    let res = unsafe { sys::ncclCommAbort(comm.0) };
    check("ncclCommAbort", res, None)
}

/// `ncclGroupStart`.
pub(crate) fn group_start() -> Result<(), NcclError> {
    // SAFETY: the library is present (a communicator exists); the call takes no argument.
    check("ncclGroupStart", unsafe { sys::ncclGroupStart() }, None)
}

/// `ncclGroupEnd`: launches the operations queued since `ncclGroupStart`.
pub(crate) fn group_end() -> Result<(), NcclError> {
    // SAFETY: as for `group_start`.
    check("ncclGroupEnd", unsafe { sys::ncclGroupEnd() }, None)
}

/// One collective call, with the arguments every form shares.
pub(crate) struct Call<'a> {
    /// The communicator (one rank).
    pub(crate) comm: &'a RawComm,
    /// The stream the operation is queued on (of the communicator's device).
    pub(crate) stream: &'a Stream,
    /// The element type.
    pub(crate) dtype: DType,
    /// Address of the input.
    pub(crate) send: u64,
    /// Address of the output (equal to `send` for in-place all-reduce and broadcast).
    pub(crate) recv: u64,
    /// NCCL's count: the elements of the output for all-reduce, broadcast and reduce-scatter,
    /// of the input for all-gather.
    pub(crate) count: usize,
}

/// Which collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Collective {
    /// `ncclAllReduce`.
    AllReduce(ReduceOp),
    /// `ncclBroadcast` from the root rank.
    Broadcast(usize),
    /// `ncclAllGather`.
    AllGather,
    /// `ncclReduceScatter`.
    ReduceScatter(ReduceOp),
}

/// Queues one collective on `call.stream`.
///
/// # Safety
///
/// With `n = call.count`, `w` the communicator's number of ranks and `s` the element size:
/// - the input `[send, send + k·s)` is live device memory of the communicator's device
///   holding initialised elements of `call.dtype`, where `k` is `n` for all-reduce,
///   broadcast and all-gather and `n·w` for reduce-scatter; the output
///   `[recv, recv + m·s)` is live device memory of that device, where `m` is `n` except
///   for all-gather (`n·w`);
/// - both stay allocated until the operation has run on `call.stream`, no other work reads
///   the output or writes either range until then, and the operation is ordered after
///   every earlier write of the input and access of the output (stream order);
/// - input and output are either disjoint or placed as NCCL's in-place forms say: equal
///   addresses for all-reduce and broadcast, `send == recv + rank·n·s` for all-gather and
///   `recv == send + rank·n·s` for reduce-scatter;
/// - every other rank of the communicator queues the same collective with the same count,
///   type, operation and root, and its memory obeys the same rules (NCCL's contract;
///   `launch.rs` checks what one process can see);
/// - the caller holds the process-wide lock (module docs).
pub(crate) unsafe fn collective(what: Collective, call: &Call<'_>) -> Result<(), NcclError> {
    let dtype = data_type(call.dtype)?;
    let comm = call.comm.0;
    let stream = call.stream.cuda().cu_stream().cast();
    let send = call.send as usize as *const std::ffi::c_void;
    let recv = call.recv as usize as *mut std::ffi::c_void;
    let (name, res) = match what {
        Collective::AllReduce(op) => (
            "ncclAllReduce",
            // SAFETY: the caller's contract covers the ranges, their lifetime and order;
            // `comm` is live (invariant) and `stream` a live stream of its device.
            unsafe { sys::ncclAllReduce(send, recv, call.count, dtype, red_op(op), comm, stream) },
        ),
        Collective::Broadcast(root) => {
            let root = as_int("ncclBroadcast", root, root)?;
            (
                "ncclBroadcast",
                // SAFETY: as above.
                unsafe { sys::ncclBroadcast(send, recv, call.count, dtype, root, comm, stream) },
            )
        }
        Collective::AllGather => (
            "ncclAllGather",
            // SAFETY: as above.
            unsafe { sys::ncclAllGather(send, recv, call.count, dtype, comm, stream) },
        ),
        Collective::ReduceScatter(op) => (
            "ncclReduceScatter",
            // SAFETY: as above.
            unsafe {
                sys::ncclReduceScatter(send, recv, call.count, dtype, red_op(op), comm, stream)
            },
        ),
    };
    check(name, res, Some(comm))
}
