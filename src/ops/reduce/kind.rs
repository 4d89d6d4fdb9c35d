//! The reductions as a run-time tag: kernel names, CUDA functors, messages.

/// The reductions, as a run-time tag (kernel names, messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReduceKind {
    /// `Σ x`.
    Sum,
    /// `Π x`.
    Prod,
    /// `Σ x / n`.
    Mean,
    /// The largest element (NaN if any is NaN).
    Max,
    /// The smallest element (NaN if any is NaN).
    Min,
    /// The index of the first largest element.
    ArgMax,
    /// The index of the first smallest element.
    ArgMin,
    /// `Σ |x|` (floats).
    SumAbs,
    /// `Σ x²` (floats).
    SumSq,
}

impl ReduceKind {
    /// The method's name (`"sum"`, `"argmax"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "sum",
            ReduceKind::Prod => "prod",
            ReduceKind::Mean => "mean",
            ReduceKind::Max => "max",
            ReduceKind::Min => "min",
            ReduceKind::ArgMax => "argmax",
            ReduceKind::ArgMin => "argmin",
            ReduceKind::SumAbs => "sum_abs",
            ReduceKind::SumSq => "sum_sq",
        }
    }

    /// Whether the op has a value for no elements (`sum`, `prod`, `mean`, `sum_abs`,
    /// `sum_sq`).
    pub const fn has_identity(self) -> bool {
        matches!(
            self,
            ReduceKind::Sum
                | ReduceKind::Prod
                | ReduceKind::Mean
                | ReduceKind::SumAbs
                | ReduceKind::SumSq
        )
    }

    /// Whether the result is an index (`argmax`, `argmin`).
    pub const fn is_arg(self) -> bool {
        matches!(self, ReduceKind::ArgMax | ReduceKind::ArgMin)
    }

    /// The CUDA functor template in `kernels/reduce.cuh` (`ts_red_sum<In, Out>`, ...).
    pub const fn cuda_functor(self) -> &'static str {
        match self {
            ReduceKind::Sum => "ts_red_sum",
            ReduceKind::Prod => "ts_red_prod",
            ReduceKind::Mean => "ts_red_mean",
            ReduceKind::Max => "ts_red_max",
            ReduceKind::Min => "ts_red_min",
            ReduceKind::ArgMax => "ts_red_argmax",
            ReduceKind::ArgMin => "ts_red_argmin",
            ReduceKind::SumAbs => "ts_red_sum_abs",
            ReduceKind::SumSq => "ts_red_sum_sq",
        }
    }
}

impl std::fmt::Display for ReduceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
