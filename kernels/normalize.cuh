// Statistics and normalisations over rows (issue 28): softmax, log_softmax, layer_norm,
// rms_norm (row to row) and logsumexp, var / std (with the mean), the 1, 2 and inf norms (one
// value per row). The host (src/engine_gpu/normalize/) hands every job as a source [rows, n]
// of strides (rs, cs) and a row-major destination ([rows, n] or [rows]).
//
// One kernel per op and form:
// - WARP: a warp per row, TS_NORM_THREADS / 32 rows per block, reductions by shuffles only;
//   else a block of TS_NORM_THREADS threads per row, reductions through shared memory.
// - CHUNKS > 0: each thread loads its CHUNKS * VEC elements of the row once into registers
//   (the row is read from memory once, written once); every pass (max, sum, variance, the
//   output) then runs on the registers. CHUNKS == 0 is the fallback for rows longer than a
//   block can hold: every pass reads the row again from memory (L2 often holds it).
// - VEC > 1: 16-byte vector loads and stores (of the weight and bias too), used by the host
//   only where the row is contiguous (cs == 1), n and rs are multiples of VEC and every
//   pointer is 16-byte aligned.
// Arithmetic is in A (float for f16, bf16, f32; double for f64), rounded once on store.
// Max folds propagate NaN (a row with NaN gives NaN, as PyTorch's).
//
// Requires half.cuh and ops.cuh before it. No #include.
#ifndef TYPESTATE_TENSOR_NORMALIZE_CUH
#define TYPESTATE_TENSOR_NORMALIZE_CUH

#define TS_NORM_THREADS 256

// The ops (the host's `NormOp` codes).
#define TS_NORM_SOFTMAX 0
#define TS_NORM_LOG_SOFTMAX 1
#define TS_NORM_LAYER 2
#define TS_NORM_RMS 3
#define TS_NORM_LSE 4
#define TS_NORM_VAR 5
#define TS_NORM_L1 6
#define TS_NORM_L2 7
#define TS_NORM_LINF 8

// `flags` bits.
#define TS_NORM_WEIGHT 1
#define TS_NORM_BIAS 2
#define TS_NORM_SQRT 4
#define TS_NORM_MEAN 8

template <typename T>
struct ts_norm_acc {
  typedef float type;
};
template <>
struct ts_norm_acc<double> {
  typedef double type;
};

__device__ __forceinline__ float ts_nexp(float x) { return expf(x); }
__device__ __forceinline__ double ts_nexp(double x) { return exp(x); }
__device__ __forceinline__ float ts_nlog(float x) { return logf(x); }
__device__ __forceinline__ double ts_nlog(double x) { return log(x); }
__device__ __forceinline__ float ts_nsqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double ts_nsqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float ts_nrsqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ double ts_nrsqrt(double x) { return rsqrt(x); }
__device__ __forceinline__ float ts_nabs(float x) { return fabsf(x); }
__device__ __forceinline__ double ts_nabs(double x) { return fabs(x); }
__device__ __forceinline__ bool ts_nisinf(float x) { return isinf(x); }
__device__ __forceinline__ bool ts_nisinf(double x) { return isinf(x); }
__device__ __forceinline__ float ts_ninf(float) { return __int_as_float(0x7F800000); }
__device__ __forceinline__ double ts_ninf(double) { return __longlong_as_double(0x7FF0000000000000LL); }

// max(a, b), NaN if either is NaN.
template <typename A>
__device__ __forceinline__ A ts_nmax(A a, A b) {
  return (a > b || a != a) ? a : b;
}

// The whole group's sum / max of `v`, in every thread of the group. Block groups use `smem`
// (32 words) and synchronise the block: every thread of the block must call it.
template <typename A, bool WARP, bool MAX>
__device__ __forceinline__ A ts_ngroup(A v, A* smem) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const A u = __shfl_xor_sync(0xffffffffu, v, o);
    v = MAX ? ts_nmax(v, u) : v + u;
  }
  if constexpr (!WARP) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    __syncthreads();  // the previous fold's readers are done with smem
    if (lane == 0) {
      smem[wid] = v;
    }
    __syncthreads();
    const int warps = blockDim.x >> 5;
    v = lane < warps ? smem[lane] : (MAX ? -ts_ninf(A(0)) : A(0));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const A u = __shfl_xor_sync(0xffffffffu, v, o);
      v = MAX ? ts_nmax(v, u) : v + u;
    }
  }
  return v;
}

template <typename T, int VEC>
struct __align__(sizeof(T) * VEC) ts_nvec {
  T v[VEC];
};

// One row as a thread of its group sees it: element j of the thread's share is
// j = ((c * G) + t) * VEC + i for chunk c and lane i of the vector.
template <typename T, typename A, int VEC, int CHUNKS>
struct ts_nrow {
  static constexpr int SLOTS = CHUNKS > 0 ? CHUNKS * VEC : 1;
  A x[SLOTS];
  const T* __restrict__ p;
  long long n, cs;
  int t, G;

