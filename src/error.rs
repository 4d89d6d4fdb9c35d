//! The crate's one error type.
//!
//! [`Error`] is `#[non_exhaustive]` and grouped by concern: each concern has its own enum
//! ([`LayoutError`], [`AllocError`], [`GpuError`], [`StateError`], [`NcclError`]) so a caller can match a
//! whole family at once, and every variant carries what is needed to fix the call: the op,
//! the shapes, the dims, the sizes.

use crate::element::DType;
pub use crate::oom::{OomHint, OutOfMemoryError};

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error this crate returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A shape, stride, view or broadcast was invalid.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// An allocator could not satisfy a request.
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// The GPU, its driver or NVRTC failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A run-time checked state conversion (erased blobs) did not match.
    #[error(transparent)]
    State(#[from] StateError),
    /// NCCL, a communicator or a collective's arguments failed (docs/COLLECTIVES.md).
    #[error(transparent)]
    Nccl(#[from] NcclError),
    /// Two operands have different element types where one was required (run-time paths only;
    /// typed paths make this a compile error).
    #[error("{op}: element type mismatch, expected {expected}, got {got}")]
    DTypeMismatch {
        /// The operation.
        op: &'static str,
        /// The type the operation needed.
        expected: DType,
        /// The type it got.
        got: DType,
    },
}

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
}

