//! [`NcclError`]: the errors of the NCCL library, communicators and collectives (the
//! collective layer), which `?` turns into [`Error::Nccl`](super::Error::Nccl).

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
