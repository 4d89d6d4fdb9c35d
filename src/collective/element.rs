//! [`NcclElement`]: the element types NCCL can move and reduce.

use crate::element::Element;

mod sealed {
    pub trait Sealed {}
}

/// Element types NCCL has a data type for: `f32`, `f64`, `f16`, `bf16`, `i8`, `i32`, `i64`,
/// `u8`, `u32` and `u64`. `i16` and `u16` are not (NCCL has no 16-bit integer type; cast to
/// `i32` first), nor is `bool`: a sum of masks would give values that are not `bool`s. Sealed.
#[diagnostic::on_unimplemented(
    message = "NCCL collectives do not take `{Self}` elements",
    label = "NCCL has no data type for this element type",
    note = "collectives take f32, f64, f16, bf16, i8, i32, i64, u8, u32 or u64 elements; cast first (for i16 or u16, `.cast::<i32>()`; for a bool mask, `.cast::<u8>()`)"
)]
pub trait NcclElement: Element + sealed::Sealed {}

macro_rules! nccl_element {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl NcclElement for $t {}
    )*};
}

nccl_element!(f32, f64, half::f16, half::bf16, i32, i64, u8, i8, u32, u64);

static_assertions::assert_not_impl_any!(bool: NcclElement);
static_assertions::assert_not_impl_any!(i16: NcclElement);
static_assertions::assert_not_impl_any!(u16: NcclElement);
