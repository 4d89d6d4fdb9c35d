// Conversions between the crate's element types, and the total arithmetic helpers that the op
// table's CUDA expressions call (see src/ops/op.rs). Each mirrors src/element.rs exactly, so the
// GPU and the CPU engine give the same bits.
//
// Storage types (Element::CUDA_TYPE): float, double, ts_f16, ts_bf16, signed char, short, int,
// long long, unsigned char, unsigned short, unsigned int, unsigned long long, bool. Compute
// types (Element::CUDA_COMPUTE_TYPE, `ts_compute` below): float for the three float types of
// 32 bits or less, double, int for i8, i16 and i32, long long, unsigned int for u8, u16 and
// u32, unsigned long long, bool.
//
// The integers narrower than 32 bits compute in 32 bits: their helpers below wrap modulo 2^32,
// and the store (or, in a fused kernel, the rounding after each op) keeps the low bits. That
// equals the CPU's wrapping in the narrow type for add, sub, mul, neg and pow (the low bits of
// a wrapped result depend only on the low bits of the operands), and div, max, min, abs, sign
// and the comparisons only ever see values in range. An op's CUDA expression must therefore
// not feed an un-stored add, sub, mul or neg result into a div, comparison, max, min or right
// shift (no entry of the table does).
//
// Requires half.cuh before it. No #include: NVRTC compiles this without toolkit headers.
#ifndef TYPESTATE_TENSOR_OPS_CUH
#define TYPESTATE_TENSOR_OPS_CUH

// ---- type traits -----------------------------------------------------------------------

template <typename A, typename B>
struct ts_is_same {
  static constexpr bool value = false;
};
template <typename A>
struct ts_is_same<A, A> {
  static constexpr bool value = true;
};

// The type arithmetic on a storage type is done in.
template <typename T>
struct ts_compute {
  typedef T type;
};
template <>
struct ts_compute<ts_f16> {
  typedef float type;
};
template <>
struct ts_compute<ts_bf16> {
  typedef float type;
};
template <>
struct ts_compute<unsigned char> {
  typedef unsigned int type;
};
template <>
struct ts_compute<signed char> {
  typedef int type;
};
template <>
struct ts_compute<short> {
  typedef int type;
};
template <>
struct ts_compute<unsigned short> {
  typedef unsigned int type;
};

// What a builtin arithmetic type is, and an integer's bounds.
template <typename T>
struct ts_traits;
template <>
struct ts_traits<bool> {
  static constexpr bool is_bool = true, is_float = false, is_int = false;
};
template <>
struct ts_traits<float> {
  static constexpr bool is_bool = false, is_float = true, is_int = false;
};
template <>
struct ts_traits<double> {
  static constexpr bool is_bool = false, is_float = true, is_int = false;
};
template <>
struct ts_traits<int> {
  static constexpr bool is_bool = false, is_float = false, is_int = true;
  static constexpr int lowest = -2147483647 - 1, highest = 2147483647;
};
template <>
struct ts_traits<long long> {
  static constexpr bool is_bool = false, is_float = false, is_int = true;
  static constexpr long long lowest = -9223372036854775807LL - 1, highest = 9223372036854775807LL;
};
template <>
struct ts_traits<unsigned int> {
  static constexpr bool is_bool = false, is_float = false, is_int = true;
  static constexpr unsigned int lowest = 0u, highest = 4294967295u;
};
template <>
struct ts_traits<unsigned long long> {
  static constexpr bool is_bool = false, is_float = false, is_int = true;
  static constexpr unsigned long long lowest = 0ull, highest = 18446744073709551615ull;
};
template <>
struct ts_traits<signed char> {
  static constexpr bool is_bool = false, is_float = false, is_int = true;
  static constexpr signed char lowest = -128, highest = 127;
};
template <>
struct ts_traits<short> {
  static constexpr bool is_bool = false, is_float = false, is_int = true;
  static constexpr short lowest = -32768, highest = 32767;
};
template <>
struct ts_traits<unsigned char> {
  static constexpr bool is_bool = false, is_float = false, is_int = true;
  static constexpr unsigned char lowest = 0, highest = 255;
};
template <>
struct ts_traits<unsigned short> {
  static constexpr bool is_bool = false, is_float = false, is_int = true;
  static constexpr unsigned short lowest = 0, highest = 65535;
};

// ---- conversions -----------------------------------------------------------------------

// Float to integer like Rust's `as`: truncate toward zero, saturate at the bounds, NaN -> 0.
// (A plain C cast is undefined out of range, so the bounds are tested first.) The bounds are
// exact doubles, or round up to 2^63 / 2^64 where they are not, which is still right: a double
// at or above the rounded bound is out of range.
template <typename To, typename From>
__device__ __forceinline__ To ts_float_to_int(From v) {
  const double d = (double)v;
  if (d != d) {
    return (To)0;
  }
  if (d <= (double)ts_traits<To>::lowest) {
    return ts_traits<To>::lowest;
  }
  if (d >= (double)ts_traits<To>::highest) {
    return ts_traits<To>::highest;
  }
  return (To)d;
}

