//! [`PoolRounding`] and [`PooledConfig`]: MXNet's GPU memory pool settings.

use crate::error::AllocError;
use crate::storage::arith::round_up;
use crate::storage::conf::{
    self, bad_value, expect_word, parse_pairs, parse_usize, unusable_key, MAX_SETTING_BYTES,
};

/// How a [`PooledAllocator`](super::PooledAllocator) rounds requests; each rounded size is
/// one bucket of cached regions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolRounding {
    /// MXNet's `Naive` pool type (`GPUPooledStorageManager`): round up to a multiple of
    /// `page_size` (`MXNET_GPU_MEM_POOL_PAGE_SIZE`, default 4096), and sizes above
    /// `large_alloc_round_size` (`MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE`, default 2 MiB) up
    /// to a multiple of that, so large regions fill whole driver slabs.
    Page {
        /// Rounding unit, at least 32 bytes and below 2^63.
        page_size: usize,
        /// Rounding unit above this size, more than 0 and below 2^63.
        large_alloc_round_size: usize,
    },
    /// MXNet's `Round` pool type (`GPUPooledRoundedStorageManager`): round up to a power
    /// of two of at least `page_size`, until `2^linear_cutoff`
    /// (`MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF`, default 24, i.e. 16 MiB); larger sizes
    /// round up to a multiple of `2^linear_cutoff`.
    Power2 {
        /// Smallest bucket: a power of two, at least 32 bytes.
        page_size: usize,
        /// log2 of where power-of-two buckets give way to linear steps, in 20..=34 and at
        /// least log2(`page_size`).
        linear_cutoff: u32,
    },
}

/// MXNet's bound on `MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF` (`LOG2_MAX_MEM`).
const MAX_LINEAR_CUTOFF: u32 = 34;
/// MXNet's lower bound on page sizes (`NDEV`).
const MIN_PAGE_SIZE: usize = 32;

impl PoolRounding {
    /// MXNet's default `Naive` pool: 4 KiB pages, 2 MiB above 2 MiB.
    pub const MXNET_PAGE: Self = Self::Page {
        page_size: 4096,
        large_alloc_round_size: 2 << 20,
    };

    /// MXNet's default `Round` pool: powers of two from 4 KiB up to 16 MiB, then multiples
    /// of 16 MiB.
    pub const MXNET_ROUND: Self = Self::Power2 {
        page_size: 4096,
        linear_cutoff: 24,
    };

    /// The bucket size for a request of `bytes` (> 0) bytes.
    ///
    /// The fields of a `PoolRounding` are public, so the value may break the bounds above
    /// (a zero page size, a cutoff past 34): such a rounding is an
    /// [`AllocError::InvalidConfigValue`] naming the field, never a panic or a division by
    /// zero. (A [`PooledConfig`] holds only checked roundings.)
    pub fn round(&self, bytes: usize) -> Result<usize, AllocError> {
        self.validate(|| format!("{self:?}"))?;
        self.round_valid(bytes)
    }

    /// [`round`](Self::round) for a rounding known to satisfy the bounds (the one a
    /// [`PooledConfig`] holds): no check on the allocation path.
    pub(crate) fn round_valid(&self, bytes: usize) -> Result<usize, AllocError> {
        let overflow = AllocError::SizeOverflow { requested: bytes };
        match *self {
            Self::Page {
                page_size,
                large_alloc_round_size,
            } => {
                let size = round_up(bytes, page_size).ok_or(overflow.clone())?;
                if size > large_alloc_round_size {
                    round_up(size, large_alloc_round_size).ok_or(overflow)
                } else {
                    Ok(size)
                }
            }
            Self::Power2 {
                page_size,
                linear_cutoff,
            } => {
                // ceil(log2(bytes)): MXNet's `ilog2ul(bytes - 1)`.
                let log2 = if bytes <= 1 {
                    0
                } else {
                    (bytes - 1).ilog2() + 1
                };
                if log2 > linear_cutoff {
                    round_up(bytes, 1 << linear_cutoff).ok_or(overflow)
                } else {
                    Ok(1 << log2.max(page_size.ilog2()))
                }
            }
        }
    }

