//! The `key:value,key:value` configuration syntax of PyTorch's `PYTORCH_CUDA_ALLOC_CONF`,
//! shared by [`CachingConfig`](super::caching::CachingConfig) and
//! [`PooledConfig`](super::pooled::PooledConfig).
//!
//! A value is a word or a bracketed list of `key:value` pairs
//! (`roundup_power2_divisions:[256:1,512:2,>:8]`). Spaces are ignored, as in PyTorch.
//!
//! Three kinds of error, each naming what is wrong: broken syntax is
//! [`AllocError::InvalidConfig`]; an entry the allocator cannot use (an unknown key, one of
//! another allocator, one given twice) is [`AllocError::UnusableConfigKey`]; a value out of
//! its range is [`AllocError::InvalidConfigValue`], with the key and the value. Nothing is
//! silently dropped.

use std::fmt;

use crate::error::{AllocError, ConfigValueError};

/// A configuration value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ConfValue {
    /// A single word.
    Word(String),
    /// A bracketed list of `key:value` pairs.
    List(Vec<(String, String)>),
}

impl fmt::Display for ConfValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfValue::Word(w) => f.write_str(w),
            ConfValue::List(entries) => {
                f.write_str("[")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{k}:{v}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// The largest byte count a setting may name: no allocation can exceed `isize::MAX` bytes
/// (Rust's and the drivers' limit), so a rounding unit or threshold beyond it (anything
/// from 2^63 on) could never take effect.
pub(crate) const MAX_SETTING_BYTES: usize = usize::MAX >> 1;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Sep(char),
}

/// An [`AllocError::InvalidConfig`] for `input`.
pub(crate) fn invalid(input: &str, reason: impl Into<String>) -> AllocError {
    AllocError::InvalidConfig {
        input: input.to_owned(),
        reason: reason.into(),
    }
}

/// An [`AllocError::InvalidConfigValue`]: `key` in `input` has `value`, which breaks
/// `reason`.
pub(crate) fn bad_value(
    input: &str,
    key: &str,
    value: impl fmt::Display,
    reason: impl Into<String>,
) -> AllocError {
    AllocError::InvalidConfigValue(Box::new(ConfigValueError {
        input: input.to_owned(),
        key: key.to_owned(),
        value: value.to_string(),
        reason: reason.into(),
    }))
}

/// An [`AllocError::UnusableConfigKey`]: `key` in `input` cannot be used, because `reason`.
pub(crate) fn unusable_key(input: &str, key: &str, reason: impl Into<String>) -> AllocError {
    AllocError::UnusableConfigKey {
        input: input.to_owned(),
        key: key.to_owned(),
        reason: reason.into(),
    }
}

/// The settings in environment variable `var`, read with `parse`, or the defaults if it is
/// unset.
pub(crate) fn from_env<T: Default>(
    var: &str,
    parse: impl FnOnce(&str) -> Result<T, AllocError>,
) -> Result<T, AllocError> {
    match std::env::var(var) {
        Ok(text) => parse(&text),
        Err(std::env::VarError::NotPresent) => Ok(T::default()),
        Err(std::env::VarError::NotUnicode(raw)) => Err(invalid(
            &raw.to_string_lossy(),
            format!("{var} is not valid UTF-8"),
        )),
    }
}

