//! Hash maps keyed by block address, with a hasher made for them.
//!
//! Allocators look blocks up by address on every `free`. SipHash (std's default) spends a
//! large part of a cached alloc+free pair hashing; addresses are distinct 256-byte aligned
//! integers, so a folded multiply (the full 128-bit product of the key and an odd constant,
//! high half XOR low half, as in foldhash) spreads them over every bit of the hash in a few
//! cycles. The fold matters: a plain multiply leaves the low bits, which pick the bucket,
//! zero for aligned keys. Only our own addresses are hashed, so resistance to chosen keys
//! is not needed.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` keyed by address (or by another small integer key).
pub(crate) type AddrMap<K, V> = HashMap<K, V, BuildHasherDefault<AddrHasher>>;

/// Multiplicative hasher for integer keys.
#[derive(Default, Clone, Copy)]
pub(crate) struct AddrHasher {
    hash: u64,
}

/// 2^64 divided by the golden ratio, rounded to odd.
const FIBONACCI: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.hash
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // Mixing the previous state in lets tuple keys (stream, size) hash every field.
        let product = u128::from(self.hash ^ n) * u128::from(FIBONACCI);
        // Taking each half of the product is the point of the fold, not a lossy conversion.
        self.hash = (product as u64) ^ ((product >> 64) as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(super::arith::to_u64(n));
    }
}
