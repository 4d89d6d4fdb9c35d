//! The `.npy` header: a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, parsed strictly.
//!
//! Grammar (whitespace allowed between tokens; the dict may be followed by whitespace only,
//! numpy's space padding and final newline):
//!
//! ```text
//! dict  := '{' (entry (',' entry)* ','?)? '}'
//! entry := str ':' value
//! value := str | 'True' | 'False' | tuple
//! tuple := '(' ')' | '(' int ',' ')' | '(' int (',' int)+ ','? ')'
//! int   := [0-9]+ 'L'?            (Python 2 wrote `3L`)
//! str   := "'" [^'\\]* "'" | '"' [^"\\]* '"'
//! ```
//!
//! The keys must be exactly `descr`, `fortran_order` and `shape`, each once, with a string, a
//! bool and a tuple. Structured dtypes (a list as `descr`) are refused: this crate has no
//! record types. Numbers past `usize` are refused, not wrapped.

/// The three entries of a header.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NpyDict {
    pub(crate) descr: String,
    pub(crate) fortran_order: bool,
    pub(crate) shape: Vec<usize>,
}

enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self
            .s
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_whitespace())
        {
            self.pos += 1;
        }
    }

    /// Skips whitespace, then consumes `c` if it is next.
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{}` at byte {}", c as char, self.pos))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.ws();
        let quote = match self.s.get(self.pos) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a string at byte {}", self.pos)),
        };
        let start = self.pos + 1;
        let len = self.s[start..]
            .iter()
            .position(|&c| c == quote || c == b'\\')
            .ok_or_else(|| format!("unterminated string at byte {}", self.pos))?;
        if self.s[start + len] == b'\\' {
            return Err(format!(
                "escape sequences are not allowed (byte {})",
                start + len
            ));
        }
        self.pos = start + len + 1;
        String::from_utf8(self.s[start..start + len].to_vec()).map_err(|e| e.to_string())
    }

    fn int(&mut self) -> Result<usize, String> {
        self.ws();
        let start = self.pos;
        let mut v: usize = 0;
        while let Some(&c) = self.s.get(self.pos).filter(|c| c.is_ascii_digit()) {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(usize::from(c - b'0')))
                .ok_or_else(|| format!("dimension at byte {start} exceeds {}", usize::MAX))?;
            self.pos += 1;
        }
        if self.pos == start {
            return Err(format!("expected a dimension at byte {start}"));
        }
        if self.s.get(self.pos) == Some(&b'L') {
            self.pos += 1;
        }
        Ok(v)
    }

    fn tuple(&mut self) -> Result<Vec<usize>, String> {
        let mut dims = Vec::new();
        if self.eat(b')') {
            return Ok(dims);
        }
        loop {
            dims.push(self.int()?);
            let comma = self.eat(b',');
            if self.eat(b')') {
                // `(3)` is an int in Python, not a tuple.
                if dims.len() == 1 && !comma {
                    return Err("a one-element shape needs a trailing comma: `(3,)`".into());
                }
                return Ok(dims);
            }
            if !comma {
                return Err(format!("expected `,` or `)` at byte {}", self.pos));
            }
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        self.ws();
        let rest = &self.s[self.pos.min(self.s.len())..];
        if rest.starts_with(b"True") {
            self.pos += 4;
            Ok(Value::Bool(true))
        } else if rest.starts_with(b"False") {
            self.pos += 5;
            Ok(Value::Bool(false))
        } else if self.eat(b'(') {
            self.tuple().map(Value::Tuple)
        } else if rest.starts_with(b"[") {
            Err("structured dtypes (a list as `descr`) are not supported".into())
        } else {
            self.string().map(Value::Str)
        }
    }
}

/// Parses a header's text.
pub(crate) fn parse_dict(text: &str) -> Result<NpyDict, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
    };
    p.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    if !p.eat(b'}') {
        loop {
            let key = p.string()?;
            p.expect(b':')?;
            let value = p.value()?;
            let slot_taken = match (key.as_str(), value) {
                ("descr", Value::Str(s)) => descr.replace(s).is_some(),
                ("fortran_order", Value::Bool(b)) => fortran.replace(b).is_some(),
                ("shape", Value::Tuple(t)) => shape.replace(t).is_some(),
                ("descr" | "fortran_order" | "shape", _) => {
                    return Err(format!("`{key}` has a value of the wrong kind"))
                }
                _ => return Err(format!("unexpected key `{key}`")),
            };
            if slot_taken {
                return Err(format!("key `{key}` given twice"));
            }
            let comma = p.eat(b',');
            if p.eat(b'}') {
                break;
            }
            if !comma {
                return Err(format!("expected `,` or `}}` at byte {}", p.pos));
            }
        }
    }
    p.ws();
    if p.pos != p.s.len() {
        return Err(format!("unexpected text after the dict at byte {}", p.pos));
    }
    match (descr, fortran, shape) {
        (Some(descr), Some(fortran_order), Some(shape)) => Ok(NpyDict {
            descr,
            fortran_order,
            shape,
        }),
        _ => Err("the header needs `descr`, `fortran_order` and `shape`".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numpy_headers_strictly() {
        let d = parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }     \n")
            .unwrap();
        assert_eq!(
            d,
            NpyDict {
                descr: "<f4".into(),
                fortran_order: false,
                shape: vec![2, 3]
            }
        );
        let d = parse_dict("{\"shape\":(3L,),\"fortran_order\":True,\"descr\":\">i8\"}").unwrap();
        assert_eq!((d.shape, d.fortran_order), (vec![3], true));
        assert_eq!(
            parse_dict("{'descr': '|b1', 'fortran_order': False, 'shape': ()}")
                .unwrap()
                .shape,
            Vec::<usize>::new()
        );
        for bad in [
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3)}",
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}",
            "{'descr': '<f4', 'fortran_order': 0, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
            "{'descr': '<f4' 'fortran_order': False, 'shape': ()}",
            "{'descr': '<f\\4', 'fortran_order': False, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': ()} x",
            "{'descr': '<f4",
            "",
        ] {
            assert!(parse_dict(bad).is_err(), "{bad}");
        }
    }
}
