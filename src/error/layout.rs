//! [`LayoutError`]: the errors of shapes, strides, views, broadcasting and the arguments of
//! tensor ops (the layout, ops and tensor layers, and the shape limits the engines put on
//! them), which `?` turns into [`Error::Layout`](super::Error::Layout).

/// Errors in shapes, strides, views and broadcasting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// Two shapes cannot be broadcast together.
    #[error("{op}: shapes {lhs:?} and {rhs:?} cannot be broadcast together")]
    BroadcastMismatch {
        /// The operation.
        op: &'static str,
        /// Left shape.
        lhs: Vec<usize>,
        /// Right shape.
        rhs: Vec<usize>,
    },
    /// An operand's shape differs from the one required.
    #[error("{op}: expected shape {expected:?}, got {got:?}")]
    ShapeMismatch {
        /// The operation.
        op: &'static str,
        /// Required shape.
        expected: Vec<usize>,
        /// Given shape.
        got: Vec<usize>,
    },
    /// A dimension index is out of range for the tensor's rank.
    #[error("{op}: dim {dim} is out of range for rank {rank}")]
    DimOutOfRange {
        /// The operation.
        op: &'static str,
        /// The dim asked for (negative counts from the end).
        dim: isize,
        /// The tensor's rank.
        rank: usize,
    },
    /// A permutation is not a permutation of `0..rank`.
    #[error("{op}: {perm:?} is not a permutation of 0..{rank}")]
    InvalidPermutation {
        /// The operation.
        op: &'static str,
        /// The given order.
        perm: Vec<usize>,
        /// The tensor's rank.
        rank: usize,
    },
    /// A range along a dim falls outside it, or a step is zero.
    #[error("{op}: range {start}..{end} step {step} is invalid for dim {dim} of size {size}")]
    RangeOutOfBounds {
        /// The operation.
        op: &'static str,
        /// The dim.
        dim: usize,
        /// Start of the range.
        start: usize,
        /// End of the range (exclusive).
        end: usize,
        /// Step (must be non-zero).
        step: isize,
        /// The dim's size.
        size: usize,
    },
    /// A reshape changes the element count.
    #[error(
        "{op}: cannot reshape {from:?} ({from_numel} elements) into {to:?} ({to_numel} elements)"
    )]
    ReshapeNumel {
        /// The operation.
        op: &'static str,
        /// Current shape.
        from: Vec<usize>,
        /// Elements in the current shape.
        from_numel: usize,
        /// Requested shape.
        to: Vec<usize>,
        /// Elements in the requested shape.
        to_numel: usize,
    },
    /// A reshape needs a copy because the strides do not allow a view.
    #[error("{op}: shape {from:?} with strides {strides:?} cannot be viewed as {to:?} without a copy; call `reshape_copy` (or `contiguous()` first)")]
    ReshapeNeedsCopy {
        /// The operation.
        op: &'static str,
        /// Current shape.
        from: Vec<usize>,
        /// Current strides.
        strides: Vec<isize>,
        /// Requested shape.
        to: Vec<usize>,
    },
    /// A size, a byte count or an offset overflows.
    #[error("{op}: size overflow for shape {shape:?} ({what})")]
    SizeOverflow {
        /// The operation.
        op: &'static str,
        /// The shape involved.
        shape: Vec<usize>,
        /// What overflowed (element count, bytes, offset).
        what: &'static str,
    },
    /// A layout reaches outside the storage it views.
    #[error("{op}: layout (shape {shape:?}, strides {strides:?}, offset {offset}) reaches outside storage of {storage_len} elements")]
    OutOfStorage {
        /// The operation.
        op: &'static str,
        /// Shape.
        shape: Vec<usize>,
        /// Strides.
        strides: Vec<isize>,
        /// Offset.
        offset: usize,
        /// Elements in the storage.
        storage_len: usize,
    },
    /// An output view has elements that alias each other (e.g. a stride-0 broadcast).
    #[error("{op}: output view (shape {shape:?}, strides {strides:?}) has overlapping elements; write into a contiguous tensor instead")]
    OverlappingOutput {
        /// The operation.
        op: &'static str,
        /// Shape.
        shape: Vec<usize>,
        /// Strides.
        strides: Vec<isize>,
    },
    /// `squeeze` of a dim whose size is not 1, or a `broadcast_to` of a non-1 dim.
    #[error("{op}: dim {dim} has size {size}, expected {expected}")]
    DimSize {
        /// The operation.
        op: &'static str,
        /// The dim.
        dim: usize,
        /// Its size.
        size: usize,
        /// The size required.
        expected: usize,
    },
    /// An operand's strides have another length than the shape's rank.
    #[error("{op}: operand {operand} has {got} strides for a shape of rank {rank}")]
    StrideRankMismatch {
        /// The operation.
        op: &'static str,
        /// Which operand (0-based).
        operand: usize,
        /// The shape's rank.
        rank: usize,
        /// The number of strides given.
        got: usize,
    },
    /// A borrowed array's elements leave gaps in the memory they span (a stepped slice), so
    /// the span cannot be borrowed as one slice: the gaps may be borrowed by someone else.
    #[error("{op}: array (shape {shape:?}, strides {strides:?}) has gaps between its elements and cannot be borrowed without a copy; use `Tensor::from_ndarray` to copy it")]
    NotDense {
        /// The operation.
        op: &'static str,
        /// Shape.
        shape: Vec<usize>,
        /// Strides (in elements).
        strides: Vec<isize>,
    },
    /// A flat buffer's length is not the element count of the shape it is given for (a
    /// length, not a shape: the message says both).
    #[error("{op}: shape {shape:?} holds {expected} elements, but the data has length {got}")]
    LengthMismatch {
        /// The operation.
        op: &'static str,
        /// The shape asked for.
        shape: Vec<usize>,
        /// Its element count.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A multi-index has another number of entries than the shape has dims.
    #[error("{op}: an index into shape {shape:?} needs {rank} entries (one per dim), got {got}")]
    IndexLength {
        /// The operation.
        op: &'static str,
        /// The shape indexed.
        shape: Vec<usize>,
        /// Its rank (entries needed).
        rank: usize,
        /// Entries given.
        got: usize,
    },
    /// One entry of a multi-index is not below its dim's size.
    #[error("{op}: index {index} is out of bounds for dim {dim} of size {size}")]
    IndexOutOfBounds {
        /// The operation.
        op: &'static str,
        /// The dim.
        dim: usize,
        /// The index given along it.
        index: usize,
        /// The dim's size.
        size: usize,
    },
    /// A layout was given another number of strides than its shape has dims.
    #[error("{op}: {got} strides {strides:?} given for shape {shape:?} of rank {rank}; give one stride per dim")]
    StrideCount {
        /// The operation.
        op: &'static str,
        /// The shape.
        shape: Vec<usize>,
        /// The strides given.
        strides: Vec<isize>,
        /// The shape's rank (strides needed).
        rank: usize,
        /// Strides given.
        got: usize,
    },
    /// A layout reaches an element offset that does not fit `isize` (its start offset, or the
    /// start offset plus a stride times an index, is past `isize::MAX`).
    #[error("{op}: layout (shape {shape:?}, strides {strides:?}, offset {offset}) reaches an element offset past isize::MAX")]
    OffsetOverflow {
        /// The operation.
        op: &'static str,
        /// Shape.
        shape: Vec<usize>,
        /// Strides.
        strides: Vec<isize>,
        /// Offset.
        offset: usize,
    },
    /// A layout reaches an element before the start of the storage (negative strides that
    /// walk below its offset).
    #[error("{op}: layout (shape {shape:?}, strides {strides:?}, offset {offset}) reaches element offset {lowest}, before the start of the storage")]
    BelowStorageStart {
        /// The operation.
        op: &'static str,
        /// Shape.
        shape: Vec<usize>,
        /// Strides.
        strides: Vec<isize>,
        /// Offset.
        offset: usize,
        /// The lowest offset reached (negative).
        lowest: isize,
    },
    /// An op's operands keep more dims after collapsing than the GPU kernels' offset
    /// calculator takes.
    #[error("{op}: rank {rank} exceeds the GPU kernels' limit of {max} dims after collapsing; make the operands contiguous (`.contiguous()`) or reshape them to fewer dims")]
    GpuRankTooLarge {
        /// The operation.
        op: &'static str,
        /// The collapsed rank.
        rank: usize,
        /// The most dims a GPU kernel takes.
        max: usize,
    },
    /// Too many dims.
    #[error("{op}: rank {rank} exceeds the maximum of {max}")]
    RankTooLarge {
        /// The operation.
        op: &'static str,
        /// The rank asked for.
        rank: usize,
        /// The maximum supported.
        max: usize,
    },
    /// A fused expression reads more tensors than one kernel takes.
    #[error("{op}: the expressions read {leaves} distinct tensors and write {outputs}; one fused kernel takes at most {max_leaves} inputs and 4 outputs: split the expression, or evaluate part of it first with `.eval()`")]
    TooManyOperands {
        /// The operation.
        op: &'static str,
        /// Distinct tensors read.
        leaves: usize,
        /// Outputs written.
        outputs: usize,
        /// The most inputs a fused kernel takes.
        max_leaves: usize,
    },
    /// An expression of scalars only has no device or shape to evaluate on.
    #[error("{op}: the expression reads no tensor, so it has no device or shape; use `eval_into` with an output, or make one operand a tensor")]
    NoTensorInExpression {
        /// The operation.
        op: &'static str,
    },
    /// A fused expression reads the current value of an output (`expr::Current`) that this
    /// evaluation does not write in place: a plain `eval` / `eval_into`, an output index
    /// past the outputs, or an output of another element type.
    #[error("{op}: the expression reads the current value of output {output} ({dtype}), but {reason}; read an output's current value only inside `expr::update` (or `Tensor::update`) writing that output")]
    UnboundCurrent {
        /// The operation.
        op: &'static str,
        /// The output index the expression reads.
        output: usize,
        /// The element type it reads it as.
        dtype: &'static str,
        /// What does not match.
        reason: &'static str,
    },
    /// A leaf of a fused expression shares memory with an output. Only an output's own
    /// current value (`expr::update`), read through exactly the output's layout, may be read
    /// while it is written.
    #[error("{op}: leaf {leaf} overlaps output {output} in memory; read the output in place through `expr::update` (same layout), or write into another tensor")]
    LeafOverlapsOutput {
        /// The operation.
        op: &'static str,
        /// The leaf, in program order.
        leaf: usize,
        /// The output.
        output: usize,
    },
    /// `arange_step` was given a step of zero, a bound or step that is not finite, or a
    /// range holding more elements than a tensor can.
    #[error("{op}: cannot make the range {start} to {end} in steps of {step}; the step must be finite and non-zero and point from start toward end (or the range be empty), and the count fit a tensor")]
    InvalidRange {
        /// The operation.
        op: &'static str,
        /// First value, as written by its element type's `Debug`.
        start: Box<str>,
        /// End (exclusive), likewise.
        end: Box<str>,
        /// Step, likewise.
        step: Box<str>,
    },
    /// `cat` or `stack` was given no tensors.
    #[error("{op}: no tensors given; pass at least one")]
    NoTensors {
        /// The operation.
        op: &'static str,
    },
    /// A tensor given to `cat` or `stack` does not fit the first one: another rank, or
    /// another size in a dim other than the one joined along (any dim, for `stack`; `op`
    /// says which).
    #[error("{op}: tensor {index} has shape {got:?}, which does not fit shape {expected:?} of tensor 0 ({})", if *op == "stack" { "stack takes tensors of one shape".to_owned() } else { format!("joining along dim {dim}, every other dim must match") })]
    JoinMismatch {
        /// The operation.
        op: &'static str,
        /// The dim joined along (for `stack`, the new dim).
        dim: usize,
        /// Which tensor of the list does not fit.
        index: usize,
        /// Shape of tensor 0.
        expected: Vec<usize>,
        /// Its shape.
        got: Vec<usize>,
    },
    /// A dim is named twice in the dims of a reduction.
    #[error("{op}: dim {dim} appears more than once in the dims to reduce (rank {rank})")]
    DuplicateDim {
        /// The operation.
        op: &'static str,
        /// The dim named twice (resolved, so `-1` of rank 3 reads 2).
        dim: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// `max`, `min`, `argmax` or `argmin` over dims that hold no elements, for an output
    /// that has some: these ops have no identity to return (`sum`, `prod` and `mean` do).
    #[error("{op}: cannot reduce shape {shape:?} over dims {dims:?}, which hold no elements, because {op} has no identity; reduce over non-empty dims, or check `numel()` first")]
    EmptyReduction {
        /// The operation.
        op: &'static str,
        /// The input's shape.
        shape: Vec<usize>,
        /// The reduced dims (resolved).
        dims: Vec<usize>,
    },
    /// A value was asked of a tensor that does not hold exactly one element (`item`).
    #[error("{op}: a tensor of shape {shape:?} holds {numel} elements, not one; reduce it first (`sum()`, `max()`, ...) or pick an element with `get`")]
    NotOneElement {
        /// The operation.
        op: &'static str,
        /// The tensor's shape.
        shape: Vec<usize>,
        /// Its element count.
        numel: usize,
    },
    // Matrix multiplication (issue 27).
    /// The operands of a matrix product do not fit: the inner dims differ, the batch dims do
    /// not broadcast, an operand has no dims, or `bmm` was given other than two 3-D tensors
    /// of one batch size. `reason` says which.
    #[error("{op}: shapes {lhs:?} and {rhs:?} cannot be multiplied: {reason}")]
    MatmulMismatch {
        /// The operation (`matmul`, `bmm`, `gemm`, ...).
        op: &'static str,
        /// The left operand's shape.
        lhs: Vec<usize>,
        /// The right operand's shape.
        rhs: Vec<usize>,
        /// What does not fit, in words (e.g. "the left operand's last dim differs from the
        /// right operand's first of its last two").
        reason: &'static str,
    },
    // Shape basics (issue 28): triangles, padding, splits, selecting one index.
    /// The op needs more dims than the tensor has (`tril` and `triu` need a matrix).
    #[error("{op}: needs a tensor of at least {min} dims, got rank {rank}")]
    RankTooSmall {
        /// The operation.
        op: &'static str,
        /// The tensor's rank.
        rank: usize,
        /// The least rank the op takes.
        min: usize,
    },
    /// `pad` was given an odd number of padding values, or more than two per dim.
    #[error("{op}: {got} padding values given for a tensor of rank {rank}; give (before, after) pairs, last dim first, at most two per dim (PyTorch's order)")]
    PadLength {
        /// The operation.
        op: &'static str,
        /// How many values were given.
        got: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// A padding wider than its mode allows: `reflect` needs `pad < size`, `circular`
    /// `pad <= size`, `replicate` a non-empty dim.
    #[error("{op}: padding {pad} of dim {dim} (size {size}) is too wide for {mode} padding, which needs {rule}")]
    PadTooWide {
        /// The operation.
        op: &'static str,
        /// The padding mode (`reflect`, `replicate`, `circular`).
        mode: &'static str,
        /// The dim.
        dim: usize,
        /// The padding asked for on one side.
        pad: usize,
        /// The dim's size.
        size: usize,
        /// The mode's rule, in words.
        rule: &'static str,
    },
    /// A split that cannot be made: zero chunks, a zero split size with elements left, or
    /// section sizes that do not add up to the dim's size. `reason` says which.
    #[error("{op}: cannot split dim {dim} of size {size}: {reason}")]
    InvalidSplit {
        /// The operation (`chunk`, `split`, `split_sizes`).
        op: &'static str,
        /// The dim.
        dim: usize,
        /// The dim's size.
        size: usize,
        /// What is wrong, in words.
        reason: &'static str,
    },
    /// An index lies outside the dim it indexes (`select`, and the indexing ops: `gather`,
    /// `scatter`, `index_select`, `take`, `one_hot`, `bincount`, ...); raised before anything
    /// is written. Negative indices count from the end only where PyTorch's op allows it.
    #[error("{op}: index {index} is out of range for dim {dim} of size {size}")]
    IndexOutOfRange {
        /// The operation.
        op: &'static str,
        /// The index as given.
        index: i64,
        /// The dim it indexes.
        dim: usize,
        /// The dim's size.
        size: usize,
    },
    /// A dim range that starts after it ends (`flatten(2, 1)`).
    #[error("{op}: start dim {start} comes after end dim {end}")]
    DimOrder {
        /// The operation.
        op: &'static str,
        /// The first dim, resolved.
        start: usize,
        /// The last dim, resolved.
        end: usize,
    },
    /// A list argument of the wrong length: `roll`'s shifts and dims differ in length,
    /// `repeat` got fewer counts than the tensor has dims. `rule` says what fits.
    #[error("{op}: {got} {what} given; {rule}")]
    ArgumentCount {
        /// The operation.
        op: &'static str,
        /// What the list holds (`shifts`, `repeat counts`).
        what: &'static str,
        /// Its length.
        got: usize,
        /// The length that fits, in words.
        rule: String,
    },
    // issue 28 (norm): statistics and normalisations.
    /// The `normalized_shape` of `layer_norm` / `rms_norm` is not the input's trailing dims
    /// (or is longer than the input's rank).
    #[error("{op}: normalized_shape {normalized_shape:?} is not the trailing dims of an input of shape {shape:?}")]
    NormalizedShapeMismatch {
        /// The operation.
        op: &'static str,
        /// The input's shape.
        shape: Vec<usize>,
        /// The `normalized_shape` given.
        normalized_shape: Vec<usize>,
    },
    /// A weight or bias of a normalisation does not have the shape it scales.
    #[error("{op}: {param} has shape {got:?}, expected {expected:?}")]
    NormParamShape {
        /// The operation.
        op: &'static str,
        /// `"weight"` or `"bias"`.
        param: &'static str,
        /// The shape it must have.
        expected: Vec<usize>,
        /// The shape it has.
        got: Vec<usize>,
    },
    /// `group_norm`'s groups do not divide the channels (dim 1), there are none, or the input
    /// has fewer than two dims.
    #[error("{op}: {num_groups} groups cannot split the channels of an input of shape {shape:?} (dim 1 must be a multiple of num_groups > 0)")]
    GroupNormGroups {
        /// The operation.
        op: &'static str,
        /// The groups asked for.
        num_groups: usize,
        /// The input's shape.
        shape: Vec<usize>,
    },
    // Scans and sorting (issue 28, sort).
    /// `k` is outside what the dim allows: `topk` takes `0..=size`, `kthvalue` `1..=size`.
    #[error("{op}: k = {k} is out of range for dim {dim} of size {size}")]
    KOutOfRange {
        /// The operation (`topk`, `kthvalue`).
        op: &'static str,
        /// The `k` asked for.
        k: usize,
        /// The dim (resolved).
        dim: usize,
        /// Its size.
        size: usize,
    },
    /// `searchsorted`'s sorted sequence is not 1-D.
    #[error("{op}: the sorted sequence must be 1-D, got shape {sorted:?} (values {values:?})")]
    SortedSequenceShape {
        /// The operation.
        op: &'static str,
        /// The sorted sequence's shape.
        sorted: Vec<usize>,
        /// The values' shape.
        values: Vec<usize>,
    },
}
