//! Every cuBLASLt call of the crate (issue 27): the library probe, the handles, the matmul
//! descriptor and matrix layouts of one [`Problem`], the heuristic, and `cublasLtMatmul`.
//! `tests/it/architecture.rs` keeps cudarc's cuBLASLt bindings inside this file.
//!
//! cudarc loads libcublasLt lazily and panics when it is missing, so every entry point here
//! probes for the library first ([`require`]) and returns [`GpuError::NoCublasLt`] instead.
//! Descriptors are host objects, made per call and destroyed on drop; a handle is made once
//! per thread and device (cuBLASLt handles are not bound to a stream, and a handle is not
//! shared between threads, which cuBLAS does not promise to be safe).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::OnceLock;

use cudarc::cublaslt::result::CublasError;
use cudarc::cublaslt::sys as lt;
use cudarc::driver::{CudaContext, CudaStream};

use crate::error::GpuError;
use crate::runtime::driver::bind;
use crate::runtime::graph::state;

/// The shared-library names cudarc tries for cuBLASLt, in order (for the error message).
fn candidates() -> Vec<String> {
    cudarc::get_lib_name_candidates("cublasLt")
}

/// Whether libcublasLt can be loaded (probed once per process).
pub(crate) fn available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only dlopens the candidate names and closes them again;
    // loading cuBLASLt runs its initialisers, which are made to run in any CUDA process (and
    // are what cudarc's first call would run anyway). No cuBLASLt state is touched.
    *PRESENT.get_or_init(|| unsafe { lt::is_culib_present() })
}

/// `Ok` when libcublasLt can be loaded, else [`GpuError::NoCublasLt`].
pub(crate) fn require() -> Result<(), GpuError> {
    if available() {
        Ok(())
    } else {
        Err(GpuError::NoCublasLt {
            tried: candidates(),
        })
    }
}

fn failed(call: &'static str, e: CublasError) -> GpuError {
    GpuError::Cublas {
        call,
        message: format!("{:?}", e.0),
    }
}

trait Call {
    fn call(self, name: &'static str) -> Result<(), GpuError>;
}

impl Call for lt::cublasStatus_t {
    fn call(self, name: &'static str) -> Result<(), GpuError> {
        self.result().map_err(|e| failed(name, e))
    }
}

/// Element types of the operands (and of the bias and the output).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum DataType {
    F16,
    Bf16,
    F32,
    F64,
}

impl DataType {
    fn cuda(self) -> lt::cudaDataType {
        match self {
            DataType::F16 => lt::cudaDataType::CUDA_R_16F,
            DataType::Bf16 => lt::cudaDataType::CUDA_R_16BF,
            DataType::F32 => lt::cudaDataType::CUDA_R_32F,
            DataType::F64 => lt::cudaDataType::CUDA_R_64F,
        }
    }

    /// The type of `alpha` and `beta` (the scale type): `f64` for `f64`, else `f32`.
    fn scale(self) -> lt::cudaDataType {
        match self {
            DataType::F64 => lt::cudaDataType::CUDA_R_64F,
            _ => lt::cudaDataType::CUDA_R_32F,
        }
    }

    fn compute(self, tf32: bool) -> lt::cublasComputeType_t {
        match self {
            DataType::F64 => lt::cublasComputeType_t::CUBLAS_COMPUTE_64F,
            DataType::F32 if tf32 => lt::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
            _ => lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        }
    }
}

/// The fused epilogue cuBLASLt applies (its GELU is the tanh approximation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Epilogue {
    Default,
    Bias,
    Relu,
    ReluBias,
    Gelu,
    GeluBias,
}

