// ts_f16 and ts_bf16: the crate's 16-bit float storage types, with conversions that match
// Rust's `half` crate (2.x) bit for bit on every non-NaN value, and keep NaN a NaN.
//
// NVRTC has no toolkit headers (no cuda_fp16.h / cuda_bf16.h), so these are our own
// one-field structs; arithmetic is done in float (ops.cuh) and rounded once on store, as
// `half`'s operators and PyTorch do.
//
// Rounding is round-to-nearest-even everywhere, like `half::f16::from_f32`. Conversions from
// double copy `half`'s quirks rather than round correctly, so the GPU and the CPU engine agree:
// - f64 -> f16: `half` on x86-64 with F16C (every current x86 host) rounds to f32 first, then to
//   f16 (double rounding). We do the same.
// - f64 -> bf16: `half` drops the low 32 bits of the double, then rounds the rest to nearest
//   even (no hardware path on any host). Ported below bit for bit.
//
// No #include: NVRTC compiles this with builtin types only.
#ifndef TYPESTATE_TENSOR_HALF_CUH
#define TYPESTATE_TENSOR_HALF_CUH

struct __align__(2) ts_f16 {
  unsigned short bits;
};

struct __align__(2) ts_bf16 {
  unsigned short bits;
};

// ---- f16 -------------------------------------------------------------------------------

// Exact for every non-NaN value (f32 holds every f16). A NaN: `cvt.f32.f16` gives the
// canonical NaN, without the sign and payload that `half::f16::to_f32` (and x86's F16C) keep.
// Only a result that reads a NaN's bits differs for that (signbit, copysign, and a cast that
// stores the NaN wider), so a program with such an op defines TS_EXACT_HALF_NANS before these
// headers (src/engine_gpu/kernel/source.rs) and gets the widening `half` does: a NaN keeps
// its sign and payload, quieted. Elsewhere the test costs more than it gives: one compare and
// select per loaded element, 15 to 20 % of f16 `erfc`, `acosh` and `where` on an H200, for
// NaN results whose sign and payload no op defines (PyTorch's CUDA kernels widen with the
// same `cvt`).
__device__ __forceinline__ float ts_f16_to_float(ts_f16 h) {
#ifdef TS_EXACT_HALF_NANS
  const unsigned int bits = h.bits;
  if ((bits & 0x7FFFu) > 0x7C00u) {
    return __uint_as_float(((bits & 0x8000u) << 16) | 0x7FC00000u | ((bits & 0x3FFu) << 13));
  }
#endif
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}

// Round to nearest even, overflow to infinity, NaN stays NaN (`half::f16::from_f32`).
__device__ __forceinline__ ts_f16 ts_float_to_f16(float f) {
  ts_f16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}

// `half::f16::from_f64` on x86-64 hosts: through f32 (see the header comment).
__device__ __forceinline__ ts_f16 ts_double_to_f16(double d) {
  return ts_float_to_f16((float)d);
}

// ---- bf16 ------------------------------------------------------------------------------

// A bf16 is the top half of an f32. `half` sets the quiet bit of a NaN; so do we where a
// result shows it (TS_EXACT_HALF_NANS, as for f16 above: 10 % of bf16 `tanh` otherwise).
// Arithmetic on a signaling NaN quiets it anyway; only a stored or inspected NaN differs.
__device__ __forceinline__ float ts_bf16_to_float(ts_bf16 h) {
  unsigned int bits = (unsigned int)h.bits;
#ifdef TS_EXACT_HALF_NANS
  if ((bits & 0x7FFFu) > 0x7F80u) {
    bits |= 0x0040u;
  }
#endif
  return __uint_as_float(bits << 16);
}

// Round to nearest even, NaN stays NaN (`half::bf16::from_f32`).
__device__ __forceinline__ ts_bf16 ts_float_to_bf16(float f) {
  ts_bf16 h;
#if __CUDA_ARCH__ >= 800
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
  // `half`'s own algorithm, for devices without the instruction.
  unsigned int x = __float_as_uint(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
    h.bits = (unsigned short)((x >> 16) | 0x0040u);
  } else {
    const unsigned int round_bit = 0x00008000u;
    unsigned int r = x >> 16;
    if ((x & round_bit) != 0 && (x & (3 * round_bit - 1)) != 0) {
      r += 1;
    }
    h.bits = (unsigned short)r;
  }
#endif
  return h;
}

// `half::bf16::from_f64`, ported line for line: only the high 32 bits of the double take part.
__device__ __forceinline__ ts_bf16 ts_double_to_bf16(double d) {
  unsigned long long val = (unsigned long long)__double_as_longlong(d);
  unsigned int x = (unsigned int)(val >> 32);
  unsigned int sign = x & 0x80000000u;
  unsigned int exp = x & 0x7FF00000u;
  unsigned int man = x & 0x000FFFFFu;
  ts_bf16 h;
  if (exp == 0x7FF00000u) {
    // Infinity or NaN: set the quiet bit of a NaN, keep the high mantissa bits.
    unsigned int nan_bit = (man == 0 && (unsigned int)val == 0) ? 0u : 0x0040u;
    h.bits = (unsigned short)((sign >> 16) | 0x7F80u | nan_bit | (man >> 13));
    return h;
  }
  unsigned int half_sign = sign >> 16;
  int half_exp = (int)(exp >> 20) - 1023 + 127;
  if (half_exp >= 0xFF) {
    h.bits = (unsigned short)(half_sign | 0x7F80u);
    return h;
  }
  if (half_exp <= 0) {
    if (7 - half_exp > 21) {
      h.bits = (unsigned short)half_sign;
      return h;
    }
    unsigned int m = man | 0x00100000u;
    unsigned int half_man = m >> (14 - half_exp);
    unsigned int round_bit = 1u << (13 - half_exp);
    if ((m & round_bit) != 0 && (m & (3 * round_bit - 1)) != 0) {
      half_man += 1;
    }
    h.bits = (unsigned short)(half_sign | half_man);
    return h;
  }
  unsigned int r = half_sign | ((unsigned int)half_exp << 7) | (man >> 13);
  const unsigned int round_bit = 0x00001000u;
  if ((man & round_bit) != 0 && (man & (3 * round_bit - 1)) != 0) {
    r += 1;
  }
  h.bits = (unsigned short)r;
  return h;
}

#endif  // TYPESTATE_TENSOR_HALF_CUH
