//! The generators: the op types and the run-time lists [`UNARY_OPS`](super::UNARY_OPS),
//! [`BINARY_OPS`](super::BINARY_OPS) and [`TERNARY_OPS`](super::TERNARY_OPS), defined from
//! the table's entries where `super` invokes them.

use crate::element::Element;

/// The table's header, for the generated docs of [`UNARY_OPS`], [`BINARY_OPS`] and
/// [`TERNARY_OPS`].
macro_rules! doc_table {
    ($($row:expr),* $(,)?) => {
        concat!(
            "| op | type | bound | output | CUDA expression |\n",
            "|----|------|-------|--------|-----------------|\n",
            $($row, "\n",)*
        )
    };
}

/// Defines the unary op types and [`UNARY_OPS`] from `for_each_unary_op!`.
macro_rules! unary_ops {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : $bound:ident => $out:ty, $opname:literal, $cuda:literal,
            |$a:ident| $body:expr $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( unary_ops!(@one $(#[$doc])* $name $(($($p),+))? : $bound => $out, $opname, $cuda, |$a| $body); )*

        /// Every unary op of the table (scalar-free and scalar-carrying; not `cast`):
        ///
        #[doc = doc_table!($(concat!(
            "| `", $opname, "` | [`", stringify!($name), "`](struct@", stringify!($name),
            ") | [`", stringify!($bound), "`] | `", stringify!($out), "` | `", $cuda, "` |"
        )),*)]
        pub const UNARY_OPS: &[OpInfo] = &[
            $( OpInfo { name: $opname, bound: stringify!($bound), cuda: $cuda }, )*
        ];
    };
    (@one $(#[$doc:meta])* $name:ident : $bound:ident => $out:ty, $opname:literal,
        $cuda:literal, |$a:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl Sealed for $name {}

        impl<T: $bound> UnaryOp<T> for $name {
            type Output = $out;
            const NAME: &'static str = $opname;
            const CUDA: &'static str = $cuda;
            #[inline(always)]
            fn cpu(&self, $a: T) -> $out {
                $body
            }
        }
    };
    (@one $(#[$doc:meta])* $name:ident ($($p:ident),+) : $bound:ident => $out:ty,
        $opname:literal, $cuda:literal, |$a:ident| $body:expr) => {
        unary_ops!(@struct $(#[$doc])* $name ($($p),+));

        impl<T> Sealed for $name<T> {}

        impl<T: $bound> UnaryOp<T> for $name<T> {
            type Output = $out;
            const NAME: &'static str = $opname;
            const CUDA: &'static str = $cuda;
            #[inline(always)]
            fn cpu(&self, $a: T) -> $out {
                let $name($($p),+) = *self;
                $body
            }
            fn scalars(&self) -> [T; 2] {
                let $name($($p),+) = *self;
                pad_scalars(&[$($p),+])
            }
        }
    };
    (@struct $(#[$doc:meta])* $name:ident ($p:ident)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name<T>(pub T);
    };
    (@struct $(#[$doc:meta])* $name:ident ($p:ident, $q:ident)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name<T>(pub T, pub T);
    };
}

/// `[p0, p1]` with missing scalars zero.
pub(super) fn pad_scalars<T: Element>(given: &[T]) -> [T; 2] {
    let mut out = [T::ZERO; 2];
    out[..given.len()].copy_from_slice(given);
    out
}

/// Defines the binary op types and [`BINARY_OPS`] from `for_each_binary_op!`.
macro_rules! binary_ops {
    ($(
        $(#[$doc:meta])*
        $name:ident : $bound:ident => $out:ty, $opname:literal, $cuda:literal,
            |$a:ident, $b:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct $name;

            impl Sealed for $name {}

            impl<T: $bound> BinaryOp<T> for $name {
                type Output = $out;
                const NAME: &'static str = $opname;
                const CUDA: &'static str = $cuda;
                #[inline(always)]
                fn cpu(&self, $a: T, $b: T) -> $out {
                    $body
                }
            }
        )*

        /// Every binary op of the table:
        ///
        #[doc = doc_table!($(concat!(
            "| `", $opname, "` | [`", stringify!($name), "`](struct@", stringify!($name),
            ") | [`", stringify!($bound), "`] | `", stringify!($out), "` | `", $cuda, "` |"
        )),*)]
        pub const BINARY_OPS: &[OpInfo] = &[
            $( OpInfo { name: $opname, bound: stringify!($bound), cuda: $cuda }, )*
        ];
    };
}

/// Defines the ternary op types and [`TERNARY_OPS`] from `for_each_ternary_op!`; `[A]` is the
/// first input's type (`T` or `bool`).
macro_rules! ternary_ops {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : [$first:tt] $bound:ident => $out:ty, $opname:literal,
            $cuda:literal, |$a:ident, $b:ident, $c:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( ternary_ops!(@one $(#[$doc])* $name $(($($p),+))? : [$first] $bound => $out, $opname,
            $cuda, |$a, $b, $c| $body); )*

        /// Every ternary op of the table (bound: the first input's type, then the bound on
        /// `T`, the type of the other two):
        ///
        #[doc = doc_table!($(concat!(
            "| `", $opname, "` | [`", stringify!($name), "`](struct@", stringify!($name),
            ") | `", stringify!($first), "`, [`", stringify!($bound), "`] | `",
            stringify!($out), "` | `", $cuda, "` |"
        )),*)]
        pub const TERNARY_OPS: &[OpInfo] = &[
            $( OpInfo { name: $opname, bound: stringify!($bound), cuda: $cuda }, )*
        ];
    };
    (@one $(#[$doc:meta])* $name:ident : [$first:tt] $bound:ident => $out:ty, $opname:literal,
        $cuda:literal, |$a:ident, $b:ident, $c:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl Sealed for $name {}

        impl<T: $bound> TernaryOp<$first, T> for $name {
            type Output = $out;
            const NAME: &'static str = $opname;
            const CUDA: &'static str = $cuda;
            #[inline(always)]
            fn cpu(&self, $a: $first, $b: T, $c: T) -> $out {
                $body
            }
        }
    };
    // An op carrying scalars (`p0`, `p1`): the first input is `T`.
    (@one $(#[$doc:meta])* $name:ident ($($p:ident),+) : [T] $bound:ident => $out:ty,
        $opname:literal, $cuda:literal, |$a:ident, $b:ident, $c:ident| $body:expr) => {
        unary_ops!(@struct $(#[$doc])* $name ($($p),+));

        impl<T> Sealed for $name<T> {}

        impl<T: $bound> TernaryOp<T, T> for $name<T> {
            type Output = $out;
            const NAME: &'static str = $opname;
            const CUDA: &'static str = $cuda;
            #[inline(always)]
            fn cpu(&self, $a: T, $b: T, $c: T) -> $out {
                let $name($($p),+) = *self;
                $body
            }
            fn scalars(&self) -> [T; 2] {
                let $name($($p),+) = *self;
                pad_scalars(&[$($p),+])
            }
        }
    };
}
