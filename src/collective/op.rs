//! [`ReduceOp`]: how a reducing collective combines the ranks' elements.

/// How [`all_reduce`](super::Communicator::all_reduce) and
/// [`reduce_scatter`](super::Communicator::reduce_scatter) combine the ranks' elements
/// (NCCL's `ncclRedOp_t`).
///
/// Every rank receives the same result, bit for bit: NCCL reduces each element once and
/// sends the result to every rank. The order in which ranks are combined is NCCL's (it
/// depends on the algorithm and the topology), so a floating-point sum may differ in the
/// last bits from a sum in rank order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum.
    Sum,
    /// The product.
    Prod,
    /// The largest value.
    Max,
    /// The smallest value.
    Min,
    /// The mean: the sum divided by the number of ranks (for integers, NCCL divides the sum
    /// and truncates).
    Avg,
}
