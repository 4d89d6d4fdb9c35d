//! [`CachingConfig`]: the caching allocator's settings, from PyTorch's
//! `PYTORCH_CUDA_ALLOC_CONF` syntax or built in code.

use super::sizes::{LARGE_BUFFER, ROUNDUP_INTERVALS};
use crate::error::AllocError;
use crate::storage::conf::{
    self, bad_value, expect_word, parse_f64, parse_pairs, parse_usize, unusable_key, ConfValue,
    MAX_SETTING_BYTES,
};
use crate::storage::history::HistorySettings;

const MIB: usize = 1 << 20;

/// Settings of a [`CachingAllocator`](super::CachingAllocator).
///
/// Read from the environment variable [`ENV_VAR`](Self::ENV_VAR)
/// (`TYPESTATE_TENSOR_ALLOC_CONF`) in PyTorch's `key:value,key:value` form, e.g.
/// `max_split_size_mb:256,roundup_power2_divisions:4,garbage_collection_threshold:0.8`.
/// Keys (PyTorch's names and rules):
///
/// - `max_split_size_mb` (>= 20, under 2^63 bytes): blocks this large or larger are never split, and serve
///   only requests at least this large that leave less than `max_non_split_rounding_mb`
///   unused. Default: unlimited (every block may be split).
/// - `max_non_split_rounding_mb` (>= 20): that slack. Default 20 (`kLargeBuffer`).
/// - `roundup_power2_divisions`: round requests above `512 * d` bytes up to one of `d` equal
///   steps between powers of two, reducing fragmentation from near-miss sizes. Either one
///   power of two for all sizes (`4`), or per size interval:
///   `[256:1,512:2,1024:4,>:8]` means requests below 256 MiB use 1 division, 256 MiB up to
///   512 MiB use 2, 512 MiB up to 1 GiB use 4, and larger ones 8. List keys are increasing
///   powers of two in MiB, values 0 (off) or powers of two. (This is PyTorch's documented
///   meaning; its parser assigns each list value to the interval starting at its key and
///   lets `>` overwrite the last key's interval.) Default: off.
/// - `garbage_collection_threshold` (strictly between 0 and 1): when the allocator holds
///   more than this fraction of the allowed memory (the source's total times
///   [`memory_fraction`](Self::memory_fraction)), it returns its least recently reused
///   cached segments before asking the source for more, instead of waiting for an
///   out-of-memory. PyTorch only collects when a memory fraction is set; here the whole
///   source counts when none is. Needs a source that reports
///   [`mem_info`](crate::storage::source::MemorySource::mem_info). Default: off.
/// - `record_history` (this crate's key): record the last this many allocator events
///   ([`crate::storage::history`]); 0 (the default) is off.
/// - `record_backtraces` (this crate's key): `True` captures the call stack of each recorded
///   event (slow); needs `record_history`. Default `False`.
/// - `expandable_segments`: only `False` is accepted (expandable segments are not built).
/// - `backend`: only `native` is accepted (this allocator).
///
/// Broken syntax is an [`AllocError::InvalidConfig`]; any other key, or a key given twice,
/// an [`AllocError::UnusableConfigKey`]; a value out of range (sizes too small, or of
/// 2^63 bytes or more) an [`AllocError::InvalidConfigValue`] naming the key and the value.
/// The setters check the same rules and return the same errors.
///
/// The per-process memory fraction (PyTorch's `set_per_process_memory_fraction`) is set in
/// code with [`with_memory_fraction`](Self::with_memory_fraction).
///
/// Invariants (kept by every constructor): `max_split_size` and `max_non_split_rounding`
/// are at least 20 MiB; every division count is 0 or a power of two; the threshold is in
/// (0, 1) and the fraction in (0, 1].
#[derive(Clone, Debug, PartialEq)]
pub struct CachingConfig {
    max_split_size: Option<usize>,
    max_non_split_rounding: usize,
    roundup_power2_divisions: [usize; ROUNDUP_INTERVALS],
    garbage_collection_threshold: Option<f64>,
    memory_fraction: Option<f64>,
    history: Option<HistorySettings>,
}

impl Default for CachingConfig {
    fn default() -> Self {
        Self {
            max_split_size: None,
            max_non_split_rounding: LARGE_BUFFER,
            roundup_power2_divisions: [0; ROUNDUP_INTERVALS],
            garbage_collection_threshold: None,
            memory_fraction: None,
            history: None,
        }
    }
}

