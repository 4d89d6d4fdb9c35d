//! Allocator configuration validation: every bad value, from text or from a builder, is a
//! typed error naming the key and the value; every entry the parser cannot use (an unknown
//! key, one of another allocator or pool type, one given twice) is an error, never a silent
//! drop; a rounding built by hand with out-of-range fields is refused, never a panic.

use typestate_tensor::error::AllocError;
use typestate_tensor::storage::{CachingConfig, PoolRounding, PooledConfig};

/// What a bad input must give.
#[derive(Debug)]
enum Want {
    /// `InvalidConfigValue` with this key and this value.
    Value(&'static str, &'static str),
    /// `UnusableConfigKey` with this key.
    Key(&'static str),
}

/// Checks `got` is the error `want` says, for configuration text `input`, and that its
/// message names the key (and the value).
fn check(input: &str, got: Result<impl std::fmt::Debug, AllocError>, want: &Want) {
    let err = match got {
        Err(e) => e,
        Ok(v) => panic!("{input:?} was accepted as {v:?}; wanted {want:?}"),
    };
    let message = err.to_string();
    match (want, &err) {
        (Want::Value(key, value), AllocError::InvalidConfigValue(e)) => {
            assert_eq!(
                (e.input.as_str(), e.key.as_str(), e.value.as_str()),
                (input, *key, *value)
            );
            assert!(!e.reason.is_empty());
            assert!(
                message.contains(key) && message.contains(value),
                "{message}"
            );
        }
        (
            Want::Key(key),
            AllocError::UnusableConfigKey {
                input: i,
                key: k,
                reason,
            },
        ) => {
            assert_eq!((i.as_str(), k.as_str()), (input, *key));
            assert!(!reason.is_empty());
            assert!(message.contains(key), "{message}");
        }
        _ => panic!("{input:?} gave {err:?}; wanted {want:?}"),
    }
}

#[test]
fn caching_config_text_names_the_key_and_the_value() {
    use Want::{Key, Value};
    let table: &[(&str, Want)] = &[
        // Sizes: below 20 MiB, not a number, or 2^63 bytes and more.
        ("max_split_size_mb:19", Value("max_split_size_mb", "19")),
        ("max_split_size_mb:0", Value("max_split_size_mb", "0")),
        ("max_split_size_mb:abc", Value("max_split_size_mb", "abc")),
        ("max_split_size_mb:-5", Value("max_split_size_mb", "-5")),
        (
            "max_split_size_mb:8796093022208",
            Value("max_split_size_mb", "8796093022208"),
        ),
        (
            "max_split_size_mb:18446744073709551615",
            Value("max_split_size_mb", "18446744073709551615"),
        ),
        (
            "max_split_size_mb:[1:2]",
            Value("max_split_size_mb", "[1:2]"),
        ),
        (
            "max_non_split_rounding_mb:10",
            Value("max_non_split_rounding_mb", "10"),
        ),
        (
            "max_non_split_rounding_mb:9000000000000",
            Value("max_non_split_rounding_mb", "9000000000000"),
        ),
        // Thresholds outside (0, 1).
        (
            "garbage_collection_threshold:1.0",
            Value("garbage_collection_threshold", "1.0"),
        ),
        (
            "garbage_collection_threshold:0",
            Value("garbage_collection_threshold", "0"),
        ),
        (
            "garbage_collection_threshold:-0.5",
            Value("garbage_collection_threshold", "-0.5"),
        ),
        (
            "garbage_collection_threshold:nan",
            Value("garbage_collection_threshold", "nan"),
        ),
        (
            "garbage_collection_threshold:inf",
            Value("garbage_collection_threshold", "inf"),
        ),
        // Division counts and interval tables.
        (
            "roundup_power2_divisions:3",
            Value("roundup_power2_divisions", "3"),
        ),
        (
            "roundup_power2_divisions:0",
            Value("roundup_power2_divisions", "0"),
        ),
        (
            "roundup_power2_divisions:[256:3]",
            Value("roundup_power2_divisions", "3"),
        ),
        (
            "roundup_power2_divisions:[300:2]",
            Value("roundup_power2_divisions", "300:2"),
        ),
        (
            "roundup_power2_divisions:[512:1,256:2]",
            Value("roundup_power2_divisions", "256:2"),
        ),
        (
            "roundup_power2_divisions:[>:1,256:2]",
            Value("roundup_power2_divisions", "256:2"),
        ),
        // Entries that would apply to no size: silently dropped before.
        (
            "roundup_power2_divisions:[1:4]",
            Value("roundup_power2_divisions", "1:4"),
        ),
        (
            "roundup_power2_divisions:[65536:2,131072:4]",
            Value("roundup_power2_divisions", "131072:4"),
        ),
        (
            "roundup_power2_divisions:[65536:2,>:4]",
            Value("roundup_power2_divisions", ">:4"),
        ),
        // Words with fixed values.
        (
            "expandable_segments:True",
            Value("expandable_segments", "True"),
        ),
        (
            "expandable_segments:yes",
            Value("expandable_segments", "yes"),
        ),
        (
            "backend:cudaMallocAsync",
            Value("backend", "cudaMallocAsync"),
        ),
        // Keys this allocator cannot use.
        ("max_split_size:128", Key("max_split_size")),
        ("page_size:4096", Key("page_size")),
        ("reserve:5", Key("reserve")),
        (
            "pinned_use_cuda_host_register:True",
            Key("pinned_use_cuda_host_register"),
        ),
        (
            "max_split_size_mb:64,max_split_size_mb:128",
            Key("max_split_size_mb"),
        ),
        (
            "garbage_collection_threshold:0.5,backend:native,garbage_collection_threshold:0.6",
            Key("garbage_collection_threshold"),
        ),
    ];
    for (input, want) in table {
        check(input, CachingConfig::parse(input), want);
    }
}

#[test]
fn caching_config_builders_name_the_key_and_the_value() {
    use Want::Value;
    let d = CachingConfig::default;
    check(
        "max_split_size_mb:5",
        d().with_max_split_size_mb(5),
        &Value("max_split_size_mb", "5"),
    );
    check(
        "max_split_size_mb:8796093022208",
        d().with_max_split_size_mb(1 << 43),
        &Value("max_split_size_mb", "8796093022208"),
    );
    check(
        &format!("max_split_size_mb:{}", usize::MAX),
        d().with_max_split_size_mb(usize::MAX),
        &Value("max_split_size_mb", "18446744073709551615"),
    );
    check(
        "max_non_split_rounding_mb:0",
        d().with_max_non_split_rounding_mb(0),
        &Value("max_non_split_rounding_mb", "0"),
    );
    check(
        "roundup_power2_divisions:6",
        d().with_roundup_power2_divisions(6),
        &Value("roundup_power2_divisions", "6"),
    );
    let mut table = [0; typestate_tensor::storage::caching::ROUNDUP_INTERVALS];
    table[3] = 12;
    check(
        &format!("roundup_power2_divisions:{table:?}"),
        d().with_roundup_power2_divisions_per_interval(table),
        &Value("roundup_power2_divisions", "12"),
    );
    for t in [-0.1, 0.0, 1.0, 2.0, f64::NAN, f64::INFINITY] {
        let word = t.to_string();
        check(
            &format!("garbage_collection_threshold:{word}"),
            d().with_garbage_collection_threshold(t),
            &Value(
                "garbage_collection_threshold",
                Box::leak(word.into_boxed_str()),
            ),
        );
    }
    for f in [0.0, -1.0, 1.5, f64::NAN] {
        let word = f.to_string();
        check(
            &format!("memory_fraction:{word}"),
            d().with_memory_fraction(f),
            &Value("memory_fraction", Box::leak(word.into_boxed_str())),
        );
    }
    // The largest accepted sizes are just below 2^63 bytes.
    let max_mb = (usize::MAX >> 1) >> 20;
    let c = d().with_max_split_size_mb(max_mb).unwrap();
    assert_eq!(c.max_split_size(), Some(max_mb << 20));
}

#[test]
fn pooled_config_text_names_the_key_and_the_value() {
    use Want::{Key, Value};
    let table: &[(&str, Want)] = &[
        ("type:naive", Value("type", "naive")),
        ("page_size:0", Value("page_size", "0")),
        ("page_size:16", Value("page_size", "16")),
        (
            "page_size:9223372036854775808",
            Value("page_size", "9223372036854775808"),
        ),
        ("page_size:x", Value("page_size", "x")),
        (
            "large_alloc_round_size:0",
            Value("large_alloc_round_size", "0"),
        ),
        (
            "large_alloc_round_size:18446744073709551615",
            Value("large_alloc_round_size", "18446744073709551615"),
        ),
        ("type:round,page_size:5000", Value("page_size", "5000")),
        (
            "type:round,round_linear_cutoff:19",
            Value("round_linear_cutoff", "19"),
        ),
        (
            "type:round,round_linear_cutoff:35",
            Value("round_linear_cutoff", "35"),
        ),
        (
            "type:round,round_linear_cutoff:4294967296",
            Value("round_linear_cutoff", "4294967296"),
        ),
        (
            "type:round,page_size:4194304,round_linear_cutoff:20",
            Value("round_linear_cutoff", "20"),
        ),
        ("reserve:101", Value("reserve", "101")),
        ("reserve:x", Value("reserve", "x")),
        ("page_size:[1:2]", Value("page_size", "[1:2]")),
        // Keys the pooled allocator cannot use.
        ("pool:page", Key("pool")),
        ("max_split_size_mb:64", Key("max_split_size_mb")),
        (
            "type:round,large_alloc_round_size:4096",
            Key("large_alloc_round_size"),
        ),
        ("round_linear_cutoff:24", Key("round_linear_cutoff")),
        (
            "type:page,round_linear_cutoff:24",
            Key("round_linear_cutoff"),
        ),
        ("page_size:4096,page_size:8192", Key("page_size")),
        ("type:round,reserve:5,type:page", Key("type")),
    ];
    for (input, want) in table {
        check(input, PooledConfig::parse(input), want);
    }
}

#[test]
fn pooled_config_new_and_hand_built_roundings_are_checked() {
    use Want::Value;
    let cases: &[(PoolRounding, Want)] = &[
        (
            PoolRounding::Page {
                page_size: 0,
                large_alloc_round_size: 1 << 21,
            },
            Value("page_size", "0"),
        ),
        (
            PoolRounding::Page {
                page_size: 1 << 63,
                large_alloc_round_size: 1 << 21,
            },
            Value("page_size", "9223372036854775808"),
        ),
        (
            PoolRounding::Page {
                page_size: 4096,
                large_alloc_round_size: 0,
            },
            Value("large_alloc_round_size", "0"),
        ),
        (
            PoolRounding::Page {
                page_size: 4096,
                large_alloc_round_size: usize::MAX,
            },
            Value("large_alloc_round_size", "18446744073709551615"),
        ),
        (
            PoolRounding::Power2 {
                page_size: 0,
                linear_cutoff: 24,
            },
            Value("page_size", "0"),
        ),
        (
            PoolRounding::Power2 {
                page_size: 4096,
                linear_cutoff: 64,
            },
            Value("round_linear_cutoff", "64"),
        ),
        (
            PoolRounding::Power2 {
                page_size: 1 << 30,
                linear_cutoff: 24,
            },
            Value("round_linear_cutoff", "24"),
        ),
    ];
    for (rounding, want) in cases {
        // `round` on a hand-built value: a typed error, never a division by zero or an
        // overflowing shift.
        check(&format!("{rounding:?}"), rounding.round(4096), want);
        check(
            &format!("{rounding:?}, reserve 5%"),
            PooledConfig::new(*rounding, 5),
            want,
        );
    }
    check(
        "Power2 { page_size: 4096, linear_cutoff: 24 }, reserve 101%",
        PooledConfig::new(PoolRounding::MXNET_ROUND, 101),
        &Value("reserve", "101"),
    );
    // Valid roundings still round.
    assert_eq!(PoolRounding::MXNET_PAGE.round(5000), Ok(8192));
    assert_eq!(PoolRounding::MXNET_ROUND.round(5000), Ok(8192));
}

#[test]
fn configs_parse_through_from_str_and_allocators_debug_print_their_settings() {
    use typestate_tensor::storage::{CachingAllocator, HostMemorySource};
    let text = "max_split_size_mb:64,garbage_collection_threshold:0.5";
    let c: CachingConfig = text.parse().unwrap();
    assert_eq!(c, CachingConfig::parse(text).unwrap());
    assert!("max_split_size_mb:nope".parse::<CachingConfig>().is_err());
    let p: PooledConfig = "page_size:8192".parse().unwrap();
    assert_eq!(p, PooledConfig::parse("page_size:8192").unwrap());
    assert!("no_such_key:1".parse::<PooledConfig>().is_err());
    let a = CachingAllocator::with_config(HostMemorySource::new(1 << 20), c);
    let shown = format!("{a:?}");
    assert!(shown.starts_with("CachingAllocator"), "{shown}");
    assert!(
        shown.contains("config") && shown.contains("stats"),
        "{shown}"
    );
}
