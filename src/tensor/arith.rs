//! `std::ops` on references: `&a + &b`, `&a - &b`, `&a * &b`, `&a / &b` and `-&a` for any
//! mix of [`Tensor`], [`TensorView`] and [`TensorViewMut`] of one element type and device.
//!
//! Operators cannot fail in Rust's signatures, so (as in candle) they return
//! `Result<Tensor<T, D>>`: write `(&a + &b)?`. Broadcasting follows NumPy.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::ops::{map, zip};
use super::{ReadRepr, Tensor};
use crate::element::{Numeric, Signed};
use crate::error::Result;
use crate::ops::{table, Backend};

/// Implements one arithmetic operator for `&Tensor<T, D, S1> op &Tensor<T, D, S2>`: every
/// mix of owned tensors and views in one impl.
macro_rules! arith {
    ($tr:ident, $method:ident, $op:expr) => {
        impl<'x, 'y, T, D, S1, S2> $tr<&'y Tensor<T, D, S2>> for &'x Tensor<T, D, S1>
        where
            T: Numeric,
            D: Backend,
            S1: ReadRepr<T, D>,
            S2: ReadRepr<T, D>,
        {
            type Output = Result<Tensor<T, D>>;
            fn $method(self, rhs: &'y Tensor<T, D, S2>) -> Self::Output {
                zip($op, &self.view(), &rhs.view())
            }
        }
    };
}

arith!(Add, add, table::Add);
arith!(Sub, sub, table::Sub);
arith!(Mul, mul, table::Mul);
arith!(Div, div, table::Div);

impl<T: Signed, D: Backend, S: ReadRepr<T, D>> Neg for &Tensor<T, D, S> {
    type Output = Result<Tensor<T, D>>;
    fn neg(self) -> Self::Output {
        map(table::Neg, &self.view())
    }
}