impl CachingConfig {
    /// The environment variable [`from_env`](Self::from_env) reads.
    pub const ENV_VAR: &'static str = "TYPESTATE_TENSOR_ALLOC_CONF";

    /// The settings in [`ENV_VAR`](Self::ENV_VAR), or the defaults if it is unset or empty.
    pub fn from_env() -> Result<Self, AllocError> {
        conf::from_env(Self::ENV_VAR, Self::parse)
    }

    /// Parses `key:value,key:value` text (see the type's documentation for the keys).
    pub fn parse(input: &str) -> Result<Self, AllocError> {
        let mut config = Self::default();
        let mut history_entries = 0;
        let mut backtraces = false;
        for (key, value) in parse_pairs(input)? {
            match key.as_str() {
                "record_history" => {
                    history_entries = parse_usize(input, &key, expect_word(input, &key, &value)?)?;
                }
                "record_backtraces" => match expect_word(input, &key, &value)? {
                    "True" => backtraces = true,
                    "False" => backtraces = false,
                    other => return Err(bad_value(input, &key, other, "takes True or False")),
                },
                "max_split_size_mb" => {
                    let mb = parse_usize(input, &key, expect_word(input, &key, &value)?)?;
                    config.max_split_size = Some(mib_at_least_20(input, &key, mb)?);
                }
                "max_non_split_rounding_mb" => {
                    let mb = parse_usize(input, &key, expect_word(input, &key, &value)?)?;
                    config.max_non_split_rounding = mib_at_least_20(input, &key, mb)?;
                }
                "roundup_power2_divisions" => {
                    config.roundup_power2_divisions = parse_divisions(input, &value)?;
                }
                "garbage_collection_threshold" => {
                    let word = expect_word(input, &key, &value)?;
                    let t = parse_f64(input, &key, word)?;
                    config.garbage_collection_threshold = Some(check_threshold(input, word, t)?);
                }
                "expandable_segments" => match expect_word(input, &key, &value)? {
                    "False" => {}
                    "True" => {
                        return Err(bad_value(
                            input,
                            &key,
                            "True",
                            "expandable segments are not supported; only False is accepted",
                        ))
                    }
                    other => return Err(bad_value(input, &key, other, "takes True or False")),
                },
                "backend" => match expect_word(input, &key, &value)? {
                    "native" => {}
                    other => {
                        return Err(bad_value(
                            input,
                            &key,
                            other,
                            "is not this allocator; only native is accepted",
                        ))
                    }
                },
                _ => return Err(unusable_key(input, &key, not_a_caching_key(&key))),
            }
        }
        if history_entries > 0 {
            config.history =
                Some(HistorySettings::new(history_entries).with_backtraces(backtraces));
        } else if backtraces {
            return Err(bad_value(
                input,
                "record_backtraces",
                "True",
                "needs record_history:<max entries> (more than 0) to record anything",
            ));
        }
        Ok(config)
    }

    /// Sets `max_split_size_mb` (at least 20, and less than 2^63 bytes).
    pub fn with_max_split_size_mb(mut self, mb: usize) -> Result<Self, AllocError> {
        let input = format!("max_split_size_mb:{mb}");
        self.max_split_size = Some(mib_at_least_20(&input, "max_split_size_mb", mb)?);
        Ok(self)
    }

    /// Sets `max_non_split_rounding_mb` (at least 20, and less than 2^63 bytes).
    pub fn with_max_non_split_rounding_mb(mut self, mb: usize) -> Result<Self, AllocError> {
        let input = format!("max_non_split_rounding_mb:{mb}");
        self.max_non_split_rounding = mib_at_least_20(&input, "max_non_split_rounding_mb", mb)?;
        Ok(self)
    }

    /// Uses `divisions` (a power of two) for every size.
    pub fn with_roundup_power2_divisions(mut self, divisions: usize) -> Result<Self, AllocError> {
        let input = format!("roundup_power2_divisions:{divisions}");
        self.roundup_power2_divisions =
            parse_divisions(&input, &ConfValue::Word(divisions.to_string()))?;
        Ok(self)
    }