    /// Checks MXNet's bounds on the settings (and that no rounding unit reaches 2^63),
    /// reporting a breach against the configuration text `input` gives (built only then).
    fn validate(&self, input: impl Fn() -> String) -> Result<(), AllocError> {
        let err = |key: &str, value: &dyn std::fmt::Display, reason: String| {
            Err(bad_value(&input(), key, value, reason))
        };
        match *self {
            Self::Page {
                page_size,
                large_alloc_round_size,
            } => {
                if !(MIN_PAGE_SIZE..=MAX_SETTING_BYTES).contains(&page_size) {
                    return err(
                        "page_size",
                        &page_size,
                        format!("must be at least {MIN_PAGE_SIZE} and below 2^63"),
                    );
                }
                if !(1..=MAX_SETTING_BYTES).contains(&large_alloc_round_size) {
                    return err(
                        "large_alloc_round_size",
                        &large_alloc_round_size,
                        "must be more than 0 and below 2^63".to_owned(),
                    );
                }
            }
            Self::Power2 {
                page_size,
                linear_cutoff,
            } => {
                if page_size < MIN_PAGE_SIZE || !page_size.is_power_of_two() {
                    return err(
                        "page_size",
                        &page_size,
                        format!("must be a power of two of at least {MIN_PAGE_SIZE}"),
                    );
                }
                if !(20..=MAX_LINEAR_CUTOFF).contains(&linear_cutoff) {
                    return err(
                        "round_linear_cutoff",
                        &linear_cutoff,
                        format!("must be in 20..={MAX_LINEAR_CUTOFF}"),
                    );
                }
                if linear_cutoff < page_size.ilog2() {
                    return err(
                        "round_linear_cutoff",
                        &linear_cutoff,
                        format!("is below log2 of page_size {page_size}"),
                    );
                }
            }
        }
        Ok(())
    }
}

/// Settings of a [`PooledAllocator`](super::PooledAllocator).
///
/// Read from [`ENV_VAR`](Self::ENV_VAR) (`TYPESTATE_TENSOR_POOL_CONF`) in the same
/// `key:value,key:value` form as the caching allocator's settings, with MXNet's variables
/// as keys:
///
/// | key | MXNet variable | default |
/// | --- | --- | --- |
/// | `type` (`page` or `round`) | `MXNET_GPU_MEM_POOL_TYPE` (`Naive` or `Round`) | `page` |
/// | `page_size` | `MXNET_GPU_MEM_POOL_PAGE_SIZE` | 4096 |
/// | `large_alloc_round_size` (type `page`) | `MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE` | 2097152 |
/// | `round_linear_cutoff` (type `round`) | `MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF` | 24 |
/// | `reserve` (percent, 0..=100) | `MXNET_GPU_MEM_POOL_RESERVE` | 5 |
///
/// Broken syntax is an [`AllocError::InvalidConfig`]; unknown keys, keys of the other pool
/// type and keys given twice are [`AllocError::UnusableConfigKey`]; bad values are
/// [`AllocError::InvalidConfigValue`], naming the key and the value. [`PooledConfig::new`]
/// checks the same rules.
///
/// Invariant: the rounding satisfies MXNet's bounds (see [`PoolRounding`]) and the reserve
/// is at most 100.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PooledConfig {
    rounding: PoolRounding,
    reserve_percent: usize,
}

impl Default for PooledConfig {
    fn default() -> Self {
        Self {
            rounding: PoolRounding::MXNET_PAGE,
            reserve_percent: 5,
        }
    }
}

impl PooledConfig {
    /// The environment variable [`from_env`](Self::from_env) reads.
    pub const ENV_VAR: &'static str = "TYPESTATE_TENSOR_POOL_CONF";

    /// Settings with `rounding` and a reserve of `reserve_percent` percent of the source's
    /// total memory.
    pub fn new(rounding: PoolRounding, reserve_percent: usize) -> Result<Self, AllocError> {
        let describe = format!("{rounding:?}, reserve {reserve_percent}%");
        rounding.validate(|| describe.clone())?;
        check_reserve(&describe, reserve_percent)?;
        Ok(Self {
            rounding,
            reserve_percent,
        })
    }

