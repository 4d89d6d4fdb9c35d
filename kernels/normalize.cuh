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

// Statistics of one row, from a thread's share `r` of it (any row type with a const
// `each(f)` calling f(v, j) on each of the thread's elements), reduced over the group: the
// result is in every thread of the group (block groups synchronise: all threads call).

// The row's max (NaN if any element is NaN).
template <typename A, bool WARP, class R>
__device__ __forceinline__ A ts_row_max(const R& r, A* smem) {
  A m = -ts_ninf(A(0));
  r.each([&](A v, long long) { m = ts_nmax(m, v); });
  return ts_ngroup<A, WARP, true>(m, smem);
}

// Σ v.
template <typename A, bool WARP, class R>
__device__ __forceinline__ A ts_row_sum(const R& r, A* smem) {
  A s = A(0);
  r.each([&](A v, long long) { s += v; });
  return ts_ngroup<A, WARP, false>(s, smem);
}

// Σ (v − c)² (c = 0: the sum of squares; c = the mean: the centred one of the variance).
template <typename A, bool WARP, class R>
__device__ __forceinline__ A ts_row_sum_sq(const R& r, A c, A* smem) {
  A q = A(0);
  r.each([&](A v, long long) { q += (v - c) * (v - c); });
  return ts_ngroup<A, WARP, false>(q, smem);
}

// Σ exp(v − m).
template <typename A, bool WARP, class R>
__device__ __forceinline__ A ts_row_sum_exp(const R& r, A m, A* smem) {
  A s = A(0);
  r.each([&](A v, long long) { s += ts_nexp(v - m); });
  return ts_ngroup<A, WARP, false>(s, smem);
}

// log Σ exp(v), PyTorch's way: an infinite max is replaced by 0 (+inf stays +inf, all -inf
// is -inf).
template <typename A, bool WARP, class R>
__device__ __forceinline__ A ts_row_lse(const R& r, A* smem) {
  A m = ts_row_max<A, WARP>(r, smem);
  if (ts_nisinf(m)) m = A(0);
  return ts_nlog(ts_row_sum_exp<A, WARP>(r, m, smem)) + m;
}

// Σ (v − mean)² / max(0, n − correction).
template <typename A, bool WARP, class R>
__device__ __forceinline__ A ts_row_var(const R& r, A mean, A n, A correction, A* smem) {
  const A q = ts_row_sum_sq<A, WARP>(r, mean, smem);
  const A d = n - correction;
  return q / (d > A(0) ? d : A(0));
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
      const A m = ts_row_max<A, WARP>(r, smem);
      A s = zero;
      if constexpr (OP == TS_NORM_SOFTMAX && CHUNKS > 0) {
        // The row is in registers: keep each exponential for the store (one exp an element).
        r.each_mut([&](A& v) {
          v = ts_nexp(v - m);
          s += v;
        });
        s = ts_ngroup<A, WARP, false>(s, smem);
      } else {
        s = ts_row_sum_exp<A, WARP>(r, m, smem);
      }
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
      const A mean = ts_row_sum<A, WARP>(r, smem) / nn;
      const A rstd = ts_nrsqrt(ts_row_sum_sq<A, WARP>(r, mean, smem) / nn + (A)param);
      r.store_affine(o, has_w ? weight : nullptr, has_b ? bias : nullptr,
                     [&](A v, A w, A b) {
                       A y = (v - mean) * rstd;
                       if (has_w) y = y * w;
                       if (has_b) y = y + b;
                       return y;
                     });
    } else if constexpr (OP == TS_NORM_RMS) {
      const A rr = ts_nrsqrt(ts_row_sum_sq<A, WARP>(r, zero, smem) / nn + (A)param);
      r.store_affine(o, has_w ? weight : nullptr, nullptr,
                     [&](A v, A w, A) {
                       A y = v * rr;
                       if (has_w) y = y * w;
                       return y;
                     });
    } else {
      A value, mean = zero;
      if constexpr (OP == TS_NORM_LSE) {
        value = ts_row_lse<A, WARP>(r, smem);
      } else if constexpr (OP == TS_NORM_VAR) {
        mean = ts_row_sum<A, WARP>(r, smem) / nn;
        value = ts_row_var<A, WARP>(r, mean, nn, (A)param, smem);
        if (flags & TS_NORM_SQRT) value = ts_nsqrt(value);
      } else if constexpr (OP == TS_NORM_L1) {
        A s = zero;
        r.each([&](A v, long long) { s += ts_nabs(v); });
        value = ts_ngroup<A, WARP, false>(s, smem);
      } else if constexpr (OP == TS_NORM_L2) {
        value = ts_nsqrt(ts_row_sum_sq<A, WARP>(r, zero, smem));
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

// ---- Row stages of fused expressions (src/engine_gpu/fused/rows.rs) ----
//
// A fused expression with one row stage (`x.lazy().softmax(-1) * w`, `(x * s).layer_norm(eps)
// * w + b`) runs as one kernel: `IO` is the generated part, `io.begin(row)` finds the row's
// operands, `io.load(j, v)` evaluates the stage's argument at columns j .. j + VEC (the
// pointwise ops below the stage, from the leaves) and `io.store(j, y, x)` evaluates the rest
// of the expression with the stage's values y at those columns and writes every output (x:
// the argument's values there, except that softmax's registers hold exponentials). The
// row's argument values stay in registers (CHUNKS * VEC per thread, column
// ((c * G) + t) * VEC + i); CHUNKS == 0 re-evaluates `load` per pass for rows longer than a
// block holds. VEC > 1 only where every operand is contiguous (or constant) along the row
// and aligned, which the host checks. Same groups and reductions as ts_normalize.

#define TS_ROW_SOFTMAX 0
#define TS_ROW_LOG_SOFTMAX 1
#define TS_ROW_LAYER 2
#define TS_ROW_RMS 3
#define TS_ROW_LSE 4
#define TS_ROW_VAR 5
#define TS_ROW_STD 6
#define TS_ROW_MEAN 7

// The thread's share of one row of a row stage.
template <typename A, int VEC, int CHUNKS, class IO>
struct ts_row_vals {
  A x[CHUNKS > 0 ? CHUNKS * VEC : 1];
  const IO* io;
  long long n;
  int t, G;

  __device__ __forceinline__ long long column(int c) const {
    return ((long long)c * G + t) * VEC;
  }

  __device__ __forceinline__ void load() {
    if constexpr (CHUNKS > 0) {
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        if (column(c) < n) io->load(column(c), x + c * VEC);
      }
    }
  }

  // f(v, j) for each of the thread's elements (re-evaluated when CHUNKS == 0).
  template <class F>
  __device__ __forceinline__ void each(F f) const {
    if constexpr (CHUNKS > 0) {
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        if (column(c) < n) {
#pragma unroll
          for (int i = 0; i < VEC; ++i) f(x[c * VEC + i], column(c) + i);
        }
      }
    } else {
      for (long long j = (long long)t * VEC; j < n; j += (long long)G * VEC) {
        A v[VEC];
        io->load(j, v);
#pragma unroll
        for (int i = 0; i < VEC; ++i) f(v[i], j + i);
      }
    }
  }

  // The stage's value g(v) at each of the thread's elements, stored through `io`.
  template <class F>
  __device__ __forceinline__ void store(F g) const {
    if constexpr (CHUNKS > 0) {
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        if (column(c) < n) {
          A y[VEC];
#pragma unroll
          for (int i = 0; i < VEC; ++i) y[i] = g(x[c * VEC + i]);
          io->store(column(c), y, x + c * VEC);
        }
      }
    } else {
      for (long long j = (long long)t * VEC; j < n; j += (long long)G * VEC) {
        A v[VEC], y[VEC];
        io->load(j, v);
#pragma unroll
        for (int i = 0; i < VEC; ++i) y[i] = g(v[i]);
        io->store(j, y, v);
      }
    }
  }
};

