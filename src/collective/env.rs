//! [`RankEnv`]: the per-process start's rank, world size and local rank as `torchrun` sets
//! them, and where the NCCL unique id comes from.

use std::path::PathBuf;
use std::time::Duration;

use super::id::UniqueId;
use crate::error::NcclError;
use crate::fs_trust::{self, PrivateError};

/// The unique id as 256 hexadecimal digits ([`UniqueId::to_hex`]), the same on every rank.
pub const ID_VAR: &str = "TYPESTATE_TENSOR_NCCL_ID";
/// A path every rank can read: rank 0 makes the id and writes it there (atomically), the
/// others poll it. Use a fresh path for every run: a file left by an earlier run would be
/// read by ranks that start before rank 0 has replaced it.
pub const ID_FILE_VAR: &str = "TYPESTATE_TENSOR_NCCL_ID_FILE";
/// Seconds the ranks other than 0 wait for the id file (default 120).
pub const ID_TIMEOUT_VAR: &str = "TYPESTATE_TENSOR_NCCL_ID_TIMEOUT_S";

/// How long ranks wait for the id file when [`ID_TIMEOUT_VAR`] is not set.
pub const DEFAULT_ID_TIMEOUT: Duration = Duration::from_secs(120);

/// Where this process stands in a per-process world, from the variables `torchrun` sets:
/// `RANK`, `WORLD_SIZE` and `LOCAL_RANK` (the GPU ordinal on this host; `RANK` when not
/// set, as on a single host).
///
/// ```
/// use typestate_tensor::collective::RankEnv;
///
/// let vars = |name: &str| match name {
///     "RANK" => Some("1".to_owned()),
///     "WORLD_SIZE" => Some("2".to_owned()),
///     _ => None,
/// };
/// let env = RankEnv::from_vars(vars)?;
/// assert_eq!((env.rank, env.world_size, env.local_rank), (1, 2, 1));
/// let bad = |_: &str| Some("2".to_owned());
/// assert!(RankEnv::from_vars(bad).is_err()); // rank 2 of 2
/// # Ok::<(), typestate_tensor::error::NcclError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankEnv {
    /// This process's rank, below `world_size`.
    pub rank: usize,
    /// The number of ranks (processes) in the world.
    pub world_size: usize,
    /// The GPU this process drives, by ordinal on its host.
    pub local_rank: usize,
}

