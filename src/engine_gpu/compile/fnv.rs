//! FNV-1a, 128-bit: a small hash whose values never change (unlike std's `DefaultHasher`),
//! so disk cache file names and checksums stay valid across Rust versions and runs.
//!
//! Not cryptographic: it guards against collisions between our own inputs and against
//! corruption, not against an attacker who can write into the cache folder.

/// FNV-128 offset basis.
const OFFSET_BASIS: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
/// FNV-128 prime, 2^88 + 2^8 + 0x3b.
const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

/// An incremental FNV-1a-128 hasher.
///
/// For keys made of several fields, use [`Fnv128::field`], which prefixes each field with its
/// length so that `("ab", "c")` and `("a", "bc")` hash differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv128(u128);

impl Default for Fnv128 {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv128 {
    /// A hasher in its initial state.
    pub const fn new() -> Self {
        Self(OFFSET_BASIS)
    }

    /// Feeds raw bytes.
    pub fn write(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.0 ^= u128::from(b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
        self
    }

    /// Feeds one field: its length as 8 little-endian bytes, then its bytes.
    pub fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.write(&(bytes.len() as u64).to_le_bytes());
        self.write(bytes)
    }

    /// The hash of everything fed so far.
    pub const fn finish(&self) -> u128 {
        self.0
    }

    /// The hash of `bytes` alone.
    pub fn hash(bytes: &[u8]) -> u128 {
        Self::new().write(bytes).finish()
    }
}
