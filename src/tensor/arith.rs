//! `std::ops` on references: `&a + &b`, `&a - &b`, `&a * &b`, `&a / &b` and `-&a` for any
//! mix of [`Tensor`], [`TensorView`] and [`TensorViewMut`] of one element type and device.
//!
//! Operators cannot fail in Rust's signatures, so (as in candle) they return
//! `Result<Tensor<T, D>>`: write `(&a + &b)?`. Broadcasting follows NumPy.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::ops::{map, zip};
use super::{Tensor, TensorView, TensorViewMut};
use crate::element::{Numeric, Signed};
use crate::error::Result;
use crate::ops::{table, Backend};

/// Implements the four arithmetic operators for `&$lhs op &$rhs`.
macro_rules! arith {
    ([$($lt:lifetime),*] $lhs:ty, $rhs:ty) => {
        arith!(@one Add, add, table::Add, [$($lt),*] $lhs, $rhs);
        arith!(@one Sub, sub, table::Sub, [$($lt),*] $lhs, $rhs);
        arith!(@one Mul, mul, table::Mul, [$($lt),*] $lhs, $rhs);
        arith!(@one Div, div, table::Div, [$($lt),*] $lhs, $rhs);
    };
    (@one $tr:ident, $method:ident, $op:expr, [$($lt:lifetime),*] $lhs:ty, $rhs:ty) => {
        impl<'x, 'y, $($lt,)* T: Numeric, D: Backend> $tr<&'y $rhs> for &'x $lhs {
            type Output = Result<Tensor<T, D>>;
            fn $method(self, rhs: &'y $rhs) -> Self::Output {
                zip($op, &self.view(), &rhs.view())
            }
        }
    };
}

arith!([] Tensor<T, D>, Tensor<T, D>);
arith!(['b] Tensor<T, D>, TensorView<'b, T, D>);
arith!(['b] Tensor<T, D>, TensorViewMut<'b, T, D>);
arith!(['a] TensorView<'a, T, D>, Tensor<T, D>);
arith!(['a, 'b] TensorView<'a, T, D>, TensorView<'b, T, D>);
arith!(['a, 'b] TensorView<'a, T, D>, TensorViewMut<'b, T, D>);
arith!(['a] TensorViewMut<'a, T, D>, Tensor<T, D>);
arith!(['a, 'b] TensorViewMut<'a, T, D>, TensorView<'b, T, D>);
arith!(['a, 'b] TensorViewMut<'a, T, D>, TensorViewMut<'b, T, D>);

/// Implements unary minus for `-&$ty`.
macro_rules! negate {
    ([$($lt:lifetime),*] $ty:ty) => {
        impl<'x, $($lt,)* T: Signed, D: Backend> Neg for &'x $ty {
            type Output = Result<Tensor<T, D>>;
            fn neg(self) -> Self::Output {
                map(table::Neg, &self.view())
            }
        }
    };
}

negate!([] Tensor<T, D>);
negate!(['a] TensorView<'a, T, D>);
negate!(['a] TensorViewMut<'a, T, D>);
