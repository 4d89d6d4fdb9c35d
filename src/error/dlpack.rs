//! [`DlpackError`]: a DLPack tensor that cannot be imported or exported as asked
//! (`crate::dlpack`). Each variant names the call and the offending values.

use crate::element::DType;

/// Why a DLPack import or export was refused. Raised by `crate::dlpack`; carried in
/// [`Error::Dlpack`](super::Error::Dlpack).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DlpackError {
    /// The tensor's element type is not the one asked for.
    #[error(
        "{op}: element type mismatch, asked for {expected} (DLPack code {}, {} bits), the tensor holds {}",
        dl_code(*expected), expected.size_in_bytes() * 8, dl_name(*got_code, *got_bits, *got_lanes)
    )]
    DTypeMismatch {
        /// The call.
        op: &'static str,
        /// The element type asked for.
        expected: DType,
        /// The tensor's `dtype.code`.
        got_code: u8,
        /// The tensor's `dtype.bits`.
        got_bits: u8,
        /// The tensor's `dtype.lanes`.
        got_lanes: u16,
    },
    /// The tensor lives on another device than the one given (or a device type this crate
    /// cannot read).
    #[error("{op}: the tensor lives on {got} (DLPack device type {got_type}, id {got_id}), expected {expected}")]
    DeviceMismatch {
        /// The call.
        op: &'static str,
        /// The device asked for (`"cpu"`, `"cuda:0"`).
        expected: String,
        /// The header's name of the tensor's device type (`"kDLCUDA"`).
        got: &'static str,
        /// The tensor's `device.device_type`.
        got_type: i32,
        /// The tensor's `device.device_id`.
        got_id: i32,
    },
    /// Write access was asked of a tensor that is read-only (`DLPACK_FLAG_BITMASK_READ_ONLY`,
    /// a shared export, or a layout whose elements alias), or a read-only tensor was to be
    /// exported in the legacy form, which cannot say so.
    #[error("{op}: the tensor is read-only ({why})")]
    ReadOnly {
        /// The call.
        op: &'static str,
        /// What makes it read-only.
        why: &'static str,
    },
    /// `ndim` is negative or above this crate's rank limit.
    #[error("{op}: ndim {ndim} is outside 0..={max}")]
    Rank {
        /// The call.
        op: &'static str,
        /// The tensor's `ndim`.
        ndim: i32,
        /// The most dims a layout may have.
        max: usize,
    },
    /// A size is negative, or shape and strides reach an element whose address does not fit
    /// (overflow), lies below `data` (a negative stride past the start the producer gave), or
    /// is not aligned for the element type.
    #[error("{op}: bad layout {reason} (shape {shape:?}, strides {strides:?}, byte_offset {byte_offset})")]
    BadLayout {
        /// The call.
        op: &'static str,
        /// What is wrong.
        reason: &'static str,
        /// The tensor's shape.
        shape: Vec<i64>,
        /// The tensor's strides (in elements).
        strides: Vec<i64>,
        /// The tensor's `byte_offset`.
        byte_offset: u64,
    },
    /// A pointer that must not be null is null (`data` of a non-empty tensor, `shape` with
    /// `ndim > 0`, the managed tensor itself).
    #[error("{op}: `{what}` is null")]
    NullPointer {
        /// The call.
        op: &'static str,
        /// Which field.
        what: &'static str,
    },
    /// A versioned tensor of a major version this crate cannot read (its deleter was called).
    #[error("{op}: DLPack version {major}.{minor} is not readable here (major version 1 is)")]
    Version {
        /// The call.
        op: &'static str,
        /// The tensor's major version.
        major: u32,
        /// The tensor's minor version.
        minor: u32,
    },
}

fn dl_code(d: DType) -> u8 {
    match d {
        DType::F32 | DType::F64 | DType::F16 => 2,
        DType::BF16 => 4,
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => 0,
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => 1,
        DType::Bool => 6,
    }
}

/// A readable name of a DLPack type: `float32`, `int8`, `complex64`, `code 9 (8 bits) x4`.
fn dl_name(code: u8, bits: u8, lanes: u16) -> String {
    let base = match code {
        0 => format!("int{bits}"),
        1 => format!("uint{bits}"),
        2 => format!("float{bits}"),
        3 => format!("opaque handle ({bits} bits)"),
        4 => format!("bfloat{bits}"),
        5 => format!("complex{bits}"),
        6 => format!("bool ({bits} bits)"),
        _ => format!("DLPack type code {code} ({bits} bits)"),
    };
    if lanes == 1 {
        base
    } else {
        format!("{base} x{lanes} lanes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dtype_mismatch_names_both_types() {
        let e = DlpackError::DTypeMismatch {
            op: "import",
            expected: DType::F32,
            got_code: 5,
            got_bits: 64,
            got_lanes: 1,
        };
        let msg = e.to_string();
        assert!(msg.contains("f32") && msg.contains("complex64"), "{msg}");
    }
}
