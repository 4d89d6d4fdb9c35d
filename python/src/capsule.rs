//! PyCapsules of DLPack managed tensors, as the Python array API names them: `"dltensor"`
//! (legacy) and `"dltensor_versioned"` (DLPack 1.x); a consumer renames the capsule to
//! `"used_dltensor"` / `"used_dltensor_versioned"` when it takes the tensor over, and the
//! capsule's destructor calls the deleter only of a capsule nobody took.

use std::ffi::{c_void, CStr};
use std::ptr::NonNull;

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use typestate_tensor::dlpack::ffi::{DLManagedTensor, DLManagedTensorVersioned};

const LEGACY: &CStr = c"dltensor";
const LEGACY_USED: &CStr = c"used_dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";
const VERSIONED_USED: &CStr = c"used_dltensor_versioned";

/// A managed tensor taken out of a capsule (the capsule renamed "used").
pub enum Taken {
    Legacy(*mut DLManagedTensor),
    Versioned(*mut DLManagedTensorVersioned),
}

unsafe extern "C" fn destroy_versioned(cap: *mut ffi::PyObject) {
    // SAFETY: called by Python with the capsule; `IsValid` checks the name, and a capsule of
    // that name was made by `versioned` over a managed tensor nobody took.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr())
                .cast::<DLManagedTensorVersioned>();
            if let Some(del) = (*p).deleter {
                del(p);
            }
        }
    }
}

unsafe extern "C" fn destroy_legacy(cap: *mut ffi::PyObject) {
    // SAFETY: as in `destroy_versioned`.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr()).cast::<DLManagedTensor>();
            if let Some(del) = (*p).deleter {
                del(p);
            }
        }
    }
}

/// A `"dltensor_versioned"` capsule owning `m` (its deleter runs unless a consumer takes it).
pub fn versioned(py: Python<'_>, m: NonNull<DLManagedTensorVersioned>) -> PyResult<PyObject> {
    // SAFETY: a valid managed tensor this capsule now owns; the name is static.
    let cap = unsafe {
        ffi::PyCapsule_New(
            m.as_ptr().cast::<c_void>(),
            VERSIONED.as_ptr(),
            Some(destroy_versioned),
        )
    };
    if cap.is_null() {
        // SAFETY: the capsule was not made: nobody else will call the deleter.
        unsafe {
            if let Some(del) = (*m.as_ptr()).deleter {
                del(m.as_ptr());
            }
        }
    }
    // SAFETY: a new reference, or null with the Python error set.
    Ok(unsafe { Bound::from_owned_ptr_or_err(py, cap) }?.unbind())
}

/// A `"dltensor"` capsule owning `m`.
pub fn legacy(py: Python<'_>, m: NonNull<DLManagedTensor>) -> PyResult<PyObject> {
    // SAFETY: as in `versioned`.
    let cap = unsafe {
        ffi::PyCapsule_New(
            m.as_ptr().cast::<c_void>(),
            LEGACY.as_ptr(),
            Some(destroy_legacy),
        )
    };
    if cap.is_null() {
        // SAFETY: as in `versioned`.
        unsafe {
            if let Some(del) = (*m.as_ptr()).deleter {
                del(m.as_ptr());
            }
        }
    }
    // SAFETY: as in `versioned`.
    Ok(unsafe { Bound::from_owned_ptr_or_err(py, cap) }?.unbind())
}

/// Takes the managed tensor out of a DLPack capsule (renaming it "used", so its destructor
/// leaves the tensor to us). A capsule already used, or of another kind, is a `TypeError`.
pub fn take(cap: &Bound<'_, PyAny>) -> PyResult<Taken> {
    let p = cap.as_ptr();
    // SAFETY: `p` is a live object (borrowed); the capsule functions check its type and name
    // and return 0 / null with an error set otherwise.
    unsafe {
        if ffi::PyCapsule_IsValid(p, VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(p, VERSIONED.as_ptr()).cast();
            if ffi::PyCapsule_SetName(p, VERSIONED_USED.as_ptr()) != 0 {
                return Err(PyErr::fetch(cap.py()));
            }
            return Ok(Taken::Versioned(m));
        }
        if ffi::PyCapsule_IsValid(p, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(p, LEGACY.as_ptr()).cast();
            if ffi::PyCapsule_SetName(p, LEGACY_USED.as_ptr()) != 0 {
                return Err(PyErr::fetch(cap.py()));
            }
            return Ok(Taken::Legacy(m));
        }
    }
    Err(PyTypeError::new_err(
        "not an unused DLPack capsule (\"dltensor\" or \"dltensor_versioned\")",
    ))
}