// `ts_conv<To>::from(v)`: the value of `v` as a `To`, with the crate's rules (Rust's `as`):
// - float -> integer: ts_float_to_int (truncate, saturate, NaN -> 0);
// - integer -> narrower integer: keep the low bits (wrap); wider: sign- or zero-extend;
// - integer -> float, double -> float: round to nearest even;
// - anything -> bool: `v != 0` (NaN -> true, as `Element::from_f64`); bool -> 0 or 1;
// - to and from ts_f16 / ts_bf16: through float (half.cuh), double and integers through
//   double like `half::{f16, bf16}::from_f64`.
template <typename To>
struct ts_conv {
  template <typename From>
  static __device__ __forceinline__ To from(From v) {
    if constexpr (ts_traits<To>::is_bool) {
      return v != (From)0;
    } else if constexpr (ts_traits<To>::is_int && ts_traits<From>::is_float) {
      return ts_float_to_int<To>(v);
    } else {
      return (To)v;
    }
  }
  static __device__ __forceinline__ To from(ts_f16 v) { return from(ts_f16_to_float(v)); }
  static __device__ __forceinline__ To from(ts_bf16 v) { return from(ts_bf16_to_float(v)); }
};

template <>
struct ts_conv<ts_f16> {
  static __device__ __forceinline__ ts_f16 from(float v) { return ts_float_to_f16(v); }
  static __device__ __forceinline__ ts_f16 from(double v) { return ts_double_to_f16(v); }
  static __device__ __forceinline__ ts_f16 from(ts_f16 v) { return v; }
  static __device__ __forceinline__ ts_f16 from(ts_bf16 v) {
    return ts_float_to_f16(ts_bf16_to_float(v));
  }
  template <typename From>
  static __device__ __forceinline__ ts_f16 from(From v) {
    return ts_double_to_f16((double)v);
  }
};

template <>
struct ts_conv<ts_bf16> {
  static __device__ __forceinline__ ts_bf16 from(float v) { return ts_float_to_bf16(v); }
  static __device__ __forceinline__ ts_bf16 from(double v) { return ts_double_to_bf16(v); }
  static __device__ __forceinline__ ts_bf16 from(ts_bf16 v) { return v; }
  static __device__ __forceinline__ ts_bf16 from(ts_f16 v) {
    return ts_float_to_bf16(ts_f16_to_float(v));
  }
  template <typename From>
  static __device__ __forceinline__ ts_bf16 from(From v) {
    return ts_double_to_bf16((double)v);
  }
};

// ---- arithmetic ------------------------------------------------------------------------
//
// Overloaded for the compute types float, double, int, long long, unsigned int and unsigned
// long long. Like `Numeric` in src/element.rs every helper is total:
// - signed integers wrap (the arithmetic is done in the unsigned type of the same width, where
//   C++ defines wrapping); unsigned integers wrap as C++ defines;
// - the narrow integers (i8, i16, u8, u16) wrap modulo 2^32 here and modulo their width at the
//   store (see the top of this file);
// - integer division by zero gives 0, MIN / -1 wraps to MIN;
// - float max/min return NaN when either input is NaN (PyTorch's maximum/minimum).

__device__ __forceinline__ float ts_nan_f32() { return __int_as_float(0x7FC00000); }
__device__ __forceinline__ double ts_nan_f64() { return __longlong_as_double(0x7FF8000000000000LL); }

// add, sub, mul
__device__ __forceinline__ float ts_add(float a, float b) { return a + b; }
__device__ __forceinline__ double ts_add(double a, double b) { return a + b; }
__device__ __forceinline__ int ts_add(int a, int b) { return (int)((unsigned int)a + (unsigned int)b); }
__device__ __forceinline__ long long ts_add(long long a, long long b) {
  return (long long)((unsigned long long)a + (unsigned long long)b);
}
__device__ __forceinline__ unsigned int ts_add(unsigned int a, unsigned int b) { return a + b; }
__device__ __forceinline__ unsigned long long ts_add(unsigned long long a, unsigned long long b) { return a + b; }

__device__ __forceinline__ float ts_sub(float a, float b) { return a - b; }
__device__ __forceinline__ double ts_sub(double a, double b) { return a - b; }
__device__ __forceinline__ int ts_sub(int a, int b) { return (int)((unsigned int)a - (unsigned int)b); }
__device__ __forceinline__ long long ts_sub(long long a, long long b) {
  return (long long)((unsigned long long)a - (unsigned long long)b);
}
__device__ __forceinline__ unsigned int ts_sub(unsigned int a, unsigned int b) { return a - b; }
__device__ __forceinline__ unsigned long long ts_sub(unsigned long long a, unsigned long long b) { return a - b; }

__device__ __forceinline__ float ts_mul(float a, float b) { return a * b; }
__device__ __forceinline__ double ts_mul(double a, double b) { return a * b; }
__device__ __forceinline__ int ts_mul(int a, int b) { return (int)((unsigned int)a * (unsigned int)b); }
__device__ __forceinline__ long long ts_mul(long long a, long long b) {
  return (long long)((unsigned long long)a * (unsigned long long)b);
}
__device__ __forceinline__ unsigned int ts_mul(unsigned int a, unsigned int b) { return a * b; }
__device__ __forceinline__ unsigned long long ts_mul(unsigned long long a, unsigned long long b) { return a * b; }

// div
__device__ __forceinline__ float ts_div(float a, float b) { return a / b; }
__device__ __forceinline__ double ts_div(double a, double b) { return a / b; }

