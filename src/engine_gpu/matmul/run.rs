//! One matmul job on the GPU: operands prepared (copied where no layout expresses them), the
//! problem described, the plan looked up, cuBLASLt queued (once per looped batch), then the
//! copy back and the pointwise part of the epilogue. The order of the fallbacks is in
//! [`matmul`].

use super::cublaslt::{self, Epilogue, Pointers, Scale};
use super::layout::stored;
use super::operands::{contiguous_copy, zeros, Buf, Operand, OP};
use super::plan;
use super::problem::{data_type, describe, epilogue, matrix, overflow};
use crate::element::{Element, FloatElement};
use crate::engine_gpu::pointwise::launch as pointwise;
use crate::error::{GpuError, Result};
use crate::layout::Layout;
use crate::ops::table::{Add, Gelu, GeluTanh, Identity, Relu};
use crate::runtime::{Gpu, GpuStorage};
use crate::tensor::matmul::{Activation, MatmulJob};
use crate::tensor::TensorViewMut;

/// The byte address of element `base + off` of a buffer at `ptr` (`T`-sized elements).
fn address(ptr: u64, base: usize, off: isize, size: usize) -> Result<u64> {
    let e = isize::try_from(base)
        .ok()
        .and_then(|b| b.checked_add(off))
        .and_then(|e| u64::try_from(e).ok())
        .ok_or_else(|| overflow("an element offset"))?;
    Ok(e.checked_mul(size as u64)
        .and_then(|b| b.checked_add(ptr))
        .ok_or_else(|| overflow("a device address"))?)
}

