//! The consumer's side: `from_dlpack(obj)` imports any `__dlpack__` producer (PyTorch, NumPy)
//! without a copy, as an `Imported` whose views our engines read and write.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use typestate_tensor::dlpack::DlpackTensor;
use typestate_tensor::gpu::Gpu;
use typestate_tensor::{Cpu, Element};

use crate::{capsule, dev, err, to_f64};

/// A tensor imported from another library without a copy (the producer's deleter runs when
/// this object is collected).
#[pyclass(module = "tt_dlpack")]
pub(crate) struct Imported {
    t: Imp,
}

enum Imp {
    CpuF32(DlpackTensor<f32, Cpu>),
    CpuI64(DlpackTensor<i64, Cpu>),
    GpuF32(DlpackTensor<f32, Gpu>),
    GpuI64(DlpackTensor<i64, Gpu>),
}

macro_rules! each_imp {
    ($x:expr, $t:ident => $cpu:expr, $gpu:expr) => {
        match $x {
            Imp::CpuF32($t) => $cpu,
            Imp::CpuI64($t) => $cpu,
            Imp::GpuF32($t) => $gpu,
            Imp::GpuI64($t) => $gpu,
        }
    };
}

#[pymethods]
impl Imported {
    /// The sum by typestate-tensor's engine (on the GPU: on this module's consumer stream).
    fn sum(&self) -> PyResult<f64> {
        let s = each_imp!(&self.t, t => t.view().sum().and_then(|s| s.item()).map(Element::to_f64), t.view().sum().and_then(|s| s.item()).map(Element::to_f64));
        s.map_err(err)
    }

    fn tolist(&self) -> PyResult<Vec<f64>> {
        each_imp!(&self.t, t => Ok(to_f64(t.view().to_vec())),
            Ok(to_f64(t.view().contiguous().and_then(|c| c.to_cpu()).map_err(err)?.into_vec())))
    }

    /// `self += v` through a writable view, by our engine; waits for it (so the producer sees
    /// it when this returns).
    fn add_(&mut self, v: f64) -> PyResult<()> {
        let r = match &mut self.t {
            Imp::CpuF32(t) => t.view_mut().and_then(|mut w| w.add_(v as f32)),
            Imp::CpuI64(t) => t.view_mut().and_then(|mut w| w.add_(v as i64)),
            Imp::GpuF32(t) => t
                .view_mut()
                .and_then(|mut w| w.add_(v as f32))
                .and_then(|()| Ok(t.view().device().default_stream().synchronize()?)),
            Imp::GpuI64(t) => t
                .view_mut()
                .and_then(|mut w| w.add_(v as i64))
                .and_then(|()| Ok(t.view().device().default_stream().synchronize()?)),
        };
        r.map_err(err)
    }

    fn data_ptr(&self) -> u64 {
        each_imp!(&self.t, t => t.data_ptr(), t.data_ptr())
    }

    #[getter]
    fn shape(&self) -> Vec<usize> {
        each_imp!(&self.t, t => t.layout().shape().to_vec(), t.layout().shape().to_vec())
    }

    #[getter]
    fn strides(&self) -> Vec<isize> {
        each_imp!(&self.t, t => t.layout().strides().to_vec(), t.layout().strides().to_vec())
    }

    #[getter]
    fn read_only(&self) -> bool {
        each_imp!(&self.t, t => t.is_read_only(), t.is_read_only())
    }
}

/// Imports any `__dlpack__` producer without a copy. On a GPU, this module's consumer stream
/// is passed as `stream`, so the producer orders its pending work before ours.
#[pyfunction]
pub(crate) fn from_dlpack(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Imported> {
    let (dev_type, dev_id): (i32, i32) = obj.call_method0("__dlpack_device__")?.extract()?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("max_version", (1, 1))?;
    let gpu = if dev_type == 2 {
        let d = dev(usize::try_from(dev_id).map_err(err)?)?;
        // A created stream: a non-zero handle.
        kwargs.set_item("stream", d.consumer_stream.id().0)?;
        Some(d)
    } else {
        None
    };
    let cap = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            kwargs.del_item("max_version")?;
            obj.call_method("__dlpack__", (), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    let taken = capsule::take(&cap)?;
    // The element type, read before choosing `T` (an import of the wrong `T` would be refused
    // and the tensor deleted). Versioned: only a major version 1 tensor is read.
    // SAFETY: a managed tensor the producer just handed over (the array API's contract).
    let dtype = unsafe {
        match taken {
            capsule::Taken::Versioned(m) if (*m).version.major == 1 => Some((*m).dl_tensor.dtype),
            capsule::Taken::Versioned(_) => None,
            capsule::Taken::Legacy(m) => Some((*m).dl_tensor.dtype),
        }
    };
    let is_i64 = dtype.is_some_and(|d| d.code == 0 && d.bits == 64 && d.lanes == 1);
    macro_rules! import {
        ($T:ty, $dev:expr) => {
            // SAFETY: the producer's `__dlpack__` handed the managed tensor over (the capsule
            // is renamed "used", so only this import calls the deleter); the array API
            // promises its memory as described, alive until the deleter runs, with pending
            // work ordered before our consumer stream (passed as `stream`).
            unsafe {
                match taken {
                    capsule::Taken::Versioned(m) => DlpackTensor::<$T, _>::from_versioned(m, $dev),
                    capsule::Taken::Legacy(m) => DlpackTensor::<$T, _>::from_legacy(m, $dev),
                }
            }
            .map_err(err)?
        };
    }
    let t = match (&gpu, is_i64) {
        (None, false) => Imp::CpuF32(import!(f32, &Cpu)),
        (None, true) => Imp::CpuI64(import!(i64, &Cpu)),
        (Some(d), false) => Imp::GpuF32(import!(f32, &d.consumer)),
        (Some(d), true) => Imp::GpuI64(import!(i64, &d.consumer)),
    };
    Ok(Imported { t })
}