// 32-bit integer division of small operands through the float reciprocal (issue 26): the
// GPU has no integer divider, and `a / b` on `int` is a sequence of about 20 instructions
// that made 1- and 2-byte division, remainders and floor division (computed in 32 bits)
// compute-bound at 0.5-0.8x PyTorch on an H200. Exact when a and b lie in [-2^22, 2^22)
// and b != 0: q0 = trunc(a * rcp(b)) has a relative error below 2^-22 (rcp.approx's 1 ulp
// and one rounding of the product), so it lies within 1/|b| of a / b, which a non-integer
// quotient is at least that far from any integer; so q0 is trunc(a / b), or, when a / b is
// an integer q, possibly q0 = q - sign toward zero, which the remainder then shows
// (|a - q0 * b| == |b|) and one step mends. Narrow types pass the range test by their type
// (the compiler drops it); 32-bit ones take the long path only when a value is large.
__device__ __forceinline__ bool ts_div_small_ok(int a, int b) {
  return (((unsigned)a + 0x400000u) | ((unsigned)b + 0x400000u)) < 0x800000u;
}
__device__ __forceinline__ bool ts_div_small_ok(unsigned int a, unsigned int b) {
  return (a | b) < 0x400000u;
}
// Precondition: ts_div_small_ok(a, b) and b != 0.
__device__ __forceinline__ int ts_div_small(int a, int b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"((float)b));
  int q = (int)((float)a * r);
  const int rem = a - q * b;
  if (abs(rem) >= abs(b)) q += ((a ^ b) < 0) ? -1 : 1;
  return q;
}
__device__ __forceinline__ unsigned int ts_div_small(unsigned int a, unsigned int b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"((float)b));
  unsigned int q = (unsigned int)((float)a * r);
  // q is the quotient or one below it (never above: see above), so a - q * b >= 0.
  if (a - q * b >= b) q += 1u;
  return q;
}
__device__ __forceinline__ int ts_div(int a, int b) {
  if (b == 0) return 0;
  if (ts_div_small_ok(a, b)) return ts_div_small(a, b);
  if (b == -1) return ts_sub(0, a);  // MIN / -1 wraps to MIN
  return a / b;
}
__device__ __forceinline__ long long ts_div(long long a, long long b) {
  if (b == 0) return 0;
  if (b == -1) return ts_sub(0LL, a);
  return a / b;
}
__device__ __forceinline__ unsigned int ts_div(unsigned int a, unsigned int b) {
  if (b == 0u) return 0u;
  return ts_div_small_ok(a, b) ? ts_div_small(a, b) : a / b;
}
__device__ __forceinline__ unsigned long long ts_div(unsigned long long a, unsigned long long b) {
  return b == 0 ? 0ull : a / b;
}

// max, min: the same comparisons as src/element.rs, so ties (0.0 vs -0.0) pick the same input.
__device__ __forceinline__ float ts_max(float a, float b) {
  return (a != a || b != b) ? ts_nan_f32() : (a > b ? a : b);
}
__device__ __forceinline__ double ts_max(double a, double b) {
  return (a != a || b != b) ? ts_nan_f64() : (a > b ? a : b);
}
__device__ __forceinline__ int ts_max(int a, int b) { return a > b ? a : b; }
__device__ __forceinline__ long long ts_max(long long a, long long b) { return a > b ? a : b; }
__device__ __forceinline__ unsigned int ts_max(unsigned int a, unsigned int b) { return a > b ? a : b; }
__device__ __forceinline__ unsigned long long ts_max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

__device__ __forceinline__ float ts_min(float a, float b) {
  return (a != a || b != b) ? ts_nan_f32() : (a < b ? a : b);
}
__device__ __forceinline__ double ts_min(double a, double b) {
  return (a != a || b != b) ? ts_nan_f64() : (a < b ? a : b);
}
__device__ __forceinline__ int ts_min(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ long long ts_min(long long a, long long b) { return a < b ? a : b; }
__device__ __forceinline__ unsigned int ts_min(unsigned int a, unsigned int b) { return a < b ? a : b; }
__device__ __forceinline__ unsigned long long ts_min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }

// neg: wrapping for integers (-MIN == MIN); for the unsigned types (not Signed in Rust) it is
// 2^width - a.
__device__ __forceinline__ float ts_neg(float a) { return -a; }
__device__ __forceinline__ double ts_neg(double a) { return -a; }
__device__ __forceinline__ int ts_neg(int a) { return ts_sub(0, a); }
__device__ __forceinline__ long long ts_neg(long long a) { return ts_sub(0LL, a); }
__device__ __forceinline__ unsigned int ts_neg(unsigned int a) { return ts_sub(0u, a); }
__device__ __forceinline__ unsigned long long ts_neg(unsigned long long a) { return ts_sub(0ull, a); }

// abs: clears the sign bit of floats (also of -0.0 and NaN); wrapping for integers.
__device__ __forceinline__ float ts_abs(float a) { return fabsf(a); }
__device__ __forceinline__ double ts_abs(double a) { return fabs(a); }
__device__ __forceinline__ int ts_abs(int a) { return a < 0 ? ts_neg(a) : a; }
__device__ __forceinline__ long long ts_abs(long long a) { return a < 0 ? ts_neg(a) : a; }
__device__ __forceinline__ unsigned int ts_abs(unsigned int a) { return a; }
__device__ __forceinline__ unsigned long long ts_abs(unsigned long long a) { return a; }