/// Errors from allocators and memory sources.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocError {
    /// The request could not be met even after freeing cached memory and retrying.
    ///
    /// The message reads like PyTorch's: how much was asked, the device's total and free
    /// memory, what this allocator holds (allocated, and reserved but unallocated), then
    /// the [`OomHint`]s that apply, each naming a setting to try. (Boxed: the numbers and
    /// hints would otherwise make every `Result` of the crate larger.)
    #[error(transparent)]
    OutOfMemory(Box<OutOfMemoryError>),
    /// A host buffer of `elements` elements of `elem_size` bytes would exceed `isize::MAX`
    /// bytes, the most one allocation may hold.
    #[error(
        "{device}: a buffer of {elements} elements of {elem_size} bytes exceeds isize::MAX bytes"
    )]
    TooLarge {
        /// Which device or source.
        device: String,
        /// Elements asked for.
        elements: usize,
        /// Bytes per element.
        elem_size: usize,
    },
    /// The requested size overflows when rounded up.
    #[error("allocation of {requested} bytes overflows when rounded")]
    SizeOverflow {
        /// Bytes asked for.
        requested: usize,
    },
    /// A configuration string could not be parsed (its `key:value,key:value` syntax is
    /// broken).
    #[error("invalid allocator configuration {input:?}: {reason}")]
    InvalidConfig {
        /// The text given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A configuration entry this allocator cannot use: an unknown key, a key of another
    /// allocator or pool type, or a key given twice (the earlier value would be dropped).
    #[error("invalid allocator configuration {input:?}: key {key:?} {reason}")]
    UnusableConfigKey {
        /// The configuration text (for settings made in code, `key:value`).
        input: String,
        /// The key.
        key: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A configuration setting, from text or from a builder, has a value out of its range
    /// (boxed: the key, the value and the text would make every error larger).
    #[error(transparent)]
    InvalidConfigValue(Box<ConfigValueError>),
    /// A block was returned that this allocator does not own (a double free or foreign block).
    #[error("block at {addr:#x} is not owned by this allocator")]
    UnknownBlock {
        /// The block's address.
        addr: u64,
    },
    /// An allocator handed out a block that breaks the
    /// [`DeviceAllocator`](crate::storage::DeviceAllocator) contract in a way that can be
    /// seen (smaller than asked, at address 0, on another stream); the block was given back.
    #[error("allocator {allocator} broke its contract: {reason}")]
    BrokenAllocator {
        /// The allocator's name.
        allocator: &'static str,
        /// What was wrong with the block.
        reason: String,
    },
    /// The memory source (driver) failed for a reason other than out-of-memory.
    #[error("memory source failed: {0}")]
    Source(String),
}

/// A configuration setting with a value out of its range
/// ([`AllocError::InvalidConfigValue`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid allocator configuration {input:?}: {key} = {value}: {reason}")]
pub struct ConfigValueError {
    /// The configuration text (for settings made in code, `key:value`).
    pub input: String,
    /// The setting.
    pub key: String,
    /// The value given, as written.
    pub value: String,
    /// The rule it breaks.
    pub reason: String,
}

/// Errors from the CUDA driver, NVRTC, or a missing GPU.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// No CUDA driver library (libcuda) could be loaded on this machine.
    #[error(
        "no CUDA driver found (libcuda could not be loaded): this machine has no usable NVIDIA GPU"
    )]
    NoDriver,
    /// NVRTC (libnvrtc) could not be loaded.
    #[error("NVRTC (libnvrtc) could not be loaded: install the CUDA toolkit's runtime compiler")]
    NoNvrtc,
    /// The device ordinal does not exist.
    #[error("GPU {ordinal} does not exist ({count} device(s) present)")]
    NoSuchDevice {
        /// Ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver call {call} failed: {message}")]
    Driver {
        /// The driver call.
        call: &'static str,
        /// The driver's error name and string.
        message: String,
    },
    /// NVRTC failed to compile a kernel.
    #[error("NVRTC failed to compile kernel {kernel} (options {options:?}):\n{log}")]
    Compile {
        /// The kernel's name.
        kernel: String,
        /// Options passed to NVRTC.
        options: Vec<String>,
        /// NVRTC's log.
        log: String,
    },
    /// The device allocator's configuration (`TYPESTATE_TENSOR_ALLOC_CONF` or
    /// `TYPESTATE_TENSOR_POOL_CONF`) is invalid.
    #[error("invalid GPU allocator configuration: {0}")]
    AllocatorConfig(AllocError),
    /// Two tensors in one op live on different GPUs.
    #[error("{op}: operands live on GPU {lhs} and GPU {rhs}")]
    DeviceMismatch {
        /// The operation.
        op: &'static str,
        /// One ordinal.
        lhs: usize,
        /// The other.
        rhs: usize,
    },
    /// A device allocator of one GPU was given to build a [`Gpu`](crate::gpu::Gpu) of
    /// another ([`Gpu::with_allocator`](crate::gpu::Gpu::with_allocator)).
    #[error("{op}: the {allocator} allocator belongs to GPU {allocator_ordinal}, not GPU {ordinal}; build one over `DeviceMemorySource::new({ordinal})` (or `gpu.device_memory_source()`)")]
    AllocatorOfAnotherGpu {
        /// The operation.
        op: &'static str,
        /// The GPU being built.
        ordinal: usize,
        /// The GPU whose memory the allocator hands out.
        allocator_ordinal: usize,
        /// The allocator's [`name`](crate::storage::DeviceAllocator::name).
        allocator: &'static str,
    },
    /// A device allocator whose memory is not device memory (pageable or pinned host
    /// memory) was given where a GPU's allocator was expected.
    #[error("{op}: the {allocator} allocator hands out {location}, not device memory of GPU {ordinal}; build it over `DeviceMemorySource::new({ordinal})` (or `gpu.device_memory_source()`)")]
    AllocatorNotOnDevice {
        /// The operation.
        op: &'static str,
        /// The GPU the allocator was meant for.
        ordinal: usize,
        /// The allocator's [`name`](crate::storage::DeviceAllocator::name).
        allocator: &'static str,
        /// Where its memory lives, as it reports.
        location: crate::memory_location::MemoryLocation,
    },
    /// An op's name or CUDA expression is not one the kernel generator accepts (see
    /// `check_op_source`); nothing was compiled.
    #[error(
        "op `{op}` cannot be compiled: {reason}; pointwise ops come from the crate's op table"
    )]
    UntrustedOp {
        /// The op's name, escaped.
        op: String,
        /// What is wrong.
        reason: String,
    },
    /// A call that cannot be recorded into a CUDA graph was made while the calling thread
    /// captures one ([`Gpu::capture`](crate::gpu::Gpu::capture)): a host copy, a
    /// synchronisation, another stream, or a buffer the graph would reach without holding
    /// it. Nothing was queued; the capture fails with this error, ends and is discarded, and
    /// the stream stays usable.
    #[error("{op} cannot be captured into a CUDA graph: {reason}")]
    NotCapturable {
        /// The operation.
        op: &'static str,
        /// Why, and what to do instead.
        reason: &'static str,
    },
    /// Another thread is capturing a CUDA graph on this stream (or owns the buffer's
    /// capture): the call would be recorded into that graph. Nothing was queued.
    #[error("{op}: another thread is capturing a CUDA graph on this stream or buffer; wait until its `Gpu::capture` returns")]
    CaptureInProgress {
        /// The operation.
        op: &'static str,
    },
    /// The buffer was allocated inside a CUDA graph capture that failed (the closure's
    /// error, a refused call, a driver error): the work that would have written it never
    /// ran, so it cannot be read or written. Drop it.
    #[error("{op}: this buffer was allocated inside a CUDA graph capture that failed, so its contents were never computed; drop it")]
    CaptureFailed {
        /// The operation.
        op: &'static str,
    },
    /// Tensors allocated during a capture are alive outside its outputs (sent away or
    /// stashed by the closure): replays would overwrite them, so the graph was discarded.
    #[error("{escaped} buffer(s) allocated during the CUDA graph capture outlive it outside the closure's outputs; return them as outputs or drop them inside the closure")]
    CaptureEscape {
        /// Buffers of the capture's private pool alive besides the outputs.
        escaped: usize,
    },
    /// An environment variable that picks how copies between GPUs go
    /// (`TYPESTATE_TENSOR_PEER_PATH`) holds a value it does not know.
    #[error("invalid {var}={value:?}: expected `auto` (peer-to-peer where the GPUs allow it) or `staged` (always through pinned host memory)")]
    InvalidPeerPath {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// A kernel key names another compute capability than the device it is loaded on (the
    /// kernel cache's load step): the image built for the key would not run there. Nothing
    /// was loaded.
    #[error("kernel {kernel} is keyed for compute capability {}.{} but GPU {ordinal} has {}.{}", key.0, key.1, device.0, device.1)]
    ArchMismatch {
        /// The kernel's entry point.
        kernel: String,
        /// The GPU it was to be loaded on.
        ordinal: usize,
        /// `(major, minor)` in the key.
        key: (u32, u32),
        /// `(major, minor)` of the device.
        device: (u32, u32),
    },
}