  __device__ __forceinline__ void load_at(long long j, A* out) const {
    if constexpr (VEC > 1) {
      const ts_nvec<T, VEC> v = *reinterpret_cast<const ts_nvec<T, VEC>*>(p + j);
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        out[i] = ts_conv<A>::from(v.v[i]);
      }
    } else {
      out[0] = ts_conv<A>::from(p[j * cs]);
    }
  }

  __device__ __forceinline__ void load() {
    if constexpr (CHUNKS > 0) {
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        const long long j = ((long long)c * G + t) * VEC;
        if (j < n) {
          load_at(j, x + c * VEC);
        }
      }
    }
  }

  // f(v, j) for each of the thread's elements.
  template <class F>
  __device__ __forceinline__ void each(F f) const {
    if constexpr (CHUNKS > 0) {
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        const long long j = ((long long)c * G + t) * VEC;
        if (j < n) {
#pragma unroll
          for (int i = 0; i < VEC; ++i) {
            f(x[c * VEC + i], j + i);
          }
        }
      }
    } else {
      for (long long j = (long long)t * VEC; j < n; j += (long long)G * VEC) {
        A v[VEC];
        load_at(j, v);
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          f(v[i], j + i);
        }
      }
    }
  }

  // f(v) on each of the thread's elements held in registers, which it may change (CHUNKS > 0).
  template <class F>
  __device__ __forceinline__ void each_mut(F f) {
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
      const long long j = ((long long)c * G + t) * VEC;
      if (j < n) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          f(x[c * VEC + i]);
        }
      }
    }
  }

  // o[j] = g(v, w, b) for each of the thread's elements, with w = weight[j] (one without a
  // weight) and b = bias[j] (zero without a bias), loaded as vectors like the row.
  template <class F>
  __device__ __forceinline__ void store_affine(T* __restrict__ o, const T* __restrict__ weight,
                                               const T* __restrict__ bias, F g) const {
    auto put = [&](const A* v, long long j) {
      if constexpr (VEC > 1) {
        ts_nvec<T, VEC> wv, bv, r;
        if (weight) wv = *reinterpret_cast<const ts_nvec<T, VEC>*>(weight + j);
        if (bias) bv = *reinterpret_cast<const ts_nvec<T, VEC>*>(bias + j);
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          const A w = weight ? ts_conv<A>::from(wv.v[i]) : A(1);
          const A b = bias ? ts_conv<A>::from(bv.v[i]) : A(0);
          r.v[i] = ts_conv<T>::from(g(v[i], w, b));
        }
        *reinterpret_cast<ts_nvec<T, VEC>*>(o + j) = r;
      } else {
        const A w = weight ? ts_conv<A>::from(weight[j]) : A(1);
        const A b = bias ? ts_conv<A>::from(bias[j]) : A(0);
        o[j] = ts_conv<T>::from(g(v[0], w, b));
      }
    };
    if constexpr (CHUNKS > 0) {
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        const long long j = ((long long)c * G + t) * VEC;
        if (j < n) {
          put(x + c * VEC, j);
        }
      }
    } else {
      for (long long j = (long long)t * VEC; j < n; j += (long long)G * VEC) {
        A v[VEC];
        load_at(j, v);
        put(v, j);
      }
    }
  }

  // o[j] = g(v) for each of the thread's elements (o: the row-major output row).
  template <class F>
  __device__ __forceinline__ void store(T* __restrict__ o, F g) const {
    store_affine(o, nullptr, nullptr, [&](A v, A, A) { return g(v); });
  }
};