// sign: -1, 0 or 1; floats keep 0.0, -0.0 and NaN as they are.
__device__ __forceinline__ float ts_sign(float a) { return a > 0.0f ? 1.0f : (a < 0.0f ? -1.0f : a); }
__device__ __forceinline__ double ts_sign(double a) { return a > 0.0 ? 1.0 : (a < 0.0 ? -1.0 : a); }
__device__ __forceinline__ int ts_sign(int a) { return a > 0 ? 1 : (a < 0 ? -1 : 0); }
__device__ __forceinline__ long long ts_sign(long long a) { return a > 0 ? 1LL : (a < 0 ? -1LL : 0LL); }
__device__ __forceinline__ unsigned int ts_sign(unsigned int a) { return a > 0u ? 1u : 0u; }
__device__ __forceinline__ unsigned long long ts_sign(unsigned long long a) { return a > 0ull ? 1ull : 0ull; }

// pow. Floats: the C library's pow (powf for float). Integers: exponentiation by squaring,
// wrapping like Rust's `wrapping_pow`; a negative exponent gives 0 (the truncated value of
// a^b with |a| >= 2), except 1^b == 1 and (-1)^b == +-1 by parity; 0^negative gives 0 (no
// infinity to return). 0^0 == 1.
__device__ __forceinline__ float ts_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double ts_pow(double a, double b) { return pow(a, b); }

__device__ __forceinline__ unsigned long long ts_pow_bits(unsigned long long base, unsigned long long e) {
  unsigned long long r = 1;
  while (e != 0) {
    if (e & 1ull) r *= base;
    base *= base;
    e >>= 1;
  }
  return r;
}
__device__ __forceinline__ int ts_pow(int a, int b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
  return (int)(unsigned int)ts_pow_bits((unsigned int)a, (unsigned long long)b);
}
__device__ __forceinline__ long long ts_pow(long long a, long long b) {
  if (b < 0) return a == 1 ? 1LL : (a == -1 ? ((b & 1) ? -1LL : 1LL) : 0LL);
  return (long long)ts_pow_bits((unsigned long long)a, (unsigned long long)b);
}
__device__ __forceinline__ unsigned int ts_pow(unsigned int a, unsigned int b) {
  return (unsigned int)ts_pow_bits(a, b);
}
__device__ __forceinline__ unsigned long long ts_pow(unsigned long long a, unsigned long long b) {
  return ts_pow_bits(a, b);
}

// sigmoid(a) = 1 / (1 + e^-a) and silu(a) = a * sigmoid(a). Transcendental ops: the CPU
// engine computes the defining formulas, the GPU stays within the op table's tolerances.
//
// In float, written as e = e^-|a| (in [0, 1], so no overflow) and
// sigmoid(a) = (a >= 0 ? 1 : e) / (1 + e): the denominator lies in [1, 2], so the quotient is
// rcp.approx (within 1 ulp there) and one Newton correction of the quotient, two fma, with
// no branch. An IEEE division (`1 / d`) is a range check, a branch to a slow path and the
// same Newton steps: the branch splits a fused chain at every element and keeps the compiler
// from interleaving the elements of a vector. Error: the quotient is within about 0.5 ulp of
// n / d, so the result inherits expf's error (2 ulp) and the rounding of 1 + e, as an IEEE
// division would (measured faster, docs/PERFORMANCE.md); tests/it/pointwise.rs holds it to tol(3, 1.0) (sigmoid) and tol(3, 2.0)
// (silu) plus the GPU's libm allowance. NaN gives NaN (a >= 0 is false, e is NaN); +inf gives
// 1 (silu: +inf); -inf gives +0 (silu: NaN, as -inf / inf).

// n / d for d in [1, 2] and any n: rcp.approx has no subnormal or overflow case there, and
// the fma residual n - d * q is exact for q within a few ulp of n / d.
__device__ __forceinline__ float ts_div_by_1_to_2(float n, float d) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  const float q = n * r;
  return fmaf(r, fmaf(-d, q, n), q);
}
__device__ __forceinline__ float ts_sigmoid(float a) {
  const float e = expf(-fabsf(a));
  return ts_div_by_1_to_2(a >= 0.0f ? 1.0f : e, 1.0f + e);
}
__device__ __forceinline__ float ts_silu(float a) { return a * ts_sigmoid(a); }
__device__ __forceinline__ double ts_sigmoid(double a) { return 1.0 / (1.0 + exp(-a)); }
__device__ __forceinline__ double ts_silu(double a) { return a / (1.0 + exp(-a)); }

// ---- integer, bitwise, logical and float-predicate ops (issue 26) ----------------------
//
// Mirrors src/element.rs (`DivRem`, `Bitwise`, `Integer`) and the op table's closures. Every
// helper has an overload per compute type it is used with: float, double, int, long long,
// unsigned int (u8, u16, u32), unsigned long long (u64) and bool. The narrow types (i8, i16,
// u8, u16) compute in 32 bits and are cut to their width at the store (see the top of this
// file): every helper here gives, for in-range inputs, a value whose low bits are the narrow
// type's result (shifts by 8 to 31 of an 8-bit value give 0 or the sign fill either way).