    /// Sets the division count per size interval: entry `i` applies to requests in
    /// `[2^i, 2^(i+1))` MiB (entry 0 also to smaller ones, entry 15 to larger ones). Each
    /// entry is 0 (off) or a power of two.
    pub fn with_roundup_power2_divisions_per_interval(
        mut self,
        table: [usize; ROUNDUP_INTERVALS],
    ) -> Result<Self, AllocError> {
        if let Some(bad) = table.iter().find(|&&d| d != 0 && !d.is_power_of_two()) {
            return Err(bad_value(
                &format!("roundup_power2_divisions:{table:?}"),
                "roundup_power2_divisions",
                bad,
                "a division count must be 0 (off) or a power of two",
            ));
        }
        self.roundup_power2_divisions = table;
        Ok(self)
    }

    /// Sets `garbage_collection_threshold` (strictly between 0 and 1).
    pub fn with_garbage_collection_threshold(mut self, threshold: f64) -> Result<Self, AllocError> {
        let word = threshold.to_string();
        let input = format!("garbage_collection_threshold:{word}");
        self.garbage_collection_threshold = Some(check_threshold(&input, &word, threshold)?);
        Ok(self)
    }

    /// Limits the allocator to this fraction (in (0, 1]) of the source's total memory
    /// (PyTorch's `set_per_process_memory_fraction`); requests beyond it fail as out of
    /// memory. Needs a source that reports `mem_info`; ignored otherwise.
    pub fn with_memory_fraction(mut self, fraction: f64) -> Result<Self, AllocError> {
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(bad_value(
                &format!("memory_fraction:{fraction}"),
                "memory_fraction",
                fraction,
                "must be in (0, 1]",
            ));
        }
        self.memory_fraction = Some(fraction);
        Ok(self)
    }

    /// Records allocator events from the start with `settings` (see
    /// [`crate::storage::history`]), or not with `None`.
    pub fn with_history(mut self, settings: Option<HistorySettings>) -> Self {
        self.history = settings;
        self
    }

    /// The recording settings the allocator starts with, if any.
    pub fn history(&self) -> Option<HistorySettings> {
        self.history
    }

    /// Bytes from which blocks are never split; `None` means unlimited.
    pub fn max_split_size(&self) -> Option<usize> {
        self.max_split_size
    }

    /// Largest slack an unsplittable block may have over a request it serves.
    pub fn max_non_split_rounding(&self) -> usize {
        self.max_non_split_rounding
    }

    /// Division counts per size interval (0 means off).
    pub fn roundup_power2_divisions(&self) -> &[usize; ROUNDUP_INTERVALS] {
        &self.roundup_power2_divisions
    }

    /// The garbage collection threshold, if set.
    pub fn garbage_collection_threshold(&self) -> Option<f64> {
        self.garbage_collection_threshold
    }

    /// The memory fraction, if set.
    pub fn memory_fraction(&self) -> Option<f64> {
        self.memory_fraction
    }
}

/// Why `key` is not a key of this allocator, for [`AllocError::UnusableConfigKey`].
fn not_a_caching_key(key: &str) -> String {
    match key {
        "type" | "page_size" | "large_alloc_round_size" | "round_linear_cutoff" | "reserve" => {
            "is a setting of the pooled allocator (TYPESTATE_TENSOR_POOL_CONF), not of the \
             caching allocator"
                .to_owned()
        }
        "pinned_use_cuda_host_register"
        | "pinned_num_register_threads"
        | "pinned_use_background_threads"
        | "release_lock_on_cudamalloc"
        | "per_process_memory_fraction"
        | "graph_capture_record_stream_reuse" => {
            "is a PyTorch setting this allocator does not implement".to_owned()
        }
        _ => "is not a setting of the caching allocator (known: max_split_size_mb, \
              max_non_split_rounding_mb, roundup_power2_divisions, \
              garbage_collection_threshold, record_history, record_backtraces, \
              expandable_segments, backend)"
            .to_owned(),
    }
}

/// `mb` MiB in bytes, checked to be at least 20 MiB and below 2^63 bytes.
fn mib_at_least_20(input: &str, key: &str, mb: usize) -> Result<usize, AllocError> {
    let min = LARGE_BUFFER / MIB;
    if mb < min {
        return Err(bad_value(input, key, mb, format!("must be at least {min}")));
    }
    mb.checked_mul(MIB)
        .filter(|&bytes| bytes <= MAX_SETTING_BYTES)
        .ok_or_else(|| {
            bad_value(
                input,
                key,
                mb,
                format!(
                    "must be at most {} (2^63 bytes and more exceed any allocation)",
                    MAX_SETTING_BYTES / MIB
                ),
            )
        })
}