fn tokenize(input: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    for c in input.chars() {
        match c {
            ',' | ':' | '[' | ']' => {
                if !word.is_empty() {
                    tokens.push(Token::Word(std::mem::take(&mut word)));
                }
                tokens.push(Token::Sep(c));
            }
            c if c.is_whitespace() => {}
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        tokens.push(Token::Word(word));
    }
    tokens
}

/// Splits `input` into `(key, value)` pairs, in order. Empty input gives no pairs; a key
/// given twice is an error (one of its values would otherwise be dropped).
pub(crate) fn parse_pairs(input: &str) -> Result<Vec<(String, ConfValue)>, AllocError> {
    let tokens = tokenize(input);
    let mut pairs = Vec::new();
    let mut i = 0;
    let word = |i: usize, what: &str| -> Result<String, AllocError> {
        match tokens.get(i) {
            Some(Token::Word(w)) => Ok(w.clone()),
            Some(Token::Sep(c)) => Err(invalid(input, format!("expected {what}, found '{c}'"))),
            None => Err(invalid(input, format!("expected {what}, found the end"))),
        }
    };
    let sep = |i: usize, want: char| -> Result<(), AllocError> {
        match tokens.get(i) {
            Some(Token::Sep(c)) if *c == want => Ok(()),
            Some(Token::Sep(c)) => Err(invalid(input, format!("expected '{want}', found '{c}'"))),
            Some(Token::Word(w)) => Err(invalid(input, format!("expected '{want}', found {w:?}"))),
            None => Err(invalid(input, format!("expected '{want}', found the end"))),
        }
    };
    while i < tokens.len() {
        let key = word(i, "a key")?;
        sep(i + 1, ':')?;
        i += 2;
        let value = if tokens.get(i) == Some(&Token::Sep('[')) {
            i += 1;
            let mut list = Vec::new();
            while tokens.get(i) != Some(&Token::Sep(']')) {
                if !list.is_empty() {
                    sep(i, ',')?;
                    i += 1;
                }
                let k = word(i, "a list key")?;
                sep(i + 1, ':')?;
                let v = word(i + 2, &format!("a value for list key {k:?}"))?;
                list.push((k, v));
                i += 3;
            }
            i += 1;
            ConfValue::List(list)
        } else {
            let v = word(i, &format!("a value for {key:?}"))?;
            i += 1;
            ConfValue::Word(v)
        };
        if pairs.iter().any(|(k, _)| *k == key) {
            return Err(unusable_key(
                input,
                &key,
                "is given twice; give each key once",
            ));
        }
        pairs.push((key, value));
        if i < tokens.len() {
            sep(i, ',')?;
            i += 1;
            // A trailing comma promises another pair.
            word(i, "a key")?;
        }
    }
    Ok(pairs)
}

/// The word of `value`, or an error naming `key`.
pub(crate) fn expect_word<'a>(
    input: &str,
    key: &str,
    value: &'a ConfValue,
) -> Result<&'a str, AllocError> {
    match value {
        ConfValue::Word(w) => Ok(w),
        ConfValue::List(_) => Err(bad_value(
            input,
            key,
            value,
            "takes a single value, not a list",
        )),
    }
}

/// Parses a non-negative integer setting.
pub(crate) fn parse_usize(input: &str, key: &str, value: &str) -> Result<usize, AllocError> {
    value.parse::<usize>().map_err(|e| {
        bad_value(
            input,
            key,
            value,
            format!("not a non-negative integer ({e})"),
        )
    })
}

/// Parses a finite floating-point setting.
pub(crate) fn parse_f64(input: &str, key: &str, value: &str) -> Result<f64, AllocError> {
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(bad_value(input, key, value, "not a finite number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(s: &str) -> ConfValue {
        ConfValue::Word(s.to_owned())
    }

    #[test]
    fn pairs_words_and_lists() {
        let got =
            parse_pairs(" max_split_size_mb : 128, roundup_power2_divisions:[256:1, >:8]").unwrap();
        assert_eq!(
            got,
            vec![
                ("max_split_size_mb".to_owned(), word("128")),
                (
                    "roundup_power2_divisions".to_owned(),
                    ConfValue::List(vec![
                        ("256".to_owned(), "1".to_owned()),
                        (">".to_owned(), "8".to_owned())
                    ])
                ),
            ]
        );
        assert_eq!(parse_pairs("").unwrap(), vec![]);
        assert_eq!(
            parse_pairs("a:[]").unwrap(),
            vec![("a".to_owned(), ConfValue::List(vec![]))]
        );
    }

    #[test]
    fn a_key_given_twice_is_an_error_naming_it() {
        let err = parse_pairs("a:1,b:2,a:3").unwrap_err();
        assert!(
            matches!(&err, AllocError::UnusableConfigKey { input, key, .. }
                if input == "a:1,b:2,a:3" && key == "a"),
            "{err:?}"
        );
    }

    #[test]
    fn values_display_as_written() {
        assert_eq!(word("4").to_string(), "4");
        let list = ConfValue::List(vec![("256".into(), "1".into()), (">".into(), "8".into())]);
        assert_eq!(list.to_string(), "[256:1,>:8]");
    }

    #[test]
    fn malformed_inputs_are_rejected() {
        for bad in [
            "a",
            "a:",
            ":1",
            "a:1,",
            "a:1 b:2",
            "a:[1:2",
            "a:[1:2 3:4]",
            "a:[1]",
            "a:1:2",
            "a::1",
        ] {
            let err = parse_pairs(bad).unwrap_err();
            assert!(
                matches!(&err, AllocError::InvalidConfig { input, .. } if input == bad),
                "{bad:?} gave {err:?}"
            );
        }
    }
}
