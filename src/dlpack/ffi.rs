//! The DLPack ABI (`dlpack.h`, version 1.1), written from the header's definitions:
//! `#[repr(C)]` structs with the same fields in the same order, checked for size and field
//! offsets below.
//!
//! The C enums (`DLDeviceType`, `DLDataTypeCode`) are integers with named constants here, not
//! Rust enums: a value this crate does not know (a newer device type) must be a value we
//! can read and refuse, not undefined behaviour.

use std::ffi::c_void;

use crate::element::DType;

/// The DLPack version this module implements (`DLPACK_MAJOR_VERSION.DLPACK_MINOR_VERSION`).
pub const DLPACK_VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 1 };

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the tensor.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer made a copy the consumer owns alone.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements are padded, not packed.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// `DLPackVersion`: the ABI version of a [`DLManagedTensorVersioned`]. A major version other
/// than 1 means a different layout: only the deleter may be called.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLPackVersion {
    /// `major`.
    pub major: u32,
    /// `minor`.
    pub minor: u32,
}

/// `DLDeviceType` (a C enum of `int32_t`): the kind of device memory lives on.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDeviceType(pub i32);

impl DLDeviceType {
    /// `kDLCPU`: host memory.
    pub const CPU: DLDeviceType = DLDeviceType(1);
    /// `kDLCUDA`: CUDA device memory.
    pub const CUDA: DLDeviceType = DLDeviceType(2);
    /// `kDLCUDAHost`: page-locked host memory (`cudaMallocHost`).
    pub const CUDA_HOST: DLDeviceType = DLDeviceType(3);
    /// `kDLROCM`: ROCm device memory.
    pub const ROCM: DLDeviceType = DLDeviceType(10);
    /// `kDLCUDAManaged`: CUDA managed (unified) memory.
    pub const CUDA_MANAGED: DLDeviceType = DLDeviceType(13);

    /// The header's name of the value (`"kDLCUDA"`), or `"unknown"`.
    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "kDLCPU",
            2 => "kDLCUDA",
            3 => "kDLCUDAHost",
            4 => "kDLOpenCL",
            7 => "kDLVulkan",
            8 => "kDLMetal",
            9 => "kDLVPI",
            10 => "kDLROCM",
            11 => "kDLROCMHost",
            12 => "kDLExtDev",
            13 => "kDLCUDAManaged",
            14 => "kDLOneAPI",
            15 => "kDLWebGPU",
            16 => "kDLHexagon",
            17 => "kDLMAIA",
            18 => "kDLTrn",
            _ => "unknown",
        }
    }
}

/// `DLDevice`: a device type and its index (0 for host memory).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDevice {
    /// `device_type`.
    pub device_type: DLDeviceType,
    /// `device_id`: the CUDA ordinal for `kDLCUDA`.
    pub device_id: i32,
}

/// `DLDataType`: a type code (`kDLInt`, `kDLFloat`, ...), its bits and its vector lanes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDataType {
    /// `code`: one of the `DLDataType::INT`, ... constants.
    pub code: u8,
    /// `bits` per lane.
    pub bits: u8,
    /// `lanes`: 1 for scalars (the only value this crate has elements for).
    pub lanes: u16,
}

impl DLDataType {
    /// `kDLInt`: signed integers.
    pub const INT: u8 = 0;
    /// `kDLUInt`: unsigned integers.
    pub const UINT: u8 = 1;
    /// `kDLFloat`: IEEE floats.
    pub const FLOAT: u8 = 2;
    /// `kDLBfloat`: bfloat16.
    pub const BFLOAT: u8 = 4;
    /// `kDLComplex`: complex numbers (no element type here).
    pub const COMPLEX: u8 = 5;
    /// `kDLBool`: booleans, one byte each.
    pub const BOOL: u8 = 6;

    /// The DLPack type of this crate's element type `dtype`.
    pub const fn of(dtype: DType) -> DLDataType {
        let (code, bits) = match dtype {
            DType::F32 => (Self::FLOAT, 32),
            DType::F64 => (Self::FLOAT, 64),
            DType::F16 => (Self::FLOAT, 16),
            DType::BF16 => (Self::BFLOAT, 16),
            DType::I8 => (Self::INT, 8),
            DType::I16 => (Self::INT, 16),
            DType::I32 => (Self::INT, 32),
            DType::I64 => (Self::INT, 64),
            DType::U8 => (Self::UINT, 8),
            DType::U16 => (Self::UINT, 16),
            DType::U32 => (Self::UINT, 32),
            DType::U64 => (Self::UINT, 64),
            DType::Bool => (Self::BOOL, 8),
        };
        DLDataType {
            code,
            bits,
            lanes: 1,
        }
    }