impl Epilogue {
    fn raw(self) -> lt::cublasLtEpilogue_t {
        use lt::cublasLtEpilogue_t as E;
        match self {
            Epilogue::Default => E::CUBLASLT_EPILOGUE_DEFAULT,
            Epilogue::Bias => E::CUBLASLT_EPILOGUE_BIAS,
            Epilogue::Relu => E::CUBLASLT_EPILOGUE_RELU,
            Epilogue::ReluBias => E::CUBLASLT_EPILOGUE_RELU_BIAS,
            Epilogue::Gelu => E::CUBLASLT_EPILOGUE_GELU,
            Epilogue::GeluBias => E::CUBLASLT_EPILOGUE_GELU_BIAS,
        }
    }

    /// Whether the epilogue reads a bias vector.
    pub(crate) fn has_bias(self) -> bool {
        matches!(
            self,
            Epilogue::Bias | Epilogue::ReluBias | Epilogue::GeluBias
        )
    }
}

/// One column-major matrix of the call, as cuBLASLt sees it: `rows x cols` with leading
/// dimension `ld` (`ld >= max(1, rows)`), `batch` of them `batch_stride` elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Matrix {
    pub rows: u64,
    pub cols: u64,
    pub ld: i64,
    pub batch: i32,
    pub batch_stride: i64,
}

/// Everything the heuristic's choice depends on: the cache key of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Problem {
    pub dtype: DataType,
    pub tf32: bool,
    /// `op(A)` is `A` transposed (`CUBLAS_OP_T`).
    pub trans_a: bool,
    pub trans_b: bool,
    pub a: Matrix,
    pub b: Matrix,
    /// C and D (one layout: C is D, read only when `beta != 0`).
    pub d: Matrix,
    pub epilogue: Epilogue,
    /// The byte alignment every pointer of A, B and D (and the bias) is known to have.
    pub align_a: u32,
    pub align_b: u32,
    pub align_d: u32,
}

/// The algorithm the heuristic chose for a [`Problem`], and the workspace it needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Algo {
    algo: lt::cublasLtMatmulAlgo_t,
    pub workspace: usize,
}

/// `alpha` and `beta` in the problem's scale type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scale {
    F32(f32),
    F64(f64),
}

impl Scale {
    fn ptr(&self) -> *const c_void {
        match self {
            Scale::F32(v) => (v as *const f32).cast(),
            Scale::F64(v) => (v as *const f64).cast(),
        }
    }
}

/// The device addresses of one call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pointers {
    pub a: u64,
    pub b: u64,
    pub d: u64,
    /// Read only by an epilogue with a bias (0 otherwise).
    pub bias: u64,
    pub workspace: u64,
}

/// A cuBLASLt handle, destroyed on drop.
struct Handle(lt::cublasLtHandle_t);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle was made by `cublasLtCreate` and is destroyed once, here; its
        // owner (this thread's map) no longer hands it out.
        let _ = unsafe { lt::cublasLtDestroy(self.0) };
    }
}

thread_local! {
    /// This thread's handle per device ordinal.
    static HANDLES: RefCell<HashMap<usize, Handle>> = RefCell::new(HashMap::new());
}

/// Runs `f` with this thread's handle for device `ordinal` (made on first use, with the
/// device's context current).
fn with_handle<R>(
    ctx: &CudaContext,
    f: impl FnOnce(lt::cublasLtHandle_t) -> Result<R, GpuError>,
) -> Result<R, GpuError> {
    require()?;
    bind(ctx)?;
    // Inside a graph capture (`Gpu::capture`, global mode) cuBLASLt's own setup work (its
    // first use of a handle or a kernel) makes calls the global mode refuses, and the call
    // fails with CUBLAS_STATUS_INTERNAL_ERROR: relax this thread's mode around cuBLASLt, as
    // the allocator does around `cuMemAlloc`. Its launches are still recorded into the graph;
    // a synchronisation of the capturing stream is still refused.
    state::relaxed(|| with_handle_relaxed(ctx, f))
}

