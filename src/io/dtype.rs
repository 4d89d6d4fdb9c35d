//! Element types as the formats spell them, and [`AnyTensor`]: a tensor of any element type,
//! for files that mix types (`npz::read_all`, `SafetensorsFile::tensor_any`).

use std::any::Any;

use crate::element::{DType, Element};
use crate::error::Handback;
use crate::tensor::Tensor;
use safetensors::Dtype;

/// Our type for a safetensors dtype; `None` for the types this crate has none of (the 4-, 6-
/// and 8-bit floats, complex).
pub(crate) fn from_safetensors(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::U8,
        Dtype::I8 => DType::I8,
        Dtype::I16 => DType::I16,
        Dtype::U16 => DType::U16,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::I32 => DType::I32,
        Dtype::U32 => DType::U32,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::I64 => DType::I64,
        Dtype::U64 => DType::U64,
        _ => return None,
    })
}

/// The safetensors dtype of one of our types (every one has one).
pub(crate) fn to_safetensors(d: DType) -> Dtype {
    match d {
        DType::Bool => Dtype::BOOL,
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::I16 => Dtype::I16,
        DType::U16 => Dtype::U16,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::I32 => Dtype::I32,
        DType::U32 => Dtype::U32,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::I64 => Dtype::I64,
        DType::U64 => Dtype::U64,
    }
}

/// numpy's type code without the byte order (`"f4"`), `None` for `bf16` (numpy has no
/// bfloat16).
pub(crate) fn npy_code(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::Bool => "b1",
        DType::U8 => "u1",
        DType::I8 => "i1",
        DType::I16 => "i2",
        DType::U16 => "u2",
        DType::F16 => "f2",
        DType::I32 => "i4",
        DType::U32 => "u4",
        DType::F32 => "f4",
        DType::F64 => "f8",
        DType::I64 => "i8",
        DType::U64 => "u8",
        DType::BF16 => return None,
    })
}

/// Our type and the byte order (`true`: big-endian) of a numpy `descr` (`"<f4"`, `">i8"`,
/// `"|b1"`, `"=u2"`); `None` for anything else.
pub(crate) fn from_npy_descr(descr: &str) -> Option<(DType, bool)> {
    let (order, code) = descr.split_at_checked(1)?;
    let big = match order {
        "<" => false,
        ">" => true,
        "|" | "=" => cfg!(target_endian = "big"),
        _ => return None,
    };
    let dtype = DType::ALL
        .iter()
        .copied()
        .find(|&d| npy_code(d) == Some(code))?;
    Some((dtype, big))
}

macro_rules! any_tensor {
    ($($variant:ident($t:ty)),* $(,)?) => {
        /// A CPU tensor of any element type: what a file holds when the caller does not name
        /// the type (`npz::read_all`, [`SafetensorsFile::tensor_any`](super::SafetensorsFile::tensor_any)).
        /// Match on it, or ask for one type with [`into_typed`](AnyTensor::into_typed).
        #[derive(Debug)]
        #[non_exhaustive]
        pub enum AnyTensor {
            $(
                #[doc = concat!("A `", stringify!($t), "` tensor.")]
                $variant(Tensor<$t>),
            )*
        }

        impl AnyTensor {
            /// The element type.
            pub fn dtype(&self) -> DType {
                match self {
                    $(AnyTensor::$variant(_) => <$t as Element>::DTYPE,)*
                }
            }

            /// The shape.
            pub fn shape(&self) -> &[usize] {
                match self {
                    $(AnyTensor::$variant(t) => t.shape(),)*
                }
            }

            /// The tensor as `Tensor<T>` when it holds `T`s; otherwise it comes back, with
            /// [`Error::DTypeMismatch`](crate::error::Error::DTypeMismatch).
            #[allow(clippy::result_large_err)] // the error hands the tensor back
            pub fn into_typed<T: Element>(self) -> Result<Tensor<T>, Handback<AnyTensor>> {
                let got = self.dtype();
                let error = crate::error::Error::DTypeMismatch {
                    op: "AnyTensor::into_typed",
                    expected: T::DTYPE,
                    got,
                };
                match self {
                    $(AnyTensor::$variant(t) => {
                        retype::<$t, T>(t).map_err(|t| Handback::new(AnyTensor::$variant(t), error))
                    })*
                }
            }
        }

        $(
            impl From<Tensor<$t>> for AnyTensor {
                fn from(t: Tensor<$t>) -> AnyTensor {
                    AnyTensor::$variant(t)
                }
            }
        )*

        /// Calls `$body` with `$T` bound to the Rust type of `$dtype` (a [`DType`]).
        macro_rules! with_dtype {
            ($dtype:expr, $T:ident => $body:expr) => {
                match $dtype {
                    $(<$t as $crate::element::Element>::DTYPE => { type $T = $t; $body })*
                }
            };
        }
        pub(crate) use with_dtype;
    };
}

/// `t` as a `Tensor<T>` when `U` is `T`, else `t` back.
#[allow(clippy::result_large_err)] // the tensor comes back whole
fn retype<U: Element, T: Element>(t: Tensor<U>) -> Result<Tensor<T>, Tensor<U>> {
    let boxed: Box<dyn Any> = Box::new(t);
    match boxed.downcast::<Tensor<T>>() {
        Ok(t) => Ok(*t),
        Err(boxed) => match boxed.downcast::<Tensor<U>>() {
            Ok(u) => Err(*u),
            Err(_) => unreachable!("a box made of a Tensor<U> downcasts to Tensor<U>"),
        },
    }
}

any_tensor!(
    F32(f32),
    F64(f64),
    F16(half::f16),
    BF16(half::bf16),
    I32(i32),
    I64(i64),
    U8(u8),
    Bool(bool),
    I8(i8),
    I16(i16),
    U16(u16),
    U32(u32),
    U64(u64),
);
