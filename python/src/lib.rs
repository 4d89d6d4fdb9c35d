//! `tt_dlpack`: a Python extension module over typestate-tensor's DLPack export and import,
//! for the check against PyTorch (`scripts/dlpack_check.py`). Built with pyo3 on the stable
//! ABI (abi3, CPython >= 3.9).
//!
//! - `Tensor(values, shape, dtype="float32"|"int64", device="cpu"|"cuda:N")`: a tensor made
//!   here, on the GPU on a non-blocking stream of this module (the producer stream), with
//!   views (`t()`, `slice`), `tolist()`, `sum()` (our engines), `data_ptr()`,
//!   `fill_after_sleep(value, ms)` (a write queued behind a sleep kernel), and the DLPack
//!   protocol: `__dlpack__(stream=None, max_version=None, dl_device=None, copy=None)` exports
//!   it shared and read-only (DLPack 1.x; a legacy request is a `BufferError`, as NumPy's);
//!   `take()` moves it out as a one-shot writable `Exported`.
//! - `from_dlpack(obj)`: imports any `__dlpack__` producer (PyTorch, NumPy) without a copy,
//!   passing the producer this module's consumer stream; returns an `Imported` with `sum()`,
//!   `tolist()`, `data_ptr()`, `add_(v)`.

mod capsule;
mod import;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use typestate_tensor::dlpack::{DlpackDevice, DlpackExport};
use typestate_tensor::gpu::{Gpu, Stream};
use typestate_tensor::layout::Layout;
use typestate_tensor::{Cpu, Element, Tensor as TtTensor};

fn err(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A GPU with this module's two non-blocking streams: tensors made here live on `producer`'s,
/// imports are ordered on `consumer`'s.
struct Dev {
    producer: Gpu,
    consumer: Gpu,
    consumer_stream: Stream,
}

static DEVS: Mutex<Vec<(usize, Arc<Dev>)>> = Mutex::new(Vec::new());

fn dev(ordinal: usize) -> PyResult<Arc<Dev>> {
    let mut devs = DEVS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, d)) = devs.iter().find(|(o, _)| *o == ordinal) {
        return Ok(Arc::clone(d));
    }
    let gpu = Gpu::new(ordinal).map_err(err)?;
    let (ps, cs) = (
        gpu.new_stream().map_err(err)?,
        gpu.new_stream().map_err(err)?,
    );
    let d = Arc::new(Dev {
        producer: gpu.on(&ps).map_err(err)?,
        consumer: gpu.on(&cs).map_err(err)?,
        consumer_stream: cs,
    });
    devs.push((ordinal, Arc::clone(&d)));
    Ok(d)
}

/// A shared tensor of one of the element types and devices this module handles.
#[derive(Clone)]
enum Any {
    CpuF32(Arc<TtTensor<f32, Cpu>>),
    CpuI64(Arc<TtTensor<i64, Cpu>>),
    GpuF32(Arc<TtTensor<f32, Gpu>>),
    GpuI64(Arc<TtTensor<i64, Gpu>>),
}

/// `$body` for each kind, with `$t` the tensor; `$cpu`/`$gpu` differ where the devices do.
macro_rules! each {
    ($x:expr, $t:ident => $body:expr) => {
        each!($x, $t => $body, $body)
    };
    ($x:expr, $t:ident => $cpu:expr, $gpu:expr) => {
        match $x {
            Any::CpuF32($t) => $cpu,
            Any::CpuI64($t) => $cpu,
            Any::GpuF32($t) => $gpu,
            Any::GpuI64($t) => $gpu,
        }
    };
}

fn to_f64<T: Element>(v: Vec<T>) -> Vec<f64> {
    v.into_iter().map(Element::to_f64).collect()
}

fn shared() -> PyErr {
    PyBufferError::new_err("the tensor is shared (views or exports): take() needs the only handle")
}

/// The owned tensor out of `a` as a writable export of `l`, or `a` back (rewrapped by `back`).
#[allow(clippy::type_complexity)]
fn own<T: Element, D: DlpackDevice>(
    a: Arc<TtTensor<T, D>>,
    l: Layout,
    back: fn(Arc<TtTensor<T, D>>) -> Any,
) -> Result<DlpackExport, (Any, PyErr)> {
    match Arc::try_unwrap(a) {
        Ok(t) => {
            DlpackExport::with_layout(t, l).map_err(|h| (back(Arc::new(h.value)), err(h.error)))
        }
        Err(a) => Err((back(a), shared())),
    }
}

/// A tensor made by typestate-tensor, viewed through `layout` (views share the memory).
#[pyclass(module = "tt_dlpack")]
struct Tensor {
    t: Option<Any>,
    layout: Layout,
}