/// Errors of run-time checked state conversions (the erased end of the type-state ladder).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// An erased value was asked to become a state it is not in.
    #[error("expected state {expected}, but the value is in state {actual}")]
    WrongState {
        /// The state asked for.
        expected: &'static str,
        /// The state it is in.
        actual: &'static str,
    },
    /// A GPU-side transition was asked of memory created without a GPU.
    #[error("{op}: this memory is not tied to a GPU; create it with `with_gpu(&gpu, ..)` to use the GPU side")]
    NoGpu {
        /// The operation.
        op: &'static str,
    },
    /// A transition was asked of memory whose asynchronous push may still be running.
    #[error("{op}: an asynchronous push is in flight; call `wait()` first")]
    PushInFlight {
        /// The operation.
        op: &'static str,
    },
    /// Shared (frozen) memory was asked back for exclusive use while other holders remain.
    #[error("{op}: the memory is still shared by {holders} other holder(s); drop them first")]
    StillShared {
        /// The operation.
        op: &'static str,
        /// Other holders alive.
        holders: usize,
    },
    /// A reshape in place was asked to grow past the capacity allocated.
    #[error("{op}: {requested} elements exceed the capacity of {capacity}; use `reshape` (which reallocates) instead")]
    ExceedsCapacity {
        /// The operation.
        op: &'static str,
        /// Elements asked for.
        requested: usize,
        /// Elements allocated.
        capacity: usize,
    },
    /// An erased blob holds another element type than the one asked for.
    #[error("expected element type {expected}, but the value holds {actual}")]
    WrongDType {
        /// Asked for.
        expected: DType,
        /// Held.
        actual: DType,
    },
    /// A run-time blob call ([`crate::synced::DynBlob`]) would write or change the state of
    /// a side that is shared read-only ([`crate::synced::Frozen`]).
    #[error("{op}: the blob's {side} is shared read-only (state {state}), and this call would write it or change its state; convert the blob with `try_into_blob()` and call `thaw_{side}()` first")]
    FrozenSide {
        /// The operation.
        op: &'static str,
        /// `"data"` or `"diff"`.
        side: &'static str,
        /// The side's state, e.g. `"Frozen<HeadAtCpu>"`.
        state: &'static str,
    },
    /// Blob math that needs an initialized side was asked of an uninitialized one (Caffe's
    /// `Update()` of uninitialized data is a fatal error).
    #[error("{op}: the blob's {side} is uninitialized; write it first (Caffe's `Update()` of uninitialized data is a fatal error)")]
    NotInitialized {
        /// The operation.
        op: &'static str,
        /// `"data"` or `"diff"`.
        side: &'static str,
    },
}