// fmod: C fmod for floats (exact); integers truncate, 0 on division by zero, MIN % -1 == 0.
__device__ __forceinline__ float ts_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double ts_fmod(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ int ts_fmod(int a, int b) {
  if (b == 0) return 0;
  if (ts_div_small_ok(a, b)) return a - ts_div_small(a, b) * b;
  return b == -1 ? 0 : a % b;
}
__device__ __forceinline__ long long ts_fmod(long long a, long long b) {
  return (b == 0 || b == -1) ? 0LL : a % b;
}
__device__ __forceinline__ unsigned int ts_fmod(unsigned int a, unsigned int b) {
  if (b == 0u) return 0u;
  return ts_div_small_ok(a, b) ? a - ts_div_small(a, b) * b : a % b;
}
__device__ __forceinline__ unsigned long long ts_fmod(unsigned long long a, unsigned long long b) {
  return b == 0ull ? 0ull : a % b;
}

// remainder: fmod, plus b when nonzero and of the other sign (PyTorch's remainder).
template <typename T>
__device__ __forceinline__ T ts_remainder(T a, T b) {
  const T m = ts_fmod(a, b);
  return (m != (T)0 && ((b < (T)0) != (m < (T)0))) ? ts_add(m, b) : m;
}

// floor_divide. Floats: PyTorch's div_floor_floating; integers: floor, 0 on division by zero,
// MIN / -1 wraps to MIN.
template <typename T>
__device__ __forceinline__ T ts_floor_div_float(T a, T b) {
  if (b == (T)0) return a / b;
  const T m = fmod(a, b);
  T div = (a - m) / b;
  if (m != (T)0 && ((b < (T)0) != (m < (T)0))) div -= (T)1;
  if (div != (T)0) {
    T f = floor(div);
    if (div - f > (T)0.5) f += (T)1;
    return f;
  }
  return copysign((T)0, a / b);
}
__device__ __forceinline__ float ts_floor_div(float a, float b) { return ts_floor_div_float(a, b); }
__device__ __forceinline__ double ts_floor_div(double a, double b) { return ts_floor_div_float(a, b); }
template <typename T>
__device__ __forceinline__ T ts_floor_div_int(T a, T b) {
  if (b == 0) return 0;
  const T q = ts_div(a, b);
  // The remainder from the quotient (one division, not two); wrapping, so MIN / -1 (q ==
  // MIN) gives r == 0 as C's MIN % -1 would.
  const T r = ts_sub(a, ts_mul(q, b));
  return (r != 0 && ((r < 0) != (b < 0))) ? ts_sub(q, (T)1) : q;
}
__device__ __forceinline__ int ts_floor_div(int a, int b) { return ts_floor_div_int(a, b); }
__device__ __forceinline__ long long ts_floor_div(long long a, long long b) { return ts_floor_div_int(a, b); }
__device__ __forceinline__ unsigned int ts_floor_div(unsigned int a, unsigned int b) { return ts_div(a, b); }
__device__ __forceinline__ unsigned long long ts_floor_div(unsigned long long a, unsigned long long b) {
  return ts_div(a, b);
}

// bitwise and, or, xor, not (bool: logical). `~` of an unsigned narrow value sets the high
// bits too; the store keeps the low ones.
__device__ __forceinline__ int ts_bit_and(int a, int b) { return a & b; }
__device__ __forceinline__ long long ts_bit_and(long long a, long long b) { return a & b; }
__device__ __forceinline__ unsigned int ts_bit_and(unsigned int a, unsigned int b) { return a & b; }
__device__ __forceinline__ unsigned long long ts_bit_and(unsigned long long a, unsigned long long b) { return a & b; }
__device__ __forceinline__ bool ts_bit_and(bool a, bool b) { return a && b; }
__device__ __forceinline__ int ts_bit_or(int a, int b) { return a | b; }
__device__ __forceinline__ long long ts_bit_or(long long a, long long b) { return a | b; }
__device__ __forceinline__ unsigned int ts_bit_or(unsigned int a, unsigned int b) { return a | b; }
__device__ __forceinline__ unsigned long long ts_bit_or(unsigned long long a, unsigned long long b) { return a | b; }
__device__ __forceinline__ bool ts_bit_or(bool a, bool b) { return a || b; }
__device__ __forceinline__ int ts_bit_xor(int a, int b) { return a ^ b; }
__device__ __forceinline__ long long ts_bit_xor(long long a, long long b) { return a ^ b; }
__device__ __forceinline__ unsigned int ts_bit_xor(unsigned int a, unsigned int b) { return a ^ b; }
__device__ __forceinline__ unsigned long long ts_bit_xor(unsigned long long a, unsigned long long b) { return a ^ b; }
__device__ __forceinline__ bool ts_bit_xor(bool a, bool b) { return a != b; }
__device__ __forceinline__ int ts_bit_not(int a) { return ~a; }
__device__ __forceinline__ long long ts_bit_not(long long a) { return ~a; }
__device__ __forceinline__ unsigned int ts_bit_not(unsigned int a) { return ~a; }
__device__ __forceinline__ unsigned long long ts_bit_not(unsigned long long a) { return ~a; }
__device__ __forceinline__ bool ts_bit_not(bool a) { return !a; }

// Shifts (PyTorch's bitwise_left_shift / bitwise_right_shift): a shift by a negative amount
// or by at least the bit width gives 0, except a right shift of a negative signed value,
// which gives -1 (sign fill). The narrow types shift in 32 bits: the bits the store keeps are
// those of the narrow shift, and a shift by the narrow width or more leaves none of them.
__device__ __forceinline__ int ts_shl(int a, int b) {
  return (b < 0 || b >= 32) ? 0 : (int)((unsigned int)a << b);
}
__device__ __forceinline__ long long ts_shl(long long a, long long b) {
  return (b < 0 || b >= 64) ? 0LL : (long long)((unsigned long long)a << b);
}
__device__ __forceinline__ unsigned int ts_shl(unsigned int a, unsigned int b) {
  return b >= 32u ? 0u : a << b;
}
__device__ __forceinline__ unsigned long long ts_shl(unsigned long long a, unsigned long long b) {
  return b >= 64ull ? 0ull : a << b;
}
__device__ __forceinline__ int ts_shr(int a, int b) { return (b < 0 || b >= 32) ? (a >> 31) : (a >> b); }
__device__ __forceinline__ long long ts_shr(long long a, long long b) {
  return (b < 0 || b >= 64) ? (a >> 63) : (a >> b);
}
__device__ __forceinline__ unsigned int ts_shr(unsigned int a, unsigned int b) {
  return b >= 32u ? 0u : a >> b;
}
__device__ __forceinline__ unsigned long long ts_shr(unsigned long long a, unsigned long long b) {
  return b >= 64ull ? 0ull : a >> b;
}

// gcd and lcm on magnitudes in the unsigned type of the width: gcd is non-negative except
// gcd(MIN, MIN) and gcd(MIN, 0), 2^(bits-1), which wraps to MIN; lcm is
// |a / gcd * b| wrapping (PyTorch's calc_lcm).
template <typename U>
__device__ __forceinline__ U ts_gcd_bits(U a, U b) {
  while (a != 0) {
    const U c = a;
    a = ts_fmod(b, a);  // the float-reciprocal path for 32-bit values below 2^22
    b = c;
  }
  return b;
}
__device__ __forceinline__ unsigned int ts_mag(int a) { return a < 0 ? 0u - (unsigned int)a : (unsigned int)a; }
__device__ __forceinline__ unsigned long long ts_mag(long long a) {
  return a < 0 ? 0ull - (unsigned long long)a : (unsigned long long)a;
}
__device__ __forceinline__ int ts_gcd(int a, int b) { return (int)ts_gcd_bits(ts_mag(a), ts_mag(b)); }
__device__ __forceinline__ long long ts_gcd(long long a, long long b) {
  return (long long)ts_gcd_bits(ts_mag(a), ts_mag(b));
}
__device__ __forceinline__ unsigned int ts_gcd(unsigned int a, unsigned int b) {
  return ts_gcd_bits(a, b);
}
__device__ __forceinline__ unsigned long long ts_gcd(unsigned long long a, unsigned long long b) {
  return ts_gcd_bits(a, b);
}
__device__ __forceinline__ int ts_lcm(int a, int b) {
  const unsigned int g = ts_gcd_bits(ts_mag(a), ts_mag(b));
  return g == 0u ? 0 : ts_abs((int)(ts_div(ts_mag(a), g) * ts_mag(b)));
}
__device__ __forceinline__ long long ts_lcm(long long a, long long b) {
  const unsigned long long g = ts_gcd_bits(ts_mag(a), ts_mag(b));
  return g == 0ull ? 0LL : ts_abs((long long)(ts_mag(a) / g * ts_mag(b)));
}
__device__ __forceinline__ unsigned int ts_lcm(unsigned int a, unsigned int b) {
  const unsigned int g = ts_gcd(a, b);
  return g == 0u ? 0u : ts_div(a, g) * b;
}
__device__ __forceinline__ unsigned long long ts_lcm(unsigned long long a, unsigned long long b) {
  const unsigned long long g = ts_gcd(a, b);
  return g == 0ull ? 0ull : a / g * b;
}

// Logical and, or (nonzero is true, NaN included), for every compute type.
template <typename T>
__device__ __forceinline__ bool ts_logical_and(T a, T b) { return a != (T)0 && b != (T)0; }
template <typename T>
__device__ __forceinline__ bool ts_logical_or(T a, T b) { return a != (T)0 || b != (T)0; }

// Float predicates; integers and bool are finite and never NaN or infinite.
__device__ __forceinline__ float ts_inf_f32() { return __int_as_float(0x7F800000); }
__device__ __forceinline__ double ts_inf_f64() { return __longlong_as_double(0x7FF0000000000000LL); }
__device__ __forceinline__ bool ts_isposinf(float a) { return a == ts_inf_f32(); }
__device__ __forceinline__ bool ts_isposinf(double a) { return a == ts_inf_f64(); }
__device__ __forceinline__ bool ts_isneginf(float a) { return a == -ts_inf_f32(); }
__device__ __forceinline__ bool ts_isneginf(double a) { return a == -ts_inf_f64(); }
__device__ __forceinline__ bool ts_isinf(float a) { return fabsf(a) == ts_inf_f32(); }
__device__ __forceinline__ bool ts_isinf(double a) { return fabs(a) == ts_inf_f64(); }
__device__ __forceinline__ bool ts_isfinite(float a) { return fabsf(a) < ts_inf_f32(); }
__device__ __forceinline__ bool ts_isfinite(double a) { return fabs(a) < ts_inf_f64(); }
// The sign bit, of -0.0 and NaN too.
__device__ __forceinline__ bool ts_signbit(float a) { return __float_as_int(a) < 0; }
__device__ __forceinline__ bool ts_signbit(double a) { return __double_as_longlong(a) < 0; }
#define TS_INT_PREDICATES(T)                                          \
  __device__ __forceinline__ bool ts_isposinf(T) { return false; }    \
  __device__ __forceinline__ bool ts_isneginf(T) { return false; }    \
  __device__ __forceinline__ bool ts_isinf(T) { return false; }       \
  __device__ __forceinline__ bool ts_isfinite(T) { return true; }
TS_INT_PREDICATES(int)
TS_INT_PREDICATES(long long)
TS_INT_PREDICATES(unsigned int)
TS_INT_PREDICATES(unsigned long long)
TS_INT_PREDICATES(bool)
#undef TS_INT_PREDICATES
__device__ __forceinline__ bool ts_signbit(int a) { return a < 0; }
__device__ __forceinline__ bool ts_signbit(long long a) { return a < 0; }
__device__ __forceinline__ bool ts_signbit(unsigned int) { return false; }
__device__ __forceinline__ bool ts_signbit(unsigned long long) { return false; }

// nextafter(a, b) on the grid of the element type, given its epsilon `eps` (the spacing of
// the values in [1, 2)) and its smallest positive subnormal `tiny`, both exact in the compute
// type: the half types step in their own representation while computing in float. Every
// value computed is a value of the element type (or 2^(emax+1), the step up from the largest
// finite value, which rounds to infinity on store), so the arithmetic is exact. As C's
// nextafter: b when a == b, the sign of a kept when the step reaches zero, NaN in gives NaN.
template <typename T>
__device__ __forceinline__ T ts_nextafter(T a, T b, T eps, T tiny) {
  if (a != a || b != b) return a + b;
  if (a == b) return b;
  if (a == (T)0) return b > (T)0 ? tiny : -tiny;
  if (a - a != a - a) {  // infinite: the largest finite value, (2 - eps) * 2^emax
    const T big = ((T)2 - eps) * ((eps / tiny) * (T)2);
    return a > (T)0 ? big : -big;
  }
  const T mag = fabs(a);
  int e;
  (void)frexp(mag, &e);  // mag = f * 2^e, f in [0.5, 1)
  T ulp = fmax(ldexp(eps, e - 1), tiny);
  const bool away = (b > a) == (a > (T)0);
  if (!away && mag == ldexp((T)1, e - 1)) ulp = fmax(ulp * (T)0.5, tiny);
  const T r = (away == (a > (T)0)) ? a + ulp : a - ulp;
  return r == (T)0 ? copysign(r, a) : r;
}

// ---- float math ops (issue 26) ---------------------------------------------------------
//
// The helpers of the float math ops of the op table, for the compute types float and double
// (and, for ts_fmax / ts_fmin, the integer compute types): the formulas of
// src/ops/float_math.rs and src/ops/special.rs, PyTorch's, in the same order, so the GPU
// differs from the CPU engine only by the libm functions' last-bit errors (and by fused
// multiply-adds NVRTC's --fmad forms), within the ulps tests/it/pointwise_float_math.rs
// tabulates. erfinv and lgamma are CUDA's own (PyTorch's CUDA kernels call them too).

template <typename T>
__device__ __forceinline__ T ts_inf() {
  return (T)__longlong_as_double(0x7FF0000000000000LL);
}

// ln(e^a + e^b) = max + log1p(e^-|a - b|); a when a == b is infinite (-inf, -inf gives -inf).
template <typename T>
__device__ __forceinline__ T ts_logaddexp(T a, T b) {
  if (isinf(a) && a == b) return a;
  const T m = a < b ? b : a;
  return m + log1p(exp(-fabs(a - b)));
}
template <typename T>
__device__ __forceinline__ T ts_logaddexp2(T a, T b) {
  if (isinf(a) && a == b) return a;
  const T m = a < b ? b : a;
  return m + log1p(exp2(-fabs(a - b))) * (T)1.4426950408889634;
}

// a^b in double, rounded once to the compute type.
__device__ __forceinline__ float ts_float_power(float a, float b) {
  return (float)pow((double)a, (double)b);
}
__device__ __forceinline__ double ts_float_power(double a, double b) { return pow(a, b); }

// a * ln(b) and a * ln(1 + b): 0 where a == 0 unless b is NaN.
template <typename T>
__device__ __forceinline__ T ts_xlogy(T a, T b) {
  if (b != b) return b;
  return a == (T)0 ? (T)0 : a * log(b);
}
template <typename T>
__device__ __forceinline__ T ts_xlog1py(T a, T b) {
  if (b != b) return b;
  return a == (T)0 ? (T)0 : a * log1p(b);
}

// sin(pi a) / (pi a), 1 at 0.
template <typename T>
__device__ __forceinline__ T ts_sinc(T a) {
  if (a == (T)0) return (T)1;
  const T p = (T)3.14159265358979323846 * a;
  return sin(p) / p;
}

// 10^trunc(|d|) by squaring (NaN: 0 decimals; at most 400), as src/ops/float_math.rs `pow10`.
__device__ __forceinline__ double ts_pow10(double d) {
  unsigned int n = d != d ? 0u : (unsigned int)fmin(fabs(d), 400.0);
  double r = 1.0, b = 10.0;
  while (n != 0u) {
    if (n & 1u) r *= b;
    b *= b;
    n >>= 1;
  }
  return r;
}
// PyTorch's round(decimals=d): rint(a * 10^d) / 10^d, or rint(a / 10^-d) * 10^-d for d < 0.
template <typename T>
__device__ __forceinline__ T ts_round_decimals(T a, T d) {
  const T ten = (T)ts_pow10((double)d);
  return d < (T)0 ? rint(a / ten) * ten : rint(a * ten) / ten;
}

// PyTorch's logit(a, eps): a clamped to [eps, 1 - eps] (NaN kept) when eps >= 0.
template <typename T>
__device__ __forceinline__ T ts_logit_eps(T a, T eps) {
  T x = a;
  if (eps >= (T)0) {
    const T hi = (T)1 - eps;
    x = a < eps ? eps : (a > hi ? hi : a);
  }
  return log(x / ((T)1 - x));
}

// C's fmax / fmin: a NaN input is ignored (NaN only when both are); ties (0.0, -0.0) give b.
template <typename T>
__device__ __forceinline__ T ts_fmax(T a, T b) {
  return a != a ? b : ((b != b || a > b) ? a : b);
}
template <typename T>
__device__ __forceinline__ T ts_fmin(T a, T b) {
  return a != a ? b : ((b != b || a < b) ? a : b);
}

// digamma: PyTorch's calc_digamma (Cephes psi), as src/ops/special.rs.
template <typename T>
__device__ __forceinline__ T ts_digamma(T x) {
  if (x == (T)0) return copysign(ts_inf<T>(), -x);
  T result = (T)0;
  if (x < (T)0) {
    if (x == trunc(x)) return ts_inf<T>() - ts_inf<T>();
    T f = x - trunc(x);
    if (f < (T)-0.5) f += (T)1;
    const double r = (double)f;
    result = (T)(-3.14159265358979323846 / tan(3.14159265358979323846 * r));
    x = (T)1 - x;
  }
  while (x < (T)10) {
    result -= (T)1 / x;
    x += (T)1;
  }
  if (x == (T)10) return result + (T)2.25175258906672110764;
  T y = (T)0;
  if (x < (T)1.0e17) {
    const T z = (T)1 / (x * x);
    T p = (T)0;
    p = p * z + (T)8.33333333333333333333E-2;
    p = p * z + (T)-2.10927960927960927961E-2;
    p = p * z + (T)7.57575757575757575758E-3;
    p = p * z + (T)-4.16666666666666666667E-3;
    p = p * z + (T)3.96825396825396825397E-3;
    p = p * z + (T)-8.33333333333333333333E-3;
    p = p * z + (T)8.33333333333333333333E-2;
    y = z * p;
  }
  return log(x) - (T)0.5 / x - y + result;
}

// i0: Cephes' Chebyshev series (PyTorch's calc_i0), as src/ops/special.rs.
__constant__ double ts_i0_a[30] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15,  -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11,  -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8,  6.04699502254191894932E-8,  -2.67079385394061173391E-7,
    1.11738753912010371815E-6,   -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5,  1.88502885095841655729E-4,  -5.76375574538582365885E-4,
    1.63947561694133579842E-3,   -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2,  4.93052842396707084878E-2,  -9.49010970480476444210E-2,
    1.71620901522208775349E-1,   -3.04682672343198398683E-1, 6.76795274409476084995E-1};
__constant__ double ts_i0_b[25] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17,  -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15,  3.81168066935262242075E-15,  -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14,  3.85277838274214270114E-13,
    7.18012445138366623367E-13,  -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11,  4.94060238822496958910E-10,
    3.39623202570838634515E-9,   2.26666899049817806459E-8,   2.04891858946906374183E-7,
    2.89137052083475648297E-6,   6.88975834691682398426E-5,   3.36911647825569408990E-3,
    8.04490411014108831608E-1};
template <typename T>
__device__ __forceinline__ T ts_chbevl(T x, const double* c, int n) {
  T b0 = (T)c[0], b1 = (T)0, b2 = (T)0;
  for (int i = 1; i < n; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = x * b1 - b2 + (T)c[i];
  }
  return (T)0.5 * (b0 - b2);
}
template <typename T>
__device__ __forceinline__ T ts_i0(T a) {
  const T x = fabs(a);
  if (x == ts_inf<T>()) return x;
  if (x <= (T)8) return exp(x) * ts_chbevl(x / (T)2 - (T)2, ts_i0_a, 30);
  return exp(x) * ts_chbevl((T)32 / x - (T)2, ts_i0_b, 25) / sqrt(x);
}

#endif  // TYPESTATE_TENSOR_OPS_CUH
