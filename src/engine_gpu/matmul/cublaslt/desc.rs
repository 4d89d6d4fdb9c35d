//! The matmul descriptor and matrix layouts of one [`Problem`], destroyed on drop.

use std::ffi::c_void;

use cudarc::cublaslt::sys as lt;

use super::{Call, DataType, Matrix, Problem};
use crate::error::GpuError;

/// The descriptors of one [`Problem`], destroyed on drop.
pub(super) struct Descriptors {
    pub matmul: lt::cublasLtMatmulDesc_t,
    pub a: lt::cublasLtMatrixLayout_t,
    pub b: lt::cublasLtMatrixLayout_t,
    pub d: lt::cublasLtMatrixLayout_t,
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
pub(super) unsafe fn desc_attr<V>(
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
    pub(super) fn new(p: &Problem) -> Result<Descriptors, GpuError> {
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