/// Errors of the collectives ([`crate::collective`]): the NCCL library, its calls, the
/// environment of a per-process start, and arguments a collective refuses before anything
/// is queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NcclError {
    /// No NCCL library (libnccl) could be loaded on this machine. Nothing was called.
    #[error("NCCL (libnccl) could not be loaded: none of {tried:?} is on the library path; put the folder holding it on LD_LIBRARY_PATH (PyTorch's wheel `nvidia-nccl-cu13` ships `nvidia/nccl/lib/libnccl.so.2`: `bash scripts/nccl-lib.sh` links it as libnccl.so and prints the folder)")]
    NoLibrary {
        /// The file names looked for, in order.
        tried: Vec<String>,
    },
    /// The NCCL library loaded is older than the collectives need.
    #[error("NCCL {found} is loaded, but the collectives need NCCL {required} or newer (ncclAvg and bf16)")]
    UnsupportedVersion {
        /// The version found, as `major.minor.patch`.
        found: String,
        /// The oldest version supported.
        required: &'static str,
    },
    /// An NCCL call failed.
    #[error("NCCL call {call} failed: {message}")]
    Call {
        /// The NCCL call.
        call: &'static str,
        /// NCCL's error name and string, and its last error message when it has one.
        message: String,
    },
    /// An environment variable of the per-process start (`RANK`, `WORLD_SIZE`,
    /// `LOCAL_RANK`, the unique-id variables) is missing or invalid.
    #[error("environment variable {var}{}: {reason}", shown_value(.value))]
    BadEnv {
        /// The variable.
        var: &'static str,
        /// Its value, if set.
        value: Option<String>,
        /// What is wrong, and what to set.
        reason: String,
    },
    /// Rank 0 did not write the unique-id file in time.
    #[error("waited {waited_ms} ms for rank 0 to write the NCCL unique id to {path}; start rank 0, give every rank the same path, or raise TYPESTATE_TENSOR_NCCL_ID_TIMEOUT_S")]
    IdTimeout {
        /// The file waited for.
        path: String,
        /// How long it was polled.
        waited_ms: u64,
    },
    /// Writing or reading the unique-id file failed.
    #[error("{op} {path}: {message}")]
    IdFile {
        /// What was done (`"writing the NCCL unique id to"`, ...).
        op: &'static str,
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// The unique-id file (or the private folder it is written in) is not private to this
    /// user: owned by another user, open to group or others, or not a regular file. Its id
    /// would let that user join the communicator, or be one they planted; nothing was read.
    #[error("refusing the NCCL unique id file {path}: {reason}; rank 0 writes it mode 0600 as this user, so remove it and give every rank a fresh path")]
    UntrustedIdFile {
        /// The file (or folder).
        path: String,
        /// What the check found.
        reason: String,
    },
    /// A unique id given as text is not 256 hexadecimal digits.
    #[error("{source_name}: not an NCCL unique id ({reason}); it must be 256 hexadecimal digits, as `UniqueId::to_hex` writes")]
    BadId {
        /// Where the text came from (a variable or a file).
        source_name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A rank number is not below the world size.
    #[error("{op}: rank {rank} is out of range for a world of {world_size}")]
    RankOutOfRange {
        /// The operation.
        op: &'static str,
        /// The rank given.
        rank: usize,
        /// The number of ranks.
        world_size: usize,
    },
    /// Two ranks of one communicator in one process would share its unique id; the ranks of
    /// one process go in one [`LocalGroup`](crate::collective::LocalGroup), whose calls
    /// check every rank's buffers together.
    #[error("{op}: this process already holds a rank of the communicator with this unique id; drive several local GPUs with one `LocalGroup` instead")]
    RankAlreadyInProcess {
        /// The operation.
        op: &'static str,
    },
    /// A [`LocalGroup`](crate::collective::LocalGroup) was given no GPU, or one GPU twice.
    #[error("{op}: {reason}")]
    BadDevices {
        /// The operation.
        op: &'static str,
        /// What is wrong with the list.
        reason: String,
    },
    /// A group call got another number of buffers than the group has ranks.
    #[error("{op}: {got} buffers given for a group of {world_size} ranks; give one per rank, in rank order")]
    WrongBufferCount {
        /// The operation.
        op: &'static str,
        /// Buffers given.
        got: usize,
        /// Ranks in the group.
        world_size: usize,
    },
    /// A tensor given to a collective is not contiguous: NCCL reads and writes one dense
    /// range of memory.
    #[error("{op}: the tensor (shape {shape:?}, strides {strides:?}) is not contiguous; collectives read and write one dense range: call `contiguous()` first (or `copy_from` into a contiguous tensor)")]
    NotContiguous {
        /// The operation.
        op: &'static str,
        /// Shape.
        shape: Vec<usize>,
        /// Strides.
        strides: Vec<isize>,
    },
    /// The buffers' element counts do not fit the collective: equal counts for all-reduce
    /// and broadcast, `world_size` times more in the gathered (all-gather) or scattered
    /// (reduce-scatter) buffer, the same count on every rank of a group.
    #[error("{op}: {what}: expected {expected} elements, got {got}")]
    CountMismatch {
        /// The operation.
        op: &'static str,
        /// Which buffer, and the rule it breaks.
        what: String,
        /// The count required.
        expected: usize,
        /// The count given.
        got: usize,
    },
}

/// `={value:?}` for a variable that is set, ` is not set` otherwise (for [`NcclError::BadEnv`]).
fn shown_value(value: &Option<String>) -> String {
    match value {
        Some(v) => format!("={v:?}"),
        None => " is not set".to_owned(),
    }
}

/// A consuming call that failed (a transition that ran out of memory, hit a driver error or
/// a state mismatch; a constructor given parts that do not fit) hands its input back
/// unchanged in `value`, so nothing is lost: retry, free memory, or fall back.
///
/// `?` converts it into the crate's [`Error`] (dropping the value) for callers that do not
/// want it back. [`crate::synced::TransitionError`] is this type under the name the
/// type-state API uses.
pub struct Handback<M> {
    /// The value the call consumed, in its state before the call.
    pub value: M,
    /// Why it failed.
    pub error: Error,
}

impl<M> Handback<M> {
    /// Pairs a value with the error that stopped the call.
    pub fn new(value: M, error: impl Into<Error>) -> Self {
        Handback {
            value,
            error: error.into(),
        }
    }

    /// The value, unchanged.
    pub fn into_inner(self) -> M {
        self.value
    }

    /// Why the call failed.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The value and the error.
    pub fn into_parts(self) -> (M, Error) {
        (self.value, self.error)
    }

    /// Applies `f` to the value, keeping the error (e.g. to rewrap a blob's memory).
    pub fn map<N>(self, f: impl FnOnce(M) -> N) -> Handback<N> {
        Handback {
            value: f(self.value),
            error: self.error,
        }
    }
}

impl<M> std::fmt::Debug for Handback<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handback")
            .field("value", &std::any::type_name::<M>())
            .field("error", &self.error)
            .finish()
    }
}

impl<M> std::fmt::Display for Handback<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (the value is handed back unchanged)", self.error)
    }
}

impl<M> std::error::Error for Handback<M> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<M> From<Handback<M>> for Error {
    fn from(e: Handback<M>) -> Self {
        e.error
    }
}