template <int OP, typename T, int VEC, int CHUNKS, bool WARP>
__device__ __forceinline__ void ts_normalize(const T* __restrict__ in, T* __restrict__ out,
                                             T* __restrict__ mean_out,
                                             const T* __restrict__ weight,
                                             const T* __restrict__ bias, long long rows,
                                             long long n, long long rs, long long cs,
                                             double param, int flags) {
  typedef typename ts_norm_acc<T>::type A;
  __shared__ A smem[32];
  const int G = WARP ? 32 : (int)blockDim.x;
  const int t = WARP ? (int)(threadIdx.x & 31) : (int)threadIdx.x;
  const long long per_block = WARP ? (long long)(blockDim.x >> 5) : 1;
  const long long first = (long long)blockIdx.x * per_block + (WARP ? (threadIdx.x >> 5) : 0);
  const long long step = (long long)gridDim.x * per_block;
  const A zero = A(0), one = A(1);
  const A nn = (A)n;
  const bool has_w = (flags & TS_NORM_WEIGHT) != 0, has_b = (flags & TS_NORM_BIAS) != 0;
  // Every thread of a block runs the same number of iterations in block mode (the loop bound
  // is the same for all), so the block reductions inside are reached by all of them.
  for (long long row = first; row < rows; row += step) {
    ts_nrow<T, A, VEC, CHUNKS> r;
    r.p = in + row * rs;
    r.n = n;
    r.cs = cs;
    r.t = t;
    r.G = G;
    r.load();
    T* o = out + row * n;
    if constexpr (OP == TS_NORM_SOFTMAX || OP == TS_NORM_LOG_SOFTMAX) {
      A m = -ts_ninf(zero);
      r.each([&](A v, long long) { m = ts_nmax(m, v); });
      m = ts_ngroup<A, WARP, true>(m, smem);
      A s = zero;
      if constexpr (OP == TS_NORM_SOFTMAX && CHUNKS > 0) {
        // The row is in registers: keep each exponential for the store (one exp an element).
        r.each_mut([&](A& v) {
          v = ts_nexp(v - m);
          s += v;
        });
      } else {
        r.each([&](A v, long long) { s += ts_nexp(v - m); });
      }
      s = ts_ngroup<A, WARP, false>(s, smem);
      if constexpr (OP == TS_NORM_SOFTMAX) {
        const A inv = one / s;
        if constexpr (CHUNKS > 0) {
          r.store(o, [&](A e) { return e * inv; });
        } else {
          r.store(o, [&](A v) { return ts_nexp(v - m) * inv; });
        }
      } else {
        const A shift = m + ts_nlog(s);
        r.store(o, [&](A v) { return v - shift; });
      }
    } else if constexpr (OP == TS_NORM_LAYER) {
      A s = zero;
      r.each([&](A v, long long) { s += v; });
      const A mean = ts_ngroup<A, WARP, false>(s, smem) / nn;
      A q = zero;
      r.each([&](A v, long long) { q += (v - mean) * (v - mean); });
      const A var = ts_ngroup<A, WARP, false>(q, smem) / nn;
      const A rstd = ts_nrsqrt(var + (A)param);
      r.store_affine(o, has_w ? weight : nullptr, has_b ? bias : nullptr,
                     [&](A v, A w, A b) {
                       A y = (v - mean) * rstd;
                       if (has_w) y = y * w;
                       if (has_b) y = y + b;
                       return y;
                     });
    } else if constexpr (OP == TS_NORM_RMS) {
      A q = zero;
      r.each([&](A v, long long) { q += v * v; });
      const A rr = ts_nrsqrt(ts_ngroup<A, WARP, false>(q, smem) / nn + (A)param);
      r.store_affine(o, has_w ? weight : nullptr, nullptr,
                     [&](A v, A w, A) {
                       A y = v * rr;
                       if (has_w) y = y * w;
                       return y;
                     });
    } else {
      A value, mean = zero;
      if constexpr (OP == TS_NORM_LSE) {
        A m = -ts_ninf(zero);
        r.each([&](A v, long long) { m = ts_nmax(m, v); });
        m = ts_ngroup<A, WARP, true>(m, smem);
        // PyTorch: an infinite max is replaced by 0 (+inf stays +inf, all -inf is -inf).
        if (ts_nisinf(m)) m = zero;
        A s = zero;
        r.each([&](A v, long long) { s += ts_nexp(v - m); });
        value = ts_nlog(ts_ngroup<A, WARP, false>(s, smem)) + m;
      } else if constexpr (OP == TS_NORM_VAR) {
        A s = zero;
        r.each([&](A v, long long) { s += v; });
        mean = ts_ngroup<A, WARP, false>(s, smem) / nn;
        A q = zero;
        r.each([&](A v, long long) { q += (v - mean) * (v - mean); });
        q = ts_ngroup<A, WARP, false>(q, smem);
        A d = nn - (A)param;
        d = d > zero ? d : zero;
        value = q / d;
        if (flags & TS_NORM_SQRT) value = ts_nsqrt(value);
      } else if constexpr (OP == TS_NORM_L1) {
        A s = zero;
        r.each([&](A v, long long) { s += ts_nabs(v); });
        value = ts_ngroup<A, WARP, false>(s, smem);
      } else if constexpr (OP == TS_NORM_L2) {
        A s = zero;
        r.each([&](A v, long long) { s += v * v; });
        value = ts_nsqrt(ts_ngroup<A, WARP, false>(s, smem));
      } else {
        A m = zero;
        r.each([&](A v, long long) { m = ts_nmax(m, ts_nabs(v)); });
        value = ts_ngroup<A, WARP, true>(m, smem);
      }
      if (t == 0) {
        out[row] = ts_conv<T>::from(value);
        if (flags & TS_NORM_MEAN) mean_out[row] = ts_conv<T>::from(mean);
      }
    }
  }
}

#endif