fn parse(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<Option<usize>, NcclError> {
    let Some(value) = get(var) else {
        return Ok(None);
    };
    value
        .trim()
        .parse::<usize>()
        .map(Some)
        .map_err(|e| NcclError::BadEnv {
            var,
            value: Some(value.clone()),
            reason: format!("not a non-negative integer ({e})"),
        })
}

fn required(get: &impl Fn(&str) -> Option<String>, var: &'static str) -> Result<usize, NcclError> {
    parse(get, var)?.ok_or_else(|| NcclError::BadEnv {
        var,
        value: None,
        reason: "the per-process start needs RANK and WORLD_SIZE (as torchrun sets them)"
            .to_owned(),
    })
}

impl RankEnv {
    /// Reads `RANK`, `WORLD_SIZE` and `LOCAL_RANK` from the process environment.
    ///
    /// Errors: [`NcclError::BadEnv`] naming the variable that is missing, not a number,
    /// or out of range (`WORLD_SIZE` 0, `RANK` not below it).
    pub fn from_env() -> Result<RankEnv, NcclError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), with the variables looked up through `get` (for
    /// launchers and tests, which should not change their own environment).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<RankEnv, NcclError> {
        let rank = required(&get, "RANK")?;
        let world_size = required(&get, "WORLD_SIZE")?;
        if world_size == 0 {
            return Err(NcclError::BadEnv {
                var: "WORLD_SIZE",
                value: get("WORLD_SIZE"),
                reason: "a world needs at least one rank".to_owned(),
            });
        }
        if rank >= world_size {
            return Err(NcclError::BadEnv {
                var: "RANK",
                value: get("RANK"),
                reason: format!("must be below WORLD_SIZE ({world_size})"),
            });
        }
        let local_rank = parse(&get, "LOCAL_RANK")?.unwrap_or(rank);
        Ok(RankEnv {
            rank,
            world_size,
            local_rank,
        })
    }

    /// The unique id for this world, from the process environment (see
    /// [`unique_id_from_vars`](Self::unique_id_from_vars)).
    pub fn unique_id(&self) -> Result<UniqueId, NcclError> {
        self.unique_id_from_vars(|name| std::env::var(name).ok())
    }

    /// The unique id for this world, in this order:
    /// 1. [`ID_VAR`] (hexadecimal), on every rank;
    /// 2. [`ID_FILE_VAR`] (a path): rank 0 makes the id ([`UniqueId::new`]) and writes it
    ///    atomically, the other ranks poll the file for up to [`ID_TIMEOUT_VAR`] seconds
    ///    ([`DEFAULT_ID_TIMEOUT`]), then [`NcclError::IdTimeout`];
    /// 3. on a single host under `torchrun --standalone` (`TORCHELASTIC_RUN_ID` and
    ///    `MASTER_PORT` set, neither variable above): a file named after both in a folder
    ///    of the temporary folder private to this user (`typestate-tensor-nccl-<euid>`,
    ///    mode `0700`, which rank 0 creates and checks), as in 2;
    /// 4. a world of one rank makes its own id;
    /// 5. otherwise [`NcclError::BadEnv`] naming [`ID_FILE_VAR`].
    pub fn unique_id_from_vars(
        &self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<UniqueId, NcclError> {
        if let Some(hex) = get(ID_VAR) {
            return UniqueId::parse(ID_VAR, &hex);
        }
        let mut private_dir = None;
        let file = match get(ID_FILE_VAR) {
            Some(path) if path.trim().is_empty() => {
                return Err(NcclError::BadEnv {
                    var: ID_FILE_VAR,
                    value: Some(path),
                    reason: "empty path".to_owned(),
                })
            }
            Some(path) => Some(PathBuf::from(path)),
            None => match (get("TORCHELASTIC_RUN_ID"), get("MASTER_PORT")) {
                (Some(run), Some(port)) => {
                    let safe = |s: &str| -> String {
                        s.chars()
                            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                            .collect()
                    };
                    // Not the shared temporary folder itself: there another user could
                    // create the name first.
                    let euid =
                        fs_trust::effective_uid().map_or("any".to_owned(), |u| u.to_string());
                    let dir = std::env::temp_dir().join(format!("typestate-tensor-nccl-{euid}"));
                    let path = dir.join(format!("{}-{}.id", safe(&run), safe(&port)));
                    private_dir = Some(dir);
                    Some(path)
                }
                _ => None,
            },
        };
        let Some(path) = file else {
            if self.world_size == 1 {
                return UniqueId::new();
            }
            return Err(NcclError::BadEnv {
                var: ID_FILE_VAR,
                value: None,
                reason: format!(
                    "a world of {} ranks needs the NCCL unique id: set {ID_FILE_VAR} to a fresh path every rank can read (rank 0 writes it), or {ID_VAR} to its 256 hexadecimal digits",
                    self.world_size
                ),
            });
        };
        if self.rank == 0 {
            if let Some(dir) = &private_dir {
                fs_trust::ensure_private_dir(dir).map_err(|e| match e {
                    PrivateError::Io(e) => NcclError::IdFile {
                        op: "creating the private folder of the NCCL unique id",
                        path: dir.display().to_string(),
                        message: e.to_string(),
                    },
                    PrivateError::NotPrivate(reason) => NcclError::UntrustedIdFile {
                        path: dir.display().to_string(),
                        reason: reason.to_string(),
                    },
                })?;
            }
            let id = UniqueId::new()?;
            id.write_file(&path)?;
            return Ok(id);
        }
        let timeout = match get(ID_TIMEOUT_VAR) {
            None => DEFAULT_ID_TIMEOUT,
            Some(text) => match text.trim().parse::<f64>().map(Duration::try_from_secs_f64) {
                Ok(Ok(timeout)) => timeout,
                _ => {
                    return Err(NcclError::BadEnv {
                        var: ID_TIMEOUT_VAR,
                        value: Some(text),
                        reason: "not a number of seconds".to_owned(),
                    })
                }
            },
        };
        UniqueId::wait_for_file(&path, timeout)
    }
}