template <int KIND, typename A, int VEC, int CHUNKS, bool WARP, class IO>
__device__ __forceinline__ void ts_row_stage(IO& io, unsigned long long rows, long long n,
                                             double param) {
  __shared__ A smem[32];
  const int G = WARP ? 32 : (int)blockDim.x;
  const int t = WARP ? (int)(threadIdx.x & 31) : (int)threadIdx.x;
  const unsigned long long per_block = WARP ? (blockDim.x >> 5) : 1;
  const unsigned long long first =
      (unsigned long long)blockIdx.x * per_block + (WARP ? (threadIdx.x >> 5) : 0);
  const unsigned long long step = (unsigned long long)gridDim.x * per_block;
  const A zero = A(0), one = A(1), nn = (A)n;
  // Every thread of a block runs the same number of iterations in block mode, so the block
  // reductions inside are reached by all of them.
  for (unsigned long long row = first; row < rows; row += step) {
    io.begin(row);
    ts_row_vals<A, VEC, CHUNKS, IO> r;
    r.io = &io;
    r.n = n;
    r.t = t;
    r.G = G;
    r.load();
    if constexpr (KIND == TS_ROW_SOFTMAX || KIND == TS_ROW_LOG_SOFTMAX) {
      const A m = ts_row_max<A, WARP>(r, smem);
      A s = zero;
      if constexpr (KIND == TS_ROW_SOFTMAX && CHUNKS > 0) {
        // Each exponential kept for the store: one exp an element.
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
          if (r.column(c) < n) {
#pragma unroll
            for (int i = 0; i < VEC; ++i) {
              r.x[c * VEC + i] = ts_nexp(r.x[c * VEC + i] - m);
              s += r.x[c * VEC + i];
            }
          }
        }
        s = ts_ngroup<A, WARP, false>(s, smem);
      } else {
        s = ts_row_sum_exp<A, WARP>(r, m, smem);
      }
      if constexpr (KIND == TS_ROW_SOFTMAX) {
        const A inv = one / s;
        if constexpr (CHUNKS > 0) {
          r.store([&](A e) { return e * inv; });
        } else {
          r.store([&](A v) { return ts_nexp(v - m) * inv; });
        }
      } else {
        const A shift = m + ts_nlog(s);
        r.store([&](A v) { return v - shift; });
      }
    } else if constexpr (KIND == TS_ROW_LAYER) {
      const A mean = ts_row_sum<A, WARP>(r, smem) / nn;
      const A rstd = ts_nrsqrt(ts_row_sum_sq<A, WARP>(r, mean, smem) / nn + (A)param);
      r.store([&](A v) { return (v - mean) * rstd; });
    } else if constexpr (KIND == TS_ROW_RMS) {
      const A rr = ts_nrsqrt(ts_row_sum_sq<A, WARP>(r, zero, smem) / nn + (A)param);
      r.store([&](A v) { return v * rr; });
    } else {
      // A statistic of the row, repeated along it.
      A value;
      if constexpr (KIND == TS_ROW_LSE) {
        value = ts_row_lse<A, WARP>(r, smem);
      } else {
        const A mean = ts_row_sum<A, WARP>(r, smem) / nn;
        if constexpr (KIND == TS_ROW_MEAN) {
          value = mean;
        } else {
          value = ts_row_var<A, WARP>(r, mean, nn, (A)param, smem);
          if constexpr (KIND == TS_ROW_STD) value = ts_nsqrt(value);
        }
      }
      r.store([&](A) { return value; });
    }
  }
}

#endif