    /// The settings in [`ENV_VAR`](Self::ENV_VAR), or the defaults if it is unset.
    pub fn from_env() -> Result<Self, AllocError> {
        conf::from_env(Self::ENV_VAR, Self::parse)
    }

    /// Parses `key:value,key:value` text (see the type's documentation for the keys).
    pub fn parse(input: &str) -> Result<Self, AllocError> {
        let mut round = false;
        let mut page_size = 4096;
        let mut large_alloc_round_size = None;
        let mut linear_cutoff = None;
        let mut reserve = 5;
        for (key, value) in parse_pairs(input)? {
            let word = expect_word(input, &key, &value)?;
            match key.as_str() {
                "type" => {
                    round = match word {
                        "page" => false,
                        "round" => true,
                        other => {
                            return Err(bad_value(input, &key, other, "must be page or round"))
                        }
                    }
                }
                "page_size" => page_size = parse_usize(input, &key, word)?,
                "large_alloc_round_size" => {
                    large_alloc_round_size = Some(parse_usize(input, &key, word)?)
                }
                "round_linear_cutoff" => {
                    let cutoff = parse_usize(input, &key, word)?;
                    linear_cutoff = Some(u32::try_from(cutoff).map_err(|_| {
                        bad_value(
                            input,
                            &key,
                            cutoff,
                            format!("must be in 20..={MAX_LINEAR_CUTOFF}"),
                        )
                    })?);
                }
                "reserve" => reserve = parse_usize(input, &key, word)?,
                _ => return Err(unusable_key(input, &key, not_a_pooled_key(&key))),
            }
        }
        let rounding = if round {
            if large_alloc_round_size.is_some() {
                return Err(unusable_key(
                    input,
                    "large_alloc_round_size",
                    "applies only to type:page",
                ));
            }
            PoolRounding::Power2 {
                page_size,
                linear_cutoff: linear_cutoff.unwrap_or(24),
            }
        } else {
            if linear_cutoff.is_some() {
                return Err(unusable_key(
                    input,
                    "round_linear_cutoff",
                    "applies only to type:round",
                ));
            }
            PoolRounding::Page {
                page_size,
                large_alloc_round_size: large_alloc_round_size.unwrap_or(2 << 20),
            }
        };
        rounding.validate(|| input.to_owned())?;
        check_reserve(input, reserve)?;
        Ok(Self {
            rounding,
            reserve_percent: reserve,
        })
    }

    /// The rounding strategy.
    pub fn rounding(&self) -> PoolRounding {
        self.rounding
    }

    /// Percent of the source's total memory never handed out.
    pub fn reserve_percent(&self) -> usize {
        self.reserve_percent
    }
}

/// Checks a reserve percentage against configuration text `input`.
fn check_reserve(input: &str, percent: usize) -> Result<(), AllocError> {
    if percent > 100 {
        return Err(bad_value(
            input,
            "reserve",
            percent,
            "must be a percentage in 0..=100",
        ));
    }
    Ok(())
}

/// Why `key` is not a key of the pooled allocator, for [`AllocError::UnusableConfigKey`].
fn not_a_pooled_key(key: &str) -> &'static str {
    match key {
        "max_split_size_mb"
        | "max_non_split_rounding_mb"
        | "roundup_power2_divisions"
        | "garbage_collection_threshold"
        | "expandable_segments"
        | "backend" => {
            "is a setting of the caching allocator (TYPESTATE_TENSOR_ALLOC_CONF), not of the \
             pooled allocator"
        }
        _ => {
            "is not a setting of the pooled allocator (known: type, page_size, \
             large_alloc_round_size, round_linear_cutoff, reserve)"
        }
    }
}

impl std::str::FromStr for PooledConfig {
    type Err = AllocError;

    /// [`PooledConfig::parse`], so that `"key:value".parse::<PooledConfig>()` works.
    fn from_str(input: &str) -> Result<Self, AllocError> {
        Self::parse(input)
    }
}