fn with_handle_relaxed<R>(
    ctx: &CudaContext,
    f: impl FnOnce(lt::cublasLtHandle_t) -> Result<R, GpuError>,
) -> Result<R, GpuError> {
    let ordinal = ctx.ordinal();
    let raw = HANDLES.with(|h| -> Result<lt::cublasLtHandle_t, GpuError> {
        let mut map = h.borrow_mut();
        if let Some(handle) = map.get(&ordinal) {
            return Ok(handle.0);
        }
        let mut raw: lt::cublasLtHandle_t = std::ptr::null_mut();
        // SAFETY: the library is present (`require`); `raw` is a live local it writes.
        unsafe { lt::cublasLtCreate(&mut raw) }.call("cublasLtCreate")?;
        map.insert(ordinal, Handle(raw));
        Ok(raw)
    })?;
    f(raw)
}

/// The descriptors of one [`Problem`], destroyed on drop.
struct Descriptors {
    matmul: lt::cublasLtMatmulDesc_t,
    a: lt::cublasLtMatrixLayout_t,
    b: lt::cublasLtMatrixLayout_t,
    d: lt::cublasLtMatrixLayout_t,
}

impl Drop for Descriptors {
    fn drop(&mut self) {
        // SAFETY: each non-null descriptor was made by its create call below and is
        // destroyed once, here; nothing uses it after the struct is dropped.
        unsafe {
            if !self.a.is_null() {
                let _ = lt::cublasLtMatrixLayoutDestroy(self.a);
            }
            if !self.b.is_null() {
                let _ = lt::cublasLtMatrixLayoutDestroy(self.b);
            }
            if !self.d.is_null() {
                let _ = lt::cublasLtMatrixLayoutDestroy(self.d);
            }
            if !self.matmul.is_null() {
                let _ = lt::cublasLtMatmulDescDestroy(self.matmul);
            }
        }
    }
}

/// Sets a plain-data attribute of a matmul descriptor.
///
/// # Safety
/// `desc` is a live descriptor and `V` is the type cuBLASLt documents for `attr`.
unsafe fn desc_attr<V>(
    desc: lt::cublasLtMatmulDesc_t,
    attr: lt::cublasLtMatmulDescAttributes_t,
    value: &V,
) -> Result<(), GpuError> {
    // SAFETY: forwarded; `value` is live for the call, which copies it.
    unsafe {
        lt::cublasLtMatmulDescSetAttribute(desc, attr, (value as *const V).cast(), size_of::<V>())
    }
    .call("cublasLtMatmulDescSetAttribute")
}

/// A matrix layout with its batch count and stride.
fn layout(
    dtype: DataType,
    m: &Matrix,
    out: &mut lt::cublasLtMatrixLayout_t,
) -> Result<(), GpuError> {
    use lt::cublasLtMatrixLayoutAttribute_t as L;
    // SAFETY: the library is present (callers hold a handle); `out` is a live slot.
    unsafe { lt::cublasLtMatrixLayoutCreate(out, dtype.cuda(), m.rows, m.cols, m.ld) }
        .call("cublasLtMatrixLayoutCreate")?;
    if m.batch > 1 {
        for (attr, bytes) in [
            (
                L::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                &m.batch as *const i32 as *const c_void,
            ),
            (
                L::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                &m.batch_stride as *const i64 as *const c_void,
            ),
        ] {
            let size = if attr == L::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT {
                size_of::<i32>()
            } else {
                size_of::<i64>()
            };
            // SAFETY: `*out` is the live layout made above; the batch count is an int32 and
            // the batch offset an int64 (cuBLASLt's documented types), both live locals.
            unsafe { lt::cublasLtMatrixLayoutSetAttribute(*out, attr, bytes, size) }
                .call("cublasLtMatrixLayoutSetAttribute")?;
        }
    }
    Ok(())
}

