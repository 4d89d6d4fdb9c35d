// IntDivider: division by a run-time constant as multiply-high, add and shift.
//
// Mirrors src/engine_gpu/int_divider.rs (same formulas, same widths; the Rust tests prove the math).
// For divisor d the host precomputes
//   shift = ceil(log2 d),  magic = floor(2^N (2^shift - d) / d) + 1   (N = index width)
// and then n / d == (umulhi(n, magic) + n) >> shift for EVERY N-bit n. The (N+1)-bit sum is
// formed in 64 bits for 32-bit indices, and without a carry for 64-bit indices.
//
// Layout (identical to the Rust #[repr(C)] struct, no padding): divisor, magic, shift, each an
// index_t: 12 bytes aligned to 4 (unsigned int), 24 bytes aligned to 8 (unsigned long long).
//
// NVRTC compiles this with no toolkit headers: no include directives, builtin types only.
#ifndef TYPESTATE_TENSOR_INT_DIVIDER_CUH
#define TYPESTATE_TENSOR_INT_DIVIDER_CUH

template <typename index_t>
struct DivMod {
  index_t div;
  index_t mod;
};

template <typename index_t>
struct IntDivider;

template <>
struct IntDivider<unsigned int> {
  unsigned int divisor;
  unsigned int magic;
  unsigned int shift;  // 0..=32

  __device__ __forceinline__ unsigned int div(unsigned int n) const {
    unsigned int t = __umulhi(n, magic);
    // t + n needs 33 bits; shift may be 32, which is defined on a 64-bit value.
    return (unsigned int)(((unsigned long long)t + n) >> shift);
  }

  __device__ __forceinline__ DivMod<unsigned int> divmod(unsigned int n) const {
    unsigned int q = div(n);
    DivMod<unsigned int> result = {q, n - q * divisor};
    return result;
  }
};

template <>
struct IntDivider<unsigned long long> {
  unsigned long long divisor;
  unsigned long long magic;
  unsigned long long shift;  // 0..=64

  __device__ __forceinline__ unsigned long long div(unsigned long long n) const {
    // magic < 2^64, so t <= n and n - t cannot wrap.
    unsigned long long t = __umul64hi(n, magic);
    // (t + n) >> shift == (((n - t) >> 1) + t) >> (shift - 1) for shift >= 1, with no
    // 65-bit intermediate; shift == 0 only for d == 1.
    return shift == 0 ? n : ((((n - t) >> 1) + t) >> (shift - 1));
  }

  __device__ __forceinline__ DivMod<unsigned long long> divmod(unsigned long long n) const {
    unsigned long long q = div(n);
    DivMod<unsigned long long> result = {q, n - q * divisor};
    return result;
  }
};

#endif  // TYPESTATE_TENSOR_INT_DIVIDER_CUH