#[cfg(test)]
thread_local! {
    /// Tests only: the tries below this index find no algorithm, so that the fallbacks run.
    pub(super) static FAIL_BELOW: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether try `i` is made to find no algorithm (tests of the fallbacks; never otherwise).
fn forced_failure(i: usize) -> bool {
    #[cfg(test)]
    {
        FAIL_BELOW.with(|f| i < f.get())
    }
    #[cfg(not(test))]
    {
        let _ = i;
        false
    }
}

/// `dst = act(alpha·a·b + beta·dst + bias)` (checked by the caller).
///
/// Fallbacks, in order, each only when the one before has no cuBLASLt algorithm: the views as
/// they are (operands copied only where no layout expresses them); the same without the fused
/// epilogue, whose bias add and activation then run as pointwise kernels; every operand copied
/// and the destination computed in a temporary, with the epilogue, then without.
pub(super) fn matmul<T: FloatElement>(
    gpu: &Gpu,
    job: &MatmulJob<'_, T, Gpu>,
    dst: &mut TensorViewMut<'_, T, Gpu>,
) -> Result<()> {
    let dst_layout = dst.layout().clone();
    if dst_layout.numel() == 0 {
        return Ok(());
    }
    let dtype = data_type::<T>()?;
    cublaslt::require()?;
    let stream = gpu.default_stream();
    let ctx = gpu.context();
    let r = dst_layout.rank();
    let (m, n) = (dst_layout.shape()[r - 2], dst_layout.shape()[r - 1]);
    let k = job.a.layout().shape()[r - 1];
    let batch = &dst_layout.shape()[..r - 2];
    let (mut a, mut b) = if k == 0 {
        (
            zeros(gpu, stream, batch, m, 1)?,
            zeros(gpu, stream, batch, 1, n)?,
        )
    } else {
        (
            Operand::borrowed(job.a.storage(), job.a.layout().clone()),
            Operand::borrowed(job.b.storage(), job.b.layout().clone()),
        )
    };
    for op in [&mut a, &mut b] {
        let (rr, cc, sr, sc) = matrix(&op.layout);
        if stored(rr, cc, sr, sc).is_none() {
            op.make_contiguous(gpu, stream)?;
        }
    }
    let (fused, exact_gelu) = epilogue(job.bias.is_some(), job.activation);
    // The bias the epilogue reads: contiguous and 16-byte aligned, else copied.
    let bias: Option<Operand<'_, T>> = match &job.bias {
        None => None,
        Some(v) => {
            let l = v.layout();
            let addr = address(v.storage().device_ptr(), l.offset(), 0, size_of::<T>())?;
            let mut op = Operand::borrowed(v.storage(), l.clone());
            if (n > 1 && l.strides()[0] != 1) || addr % 16 != 0 {
                let (s, nl) = contiguous_copy(gpu, stream, v.storage(), l)?;
                op = Operand {
                    buf: Buf::Owned(s),
                    layout: nl,
                };
            }
            Some(op)
        }
    };
    let (alpha, beta) = match dtype {
        cublaslt::DataType::F64 => (
            Scale::F64(job.alpha.to_f64()),
            Scale::F64(job.beta.to_f64()),
        ),
        _ => (
            // f16, bf16 and f32 convert to f32 exactly.
            Scale::F32(job.alpha.to_f64() as f32),
            Scale::F32(job.beta.to_f64() as f32),
        ),
    };
    let reads_dst = job.beta != T::ZERO;
    let tf32 = job.allow_tf32 && dtype == cublaslt::DataType::F32;

    // The destination cuBLASLt writes: `dst` itself, or a contiguous temporary.
    let mut temp: Option<(GpuStorage<T>, Layout)> = None;
    let (_, _, sdm, sdn) = matrix(&dst_layout);
    if stored(m, n, sdm, sdn).is_none_or(|s| s.trans) {
        temp = Some(temporary(gpu, dst, reads_dst)?);
    }
    // Tries, in order: (copied, fused) = (no, yes), (no, no), (yes, yes), (yes, no); a try
    // with the fused epilogue is skipped when there is none to fuse.
    let mut stage = 0;
    let mut fuse;
    loop {
        if stage >= 4 {
            return Err(GpuError::Cublas {
                call: "cublasLtMatmulAlgoGetHeuristic",
                message: format!(
                    "no algorithm for a {} matmul [{m}, {k}] x [{k}, {n}]",
                    T::NAME
                ),
            }
            .into());
        }
        fuse = stage % 2 == 0;
        if fuse && fused == Epilogue::Default {
            stage += 1;
            continue;
        }
        if stage >= 2 {
            // Idempotent: a copy already made stays, a temporary already there stays.
            a.make_contiguous(gpu, stream)?;
            b.make_contiguous(gpu, stream)?;
            if temp.is_none() {
                temp = Some(temporary(gpu, dst, reads_dst)?);
            }
        }
        let this_try = stage;
        stage += 1;
        let epi = if fuse { fused } else { Epilogue::Default };
        let (d_ptr, d_layout) = match &temp {
            Some((s, l)) => (s.device_ptr(), l.clone()),
            None => (dst.storage().device_ptr(), dst_layout.clone()),
        };
        let size = size_of::<T>();
        let ptrs = [
            address(a.buf.get().device_ptr(), a.layout.offset(), 0, size)?,
            address(b.buf.get().device_ptr(), b.layout.offset(), 0, size)?,
            address(d_ptr, d_layout.offset(), 0, size)?,
        ];
        let described = describe(dtype, tf32, &a.layout, &b.layout, &d_layout, ptrs, epi)?;
        let found = match &described {
            Some(_) if forced_failure(this_try) => None,
            Some((p, _)) => plan::algo(ctx, p)?,
            None => None,
        };
        if let (Some((p, bt)), Some(algo)) = (described, found) {
            let bias_buf = bias.as_ref().filter(|_| p.epilogue.has_bias());
            // Stream order, then the calls (nothing above queued work on these buffers).
            a.buf.get().access_read(OP, stream)?;
            b.buf.get().access_read(OP, stream)?;
            if let Some(bias) = bias_buf {
                bias.buf.get().access_read(OP, stream)?;
            }
            let out: &mut GpuStorage<T> = match &mut temp {
                Some((s, _)) => s,
                None => dst.slice_mut(),
            };
            out.access_write(OP, stream)?;
            let d_base = out.device_ptr_mut();
            let mut workspace = None;
            if algo.workspace > 0 {
                // SAFETY: only cuBLASLt's call below uses the workspace, as scratch it
                // writes before it reads; it is never read back.
                let mut ws = unsafe { GpuStorage::<u8>::uninit(gpu, algo.workspace, stream) }?;
                ws.access_write(OP, stream)?;
                workspace = Some(ws);
            }
            let ws_ptr = workspace.as_mut().map_or(0, |w| w.device_ptr_mut());
            let bias_ptr = match bias_buf {
                Some(bb) => address(bb.buf.get().device_ptr(), bb.layout.offset(), 0, size)?,
                None => 0,
            };
            for call in 0..bt.calls() {
                let off = bt.offsets(call);
                let ptrs = Pointers {
                    a: address(b.buf.get().device_ptr(), b.layout.offset(), off[1], size)?,
                    b: address(a.buf.get().device_ptr(), a.layout.offset(), off[0], size)?,
                    d: address(d_base, d_layout.offset(), off[2], size)?,
                    bias: bias_ptr,
                    workspace: ws_ptr,
                };
                // SAFETY: `p` was described from the layouts of `a`, `b` and the
                // destination (valid views within their storages, the destination's not
                // overlapping itself), and `bt` splits their batch dims, so the matrices each
                // call reaches lie inside those storages; `access_read` / `access_write`
                // above ordered the call after every earlier write (and, for the
                // destination, read) on any stream, and the borrows keep the storages alive
                // until the call returns, after which their frees are stream-ordered. The
                // destination is read only when `beta != 0`, when it holds valid values (the
                // caller's, or the temporary filled from them). The bias has `n` contiguous
                // elements (checked or copied above) and the workspace the bytes the
                // algorithm asked for. Alignments were computed from these very pointers
                // and strides. `alpha`/`beta` are of the scale type of `dtype`.
                unsafe {
                    cublaslt::call::matmul(ctx, stream.cuda(), &p, &algo, ptrs, alpha, beta)
                }?;
            }
            drop(workspace);
            break;
        }
    }
    // The product went to a temporary: copy it over the destination.
    if let Some((t, tl)) = &temp {
        pointwise::unary(stream, &Identity, t, tl, dst.slice_mut(), &dst_layout)?;
    }
    post(
        stream,
        job,
        dst,
        &dst_layout,
        bias.as_ref(),
        fuse,
        exact_gelu,
    )
}

