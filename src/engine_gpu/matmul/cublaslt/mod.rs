//! Every cuBLASLt call of the crate (issue 27): the library probe, the handles, the matmul
//! descriptor and matrix layouts of one [`Problem`], the heuristic, and `cublasLtMatmul`.
//! `tests/it/architecture.rs` keeps cudarc's cuBLASLt bindings inside this folder: the probe
//! and the problem's types here, the handles (`handle`), the descriptors (`desc`), the
//! heuristic and the call (`call`).
//!
//! cudarc loads libcublasLt lazily and panics when it is missing, so every entry point here
//! probes for the library first ([`require`]) and returns [`GpuError::NoCublasLt`] instead.
//! Descriptors are host objects, made per call and destroyed on drop; a handle is made once
//! per thread and device (cuBLASLt handles are not bound to a stream, and a handle is not
//! shared between threads, which cuBLAS does not promise to be safe).

pub(crate) mod call;
mod desc;
mod handle;

use std::ffi::c_void;
use std::sync::OnceLock;

use cudarc::cublaslt::result::CublasError;
use cudarc::cublaslt::sys as lt;

use crate::error::GpuError;

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

pub(super) trait Call {
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
    pub(super) fn cuda(self) -> lt::cudaDataType {
        match self {
            DataType::F16 => lt::cudaDataType::CUDA_R_16F,
            DataType::Bf16 => lt::cudaDataType::CUDA_R_16BF,
            DataType::F32 => lt::cudaDataType::CUDA_R_32F,
            DataType::F64 => lt::cudaDataType::CUDA_R_64F,
        }
    }

    /// The type of `alpha` and `beta` (the scale type): `f64` for `f64`, else `f32`.
    pub(super) fn scale(self) -> lt::cudaDataType {
        match self {
            DataType::F64 => lt::cudaDataType::CUDA_R_64F,
            _ => lt::cudaDataType::CUDA_R_32F,
        }
    }

    pub(super) fn compute(self, tf32: bool) -> lt::cublasComputeType_t {
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
    pub(super) fn raw(self) -> lt::cublasLtEpilogue_t {
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
    pub(super) algo: lt::cublasLtMatmulAlgo_t,
    pub workspace: usize,
}

/// `alpha` and `beta` in the problem's scale type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scale {
    F32(f32),
    F64(f64),
}

impl Scale {
    pub(super) fn ptr(&self) -> *const c_void {
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