impl Descriptors {
    fn new(p: &Problem) -> Result<Descriptors, GpuError> {
        use lt::cublasLtMatmulDescAttributes_t as A;
        let mut d = Descriptors {
            matmul: std::ptr::null_mut(),
            a: std::ptr::null_mut(),
            b: std::ptr::null_mut(),
            d: std::ptr::null_mut(),
        };
        // SAFETY: the library is present (callers hold a handle); `d.matmul` is a live slot
        // that `Drop` destroys once set.
        unsafe {
            lt::cublasLtMatmulDescCreate(&mut d.matmul, p.dtype.compute(p.tf32), p.dtype.scale())
        }
        .call("cublasLtMatmulDescCreate")?;
        // cublasOperation_t: CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 (an int32 attribute).
        let (ta, tb) = (i32::from(p.trans_a), i32::from(p.trans_b));
        // SAFETY: `d.matmul` is live; TRANSA/TRANSB take an int32 (cublasOperation_t), the
        // epilogue a uint32 (cublasLtEpilogue_t), the bias data type an int32 (cudaDataType).
        unsafe {
            desc_attr(d.matmul, A::CUBLASLT_MATMUL_DESC_TRANSA, &ta)?;
            desc_attr(d.matmul, A::CUBLASLT_MATMUL_DESC_TRANSB, &tb)?;
            let epilogue = p.epilogue.raw() as u32;
            desc_attr(d.matmul, A::CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue)?;
            if p.epilogue.has_bias() {
                let bias_type = p.dtype.cuda() as i32;
                desc_attr(d.matmul, A::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type)?;
            }
        }
        layout(p.dtype, &p.a, &mut d.a)?;
        layout(p.dtype, &p.b, &mut d.b)?;
        layout(p.dtype, &p.d, &mut d.d)?;
        Ok(d)
    }
}

/// The largest workspace a plan may ask for: 32 MiB, PyTorch's default cuBLAS workspace on
/// Hopper (`CUBLAS_WORKSPACE_CONFIG` unset). Only what the chosen algorithm needs is
/// allocated per call.
pub(crate) const MAX_WORKSPACE: usize = 32 << 20;

/// cuBLASLt's fastest algorithm for `p` on the device of `ctx`, or `None` when it has none
/// (a layout, alignment or epilogue it does not support).
///
/// # Errors
/// [`GpuError::NoCublasLt`]; [`GpuError::Cublas`] when a call fails otherwise.
pub(crate) fn heuristic(ctx: &CudaContext, p: &Problem) -> Result<Option<Algo>, GpuError> {
    use lt::cublasLtMatmulPreferenceAttributes_t as P;
    with_handle(ctx, |handle| {
        let desc = Descriptors::new(p)?;
        struct Pref(lt::cublasLtMatmulPreference_t);
        impl Drop for Pref {
            fn drop(&mut self) {
                if !self.0.is_null() {
                    // SAFETY: made by `cublasLtMatmulPreferenceCreate`, destroyed once.
                    let _ = unsafe { lt::cublasLtMatmulPreferenceDestroy(self.0) };
                }
            }
        }
        let mut pref = Pref(std::ptr::null_mut());
        // SAFETY: the library is present; `pref.0` is a live slot.
        unsafe { lt::cublasLtMatmulPreferenceCreate(&mut pref.0) }
            .call("cublasLtMatmulPreferenceCreate")?;
        let workspace = MAX_WORKSPACE as u64;
        for (attr, bytes, size) in [
            (
                P::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &workspace as *const u64 as *const c_void,
                size_of::<u64>(),
            ),
            (
                P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                &p.align_a as *const u32 as *const c_void,
                size_of::<u32>(),
            ),
            (
                P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                &p.align_b as *const u32 as *const c_void,
                size_of::<u32>(),
            ),
            (
                P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                &p.align_d as *const u32 as *const c_void,
                size_of::<u32>(),
            ),
            (
                P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                &p.align_d as *const u32 as *const c_void,
                size_of::<u32>(),
            ),
        ] {
            // SAFETY: `pref.0` is live; the workspace limit is a uint64 and the alignments
            // uint32 (cuBLASLt's documented types), all live for the call.
            unsafe { lt::cublasLtMatmulPreferenceSetAttribute(pref.0, attr, bytes, size) }
                .call("cublasLtMatmulPreferenceSetAttribute")?;
        }
        let mut result = std::mem::MaybeUninit::<lt::cublasLtMatmulHeuristicResult_t>::zeroed();
        let mut found: i32 = 0;
        // SAFETY: every descriptor is live; `result` has room for the one result asked for
        // and `found` is a live local.
        let status = unsafe {
            lt::cublasLtMatmulAlgoGetHeuristic(
                handle,
                desc.matmul,
                desc.a,
                desc.b,
                desc.d,
                desc.d,
                pref.0,
                1,
                result.as_mut_ptr(),
                &mut found,
            )
        };
        // Not supported, or a layout this library version refuses: the caller falls back
        // (copies, or no fused epilogue).
        if matches!(
            status,
            lt::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED
                | lt::cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE
        ) || (status == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS && found < 1)
        {
            return Ok(None);
        }
        status.call("cublasLtMatmulAlgoGetHeuristic")?;
        // SAFETY: the call succeeded and wrote one result (`found >= 1`); the struct is
        // plain data, zeroed before.
        let result = unsafe { result.assume_init() };
        if result.state != lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Ok(None);
        }
        Ok(Some(Algo {
            algo: result.algo,
            workspace: result.workspaceSize,
        }))
    })
}