/// `t` (written `word`) if it is strictly between 0 and 1.
fn check_threshold(input: &str, word: &str, t: f64) -> Result<f64, AllocError> {
    if t > 0.0 && t < 1.0 {
        Ok(t)
    } else {
        Err(bad_value(
            input,
            "garbage_collection_threshold",
            word,
            "must be strictly between 0 and 1",
        ))
    }
}

fn parse_divisions(
    input: &str,
    value: &ConfValue,
) -> Result<[usize; ROUNDUP_INTERVALS], AllocError> {
    let key = "roundup_power2_divisions";
    let count = |text: &str, zero_ok: bool| -> Result<usize, AllocError> {
        let d = parse_usize(input, key, text)?;
        if d.is_power_of_two() || (zero_ok && d == 0) {
            Ok(d)
        } else if zero_ok {
            Err(bad_value(
                input,
                key,
                d,
                "a division count must be 0 (off) or a power of two",
            ))
        } else {
            Err(bad_value(
                input,
                key,
                d,
                "a division count must be a power of two",
            ))
        }
    };
    match value {
        ConfValue::Word(w) => Ok([count(w, false)?; ROUNDUP_INTERVALS]),
        ConfValue::List(entries) => {
            let mut table = [0; ROUNDUP_INTERVALS];
            // Intervals below `start` are already assigned.
            let mut start = 0;
            let mut saw_rest = false;
            let mut last_bound = 0;
            for (bound, d) in entries {
                let entry = format!("{bound}:{d}");
                if saw_rest {
                    return Err(bad_value(
                        input,
                        key,
                        entry,
                        "comes after '>', which must be the last entry",
                    ));
                }
                let d = count(d, true)?;
                if bound == ">" {
                    if start == ROUNDUP_INTERVALS {
                        return Err(bad_value(
                            input,
                            key,
                            entry,
                            "applies to no size: the earlier entries cover every interval",
                        ));
                    }
                    table[start..].fill(d);
                    saw_rest = true;
                    continue;
                }
                let mb = parse_usize(input, key, bound)?;
                if !mb.is_power_of_two() {
                    return Err(bad_value(
                        input,
                        key,
                        entry,
                        format!("the interval bound {mb} MiB must be a power of two"),
                    ));
                }
                if mb <= last_bound {
                    return Err(bad_value(
                        input,
                        key,
                        entry,
                        "interval bounds must increase",
                    ));
                }
                last_bound = mb;
                // Requests below `mb` MiB: intervals whose lower end 2^i MiB is below it
                // (ilog2 of a usize is below 64, so the conversion is exact).
                let end = (mb.ilog2() as usize).min(ROUNDUP_INTERVALS);
                if end == start {
                    return Err(bad_value(
                        input,
                        key,
                        entry,
                        format!(
                            "applies to no size: intervals run from 1 MiB to {} MiB, each \
                             bound ending the one below it",
                            1usize << ROUNDUP_INTERVALS
                        ),
                    ));
                }
                table[start..end].fill(d);
                start = end;
            }
            Ok(table)
        }
    }
}

impl std::str::FromStr for CachingConfig {
    type Err = AllocError;

    /// [`CachingConfig::parse`], so that `"key:value".parse::<CachingConfig>()` works.
    fn from_str(input: &str) -> Result<Self, AllocError> {
        Self::parse(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_form_follows_the_documented_meaning() {
        let c = CachingConfig::parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]").unwrap();
        let mut want = [1; ROUNDUP_INTERVALS];
        want[8] = 2; // [256, 512) MiB
        want[9] = 4; // [512, 1024) MiB
        want[10..].fill(8);
        assert_eq!(c.roundup_power2_divisions(), &want);
    }

    #[test]
    fn list_bounds_must_increase_and_rest_must_be_last() {
        assert!(CachingConfig::parse("roundup_power2_divisions:[512:1,256:2]").is_err());
        assert!(CachingConfig::parse("roundup_power2_divisions:[>:1,256:2]").is_err());
        assert!(CachingConfig::parse("roundup_power2_divisions:[3:1]").is_err());
        assert!(CachingConfig::parse("roundup_power2_divisions:[4:3]").is_err());
    }
}
