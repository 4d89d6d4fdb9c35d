//! A compiled kernel module: CUBIN bytes or PTX text, plus the target it was built for.

use cudarc::nvrtc::Ptx;

use super::arch::Target;
use crate::error::GpuError;

/// A compiled module, ready to load into any context of a device its target runs on.
///
/// Invariant: for [`Target::Ptx`], `bytes` is the PTX text without its terminating NUL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelImage {
    target: Target,
    bytes: Vec<u8>,
}

impl KernelImage {
    /// An image of `target` holding `bytes`.
    pub fn new(target: Target, bytes: Vec<u8>) -> Self {
        Self { target, bytes }
    }

    /// What it was compiled for.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Whether it is a CUBIN (loads with no driver JIT).
    #[cfg(test)]
    pub fn is_cubin(&self) -> bool {
        matches!(self.target, Target::Cubin(_))
    }

    /// The CUBIN bytes or PTX text.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The form cudarc's `CudaContext::load_module` takes.
    ///
    /// # Errors
    /// [`GpuError::Driver`] if a PTX image is not text (a damaged image).
    pub fn to_cudarc(&self) -> Result<Ptx, GpuError> {
        match self.target {
            Target::Cubin(_) => Ok(Ptx::from_binary(self.bytes.clone())),
            Target::Ptx(_) => String::from_utf8(self.bytes.clone())
                .ok()
                .filter(|text| !text.contains('\0'))
                .map(Ptx::from_src)
                .ok_or_else(|| GpuError::Driver {
                    call: "cuModuleLoadData",
                    message: "PTX image is not NUL-free UTF-8 text".to_owned(),
                }),
        }
    }
}