/// Queues `D = epilogue(alpha·op(A)·op(B) + beta·D)` on `stream` with `algo` (chosen for
/// `p` by [`heuristic`] on this device).
///
/// # Safety
/// - `ptrs.a`, `ptrs.b` address matrices laid out as `p.a`, `p.b` (every element the layouts
///   reach, batches included) in live device memory of `stream`'s device that stays
///   allocated, and unwritten by other streams, until the call has run on `stream`;
/// - `ptrs.d` likewise for `p.d`, memory nothing else reads or writes meanwhile; holding
///   valid values when `beta` is not zero (cuBLASLt reads C only then);
/// - `ptrs.bias` addresses `p.d.rows` contiguous elements when `p.epilogue.has_bias()`;
/// - `ptrs.workspace` addresses `algo.workspace` bytes no other work uses meanwhile;
/// - every pointer is aligned to the problem's alignments; `alpha` and `beta` are of the
///   problem's scale type.
pub(crate) unsafe fn matmul(
    ctx: &CudaContext,
    stream: &CudaStream,
    p: &Problem,
    algo: &Algo,
    ptrs: Pointers,
    alpha: Scale,
    beta: Scale,
) -> Result<(), GpuError> {
    use lt::cublasLtMatmulDescAttributes_t as A;
    with_handle(ctx, |handle| {
        let desc = Descriptors::new(p)?;
        if p.epilogue.has_bias() {
            let bias = ptrs.bias as *const c_void;
            // SAFETY: `desc.matmul` is live; the bias pointer attribute is a device pointer
            // (`const void*`), a live local.
            unsafe { desc_attr(desc.matmul, A::CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias)? };
        }
        // SAFETY: the descriptors are live and describe `p`, for which `algo` was chosen on
        // this device; the memory behind every pointer is as this function's contract
        // requires until the call has run on `stream`; `alpha` and `beta` point to host
        // values of the scale type (host pointer mode, read before the call returns, also
        // when a graph captures it). C is D (one layout, in place), which cuBLASLt allows.
        unsafe {
            lt::cublasLtMatmul(
                handle,
                desc.matmul,
                alpha.ptr(),
                ptrs.a as *const c_void,
                desc.a,
                ptrs.b as *const c_void,
                desc.b,
                beta.ptr(),
                ptrs.d as *const c_void,
                desc.d,
                ptrs.d as *mut c_void,
                desc.d,
                &algo.algo,
                ptrs.workspace as *mut c_void,
                algo.workspace,
                stream.cu_stream() as lt::cudaStream_t,
            )
        }
        .call("cublasLtMatmul")
    })
}