/// A contiguous temporary for the destination, filled from it when `beta != 0`.
fn temporary<T: Element>(
    gpu: &Gpu,
    dst: &TensorViewMut<'_, T, Gpu>,
    reads_dst: bool,
) -> Result<(GpuStorage<T>, Layout)> {
    let stream = gpu.default_stream();
    if reads_dst {
        // Broadcast batch dims cannot occur in a destination (it does not overlap itself).
        return contiguous_copy(gpu, stream, dst.storage(), dst.layout());
    }
    let layout = Layout::contiguous(dst.layout().shape())?;
    // SAFETY: with `beta == 0` cuBLASLt writes every element of the temporary (its layout
    // covers the whole storage) without reading it, before the copy back reads it.
    let s = unsafe { GpuStorage::<T>::uninit(gpu, layout.numel(), stream) }?;
    Ok((s, layout))
}

/// The part of the epilogue cuBLASLt did not fuse, in place on `dst`: the bias add and the
/// activation when the fused epilogue was dropped, exact GELU always.
fn post<T: FloatElement>(
    stream: &crate::runtime::Stream,
    job: &MatmulJob<'_, T, Gpu>,
    dst: &mut TensorViewMut<'_, T, Gpu>,
    layout: &Layout,
    bias: Option<&Operand<'_, T>>,
    fused: bool,
    exact_gelu: bool,
) -> Result<()> {
    if !fused {
        if let Some(bias) = bias {
            let r = layout.rank();
            let mut strides = vec![0isize; r];
            strides[r - 1] = bias.layout.strides()[0];
            let across = Layout::new(layout.shape(), &strides, bias.layout.offset())?;
            pointwise::binary_inplace(
                stream,
                &Add,
                dst.slice_mut(),
                layout,
                (bias.buf.get(), &across),
            )?;
        }
        match job.activation {
            Some(Activation::Relu) => {
                pointwise::unary_inplace(stream, &Relu, dst.slice_mut(), layout)?
            }
            Some(Activation::GeluTanh) => {
                pointwise::unary_inplace(stream, &GeluTanh, dst.slice_mut(), layout)?
            }
            _ => {}
        }
    }
    if exact_gelu {
        pointwise::unary_inplace(stream, &Gelu, dst.slice_mut(), layout)?;
    }
    Ok(())
}