impl Tensor {
    fn any(&self) -> PyResult<&Any> {
        self.t
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("this Tensor was moved out by take()"))
    }

    fn with_layout(&self, layout: Layout) -> PyResult<Tensor> {
        Ok(Tensor {
            t: Some(self.any()?.clone()),
            layout,
        })
    }

    fn device_tuple(&self) -> PyResult<(i32, i32)> {
        Ok(match self.any()? {
            Any::CpuF32(_) | Any::CpuI64(_) => (1, 0),
            Any::GpuF32(t) => (2, t.device().ordinal() as i32),
            Any::GpuI64(t) => (2, t.device().ordinal() as i32),
        })
    }
}

#[pymethods]
impl Tensor {
    #[new]
    #[pyo3(signature = (values, shape, dtype = "float32", device = "cpu"))]
    fn new(values: Vec<f64>, shape: Vec<usize>, dtype: &str, device: &str) -> PyResult<Self> {
        let layout = Layout::contiguous(&shape).map_err(err)?;
        let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        let i = |v: &[f64]| v.iter().map(|&x| x as i64).collect::<Vec<i64>>();
        let cpu_f = || TtTensor::from_vec(&shape, f(&values)).map_err(err);
        let cpu_i = || TtTensor::from_vec(&shape, i(&values)).map_err(err);
        let t = match (dtype, device) {
            ("float32", "cpu") => Any::CpuF32(Arc::new(cpu_f()?)),
            ("int64", "cpu") => Any::CpuI64(Arc::new(cpu_i()?)),
            (_, d) if d.starts_with("cuda:") => {
                let ordinal = d[5..].parse::<usize>().map_err(err)?;
                let p = &dev(ordinal)?.producer;
                match dtype {
                    "float32" => Any::GpuF32(Arc::new(cpu_f()?.to_gpu(p).map_err(err)?)),
                    "int64" => Any::GpuI64(Arc::new(cpu_i()?.to_gpu(p).map_err(err)?)),
                    _ => {
                        return Err(PyTypeError::new_err(format!(
                            "dtype {dtype}: float32 or int64"
                        )))
                    }
                }
            }
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "dtype {dtype} on {device}: float32 or int64 on cpu or cuda:N"
                )))
            }
        };
        Ok(Tensor { t: Some(t), layout })
    }

    /// The view with its dims reversed (a transpose for 2-d), sharing the memory.
    fn t(&self) -> PyResult<Tensor> {
        self.with_layout(self.layout.t())
    }

    /// The view `[start:end:step]` along `dim`, sharing the memory.
    fn slice(&self, dim: isize, start: usize, end: usize, step: isize) -> PyResult<Tensor> {
        self.with_layout(self.layout.slice(dim, start, end, step).map_err(err)?)
    }

    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.layout.shape().to_vec()
    }

    #[getter]
    fn strides(&self) -> Vec<isize> {
        self.layout.strides().to_vec()
    }

    /// The elements in row-major order.
    fn tolist(&self) -> PyResult<Vec<f64>> {
        let l = self.layout.clone();
        each!(self.any()?, t => {
            let v = typestate_tensor::TensorView::new(t.storage().as_slice(), l, &Cpu).map_err(err)?;
            Ok(to_f64(v.to_vec()))
        }, {
            let v = typestate_tensor::TensorView::new(t.storage(), l, t.device()).map_err(err)?;
            Ok(to_f64(v.contiguous().and_then(|c| c.to_cpu()).map_err(err)?.into_vec()))
        })
    }

    /// The address of the element at all-zero indices.
    fn data_ptr(&self) -> PyResult<u64> {
        let l = self.layout.clone();
        let e = each!(self.any()?, t => DlpackExport::shared(t, l).map_err(err)?);
        Ok(e.dl_tensor().data as u64 + e.dl_tensor().byte_offset)
    }

    /// Fills the whole tensor with `value`, queued on its stream behind a `ms`-millisecond
    /// sleep kernel (GPU): the write is still pending when this returns. Refused while an
    /// export of the tensor is alive (it is shared with a consumer).
    fn fill_after_sleep(&mut self, value: f64, ms: u64) -> PyResult<()> {
        let busy = || {
            PyBufferError::new_err(
                "the tensor is shared (exported or viewed): no writes while a consumer may read it",
            )
        };
        let sleep = |g: &Gpu| {
            g.default_stream()
                .sleep(Duration::from_millis(ms))
                .map_err(err)
        };
        match self.t.as_mut().ok_or_else(busy)? {
            Any::GpuF32(t) => {
                let t = Arc::get_mut(t).ok_or_else(busy)?;
                sleep(t.device())?;
                t.fill_(value as f32).map_err(err)
            }
            Any::GpuI64(t) => {
                let t = Arc::get_mut(t).ok_or_else(busy)?;
                sleep(t.device())?;
                t.fill_(value as i64).map_err(err)
            }
            Any::CpuF32(t) => Arc::get_mut(t)
                .ok_or_else(busy)?
                .fill_(value as f32)
                .map_err(err),
            Any::CpuI64(t) => Arc::get_mut(t)
                .ok_or_else(busy)?
                .fill_(value as i64)
                .map_err(err),
        }
    }

    /// Moves the tensor out as a one-shot writable export of this view (`Exported`); this
    /// object is empty afterwards. Refused while other views or exports share it.
    fn take(&mut self) -> PyResult<Exported> {
        let device = self.device_tuple()?;
        let l = self.layout.clone();
        let t = self.t.take().ok_or_else(shared)?;
        let export = match t {
            Any::CpuF32(a) => own(a, l, Any::CpuF32),
            Any::CpuI64(a) => own(a, l, Any::CpuI64),
            Any::GpuF32(a) => own(a, l, Any::GpuF32),
            Any::GpuI64(a) => own(a, l, Any::GpuI64),
        };
        match export {
            Ok(e) => Ok(Exported {
                export: Some(e),
                device,
            }),
            Err((back, e)) => {
                self.t = Some(back);
                Err(e)
            }
        }
    }

    /// The sum of the view's elements, by typestate-tensor's engine.
    fn sum(&self) -> PyResult<f64> {
        let l = self.layout.clone();
        each!(self.any()?, t => {
            let v = typestate_tensor::TensorView::new(t.storage().as_slice(), l, &Cpu).map_err(err)?;
            Ok(v.sum().and_then(|s| s.item()).map_err(err)?.to_f64())
        }, {
            let v = typestate_tensor::TensorView::new(t.storage(), l, t.device()).map_err(err)?;
            Ok(v.sum().and_then(|s| s.item()).map_err(err)?.to_f64())
        })
    }

    fn __dlpack_device__(&self) -> PyResult<(i32, i32)> {
        self.device_tuple()
    }

    /// The Python array API's `__dlpack__`: a read-only versioned capsule sharing the memory.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<isize>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<PyObject> {
        let l = self.layout.clone();
        let export = each!(self.any()?, t => DlpackExport::shared(t, l).map_err(err)?);
        hand_out(
            py,
            export,
            self.device_tuple()?,
            stream,
            max_version,
            dl_device,
            copy,
        )
    }
}