    /// This crate's element type for the DLPack type, `None` for types it has none of
    /// (complex, the 8-, 6- and 4-bit floats, vector lanes, opaque handles).
    pub fn to_dtype(self) -> Option<DType> {
        DType::ALL.into_iter().find(|&d| DLDataType::of(d) == self)
    }
}

/// `DLTensor`: a strided array that does not manage its memory.
///
/// Element `idx` lies at byte address `data + byte_offset + Σ idx[i] * strides[i] *
/// size_of(element)`; strides are in elements. `shape` and `strides` point to `ndim`
/// values each (`strides` may be null for a row-major array, as before DLPack 1.0).
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    /// `data`: the start of the memory (a device address for `kDLCUDA`).
    pub data: *mut c_void,
    /// `device`.
    pub device: DLDevice,
    /// `ndim`.
    pub ndim: i32,
    /// `dtype`.
    pub dtype: DLDataType,
    /// `shape`: `ndim` sizes.
    pub shape: *mut i64,
    /// `strides`: `ndim` strides in elements, or null for row-major.
    pub strides: *mut i64,
    /// `byte_offset`: from `data` to the element at all-zero indices.
    pub byte_offset: u64,
}

/// `DLManagedTensor`: the legacy (pre-1.0) managed tensor, a `DLTensor` with the producer's
/// context and a deleter the consumer calls once when it no longer needs the memory. It
/// cannot say "read-only".
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// `dl_tensor`.
    pub dl_tensor: DLTensor,
    /// `manager_ctx`: the producer's, opaque to the consumer.
    pub manager_ctx: *mut c_void,
    /// `deleter`: frees the producer's context and this struct; may be null.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned`: the DLPack 1.x managed tensor: a version, the producer's
/// context, a deleter, flags (`DLPACK_FLAG_BITMASK_*`) and the tensor.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// `version`: check `major` before reading anything but the deleter.
    pub version: DLPackVersion,
    /// `manager_ctx`: the producer's, opaque to the consumer.
    pub manager_ctx: *mut c_void,
    /// `deleter`: frees the producer's context and this struct; may be null.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `flags`: `DLPACK_FLAG_BITMASK_*`.
    pub flags: u64,
    /// `dl_tensor`.
    pub dl_tensor: DLTensor,
}

// The ABI on 64-bit targets (CUDA's): the header's sizes and offsets.
#[cfg(target_pointer_width = "64")]
mod abi {
    use super::*;
    use std::mem::offset_of;

    static_assertions::const_assert_eq!(size_of::<DLDevice>(), 8);
    static_assertions::const_assert_eq!(size_of::<DLDataType>(), 4);
    static_assertions::const_assert_eq!(size_of::<DLTensor>(), 48);
    static_assertions::const_assert_eq!(offset_of!(DLTensor, ndim), 16);
    static_assertions::const_assert_eq!(offset_of!(DLTensor, dtype), 20);
    static_assertions::const_assert_eq!(offset_of!(DLTensor, byte_offset), 40);
    static_assertions::const_assert_eq!(size_of::<DLManagedTensor>(), 64);
    static_assertions::const_assert_eq!(offset_of!(DLManagedTensor, deleter), 56);
    static_assertions::const_assert_eq!(size_of::<DLManagedTensorVersioned>(), 80);
    static_assertions::const_assert_eq!(offset_of!(DLManagedTensorVersioned, flags), 24);
    static_assertions::const_assert_eq!(offset_of!(DLManagedTensorVersioned, dl_tensor), 32);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips_and_foreign_types_are_none() {
        for code in 0..=20u8 {
            for bits in [1u8, 4, 6, 8, 16, 32, 64, 128] {
                for lanes in [1u16, 2, 4] {
                    let t = DLDataType { code, bits, lanes };
                    if let Some(d) = t.to_dtype() {
                        assert_eq!(DLDataType::of(d), t);
                        assert_eq!(usize::from(bits) / 8, d.size_in_bytes());
                    }
                }
            }
        }
        assert_eq!(DLDataType::of(DType::Bool).to_dtype(), Some(DType::Bool));
        let complex64 = DLDataType {
            code: DLDataType::COMPLEX,
            bits: 64,
            lanes: 1,
        };
        assert_eq!(complex64.to_dtype(), None);
    }
}