/// A one-shot writable export (`Tensor.take()`): `__dlpack__` hands the tensor over once.
#[pyclass(module = "tt_dlpack")]
struct Exported {
    export: Option<DlpackExport>,
    device: (i32, i32),
}

#[pymethods]
impl Exported {
    fn __dlpack_device__(&self) -> (i32, i32) {
        self.device
    }

    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        &mut self,
        py: Python<'_>,
        stream: Option<isize>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<PyObject> {
        let export = self
            .export
            .take()
            .ok_or_else(|| PyBufferError::new_err("already handed out"))?;
        hand_out(
            py,
            export,
            self.device,
            stream,
            max_version,
            dl_device,
            copy,
        )
    }
}

/// The producer's side of `__dlpack__`: the stream handshake, then a capsule of the form the
/// consumer can read.
fn hand_out(
    py: Python<'_>,
    mut export: DlpackExport,
    device: (i32, i32),
    stream: Option<isize>,
    max_version: Option<(u32, u32)>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
) -> PyResult<PyObject> {
    if copy == Some(true) {
        return Err(PyBufferError::new_err(
            "copy=True: this module exports without copies only",
        ));
    }
    if dl_device.is_some_and(|d| d != device) {
        return Err(PyBufferError::new_err(format!(
            "dl_device {dl_device:?}: the tensor is on {device:?}"
        )));
    }
    if device.0 == 2 {
        // The array API: None means the legacy default stream (1), -1 no synchronisation, 0
        // is ambiguous and refused.
        match stream.unwrap_or(1) {
            -1 => {}
            0 => {
                return Err(PyValueError::new_err(
                    "stream=0 is ambiguous for CUDA: pass 1 for the legacy default stream",
                ))
            }
            s if s < 0 => return Err(PyValueError::new_err(format!("stream={s}"))),
            // SAFETY: the array API's contract: the consumer passes a live stream of this
            // device (PyTorch's current stream; its streams are never destroyed) and does not
            // destroy it before calling the deleter.
            s => unsafe { export.sync_to_raw(s as usize) }.map_err(err)?,
        }
    }
    if max_version.is_some_and(|v| v.0 >= 1) {
        capsule::versioned(py, export.into_raw_versioned())
    } else {
        let m = export
            .into_raw_legacy()
            .map_err(|h| PyBufferError::new_err(h.error.to_string()))?;
        capsule::legacy(py, m)
    }
}

/// Whether a CUDA GPU can be used.
#[pyfunction]
fn gpu_available() -> bool {
    Gpu::available()
}

#[pymodule]
fn tt_dlpack(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Tensor>()?;
    m.add_class::<Exported>()?;
    m.add_class::<import::Imported>()?;
    m.add_function(wrap_pyfunction!(import::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_available, m)?)?;
    Ok(())
}
