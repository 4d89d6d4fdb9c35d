// Indexing kernels (issue 28): the gather and the scatter along one dim that every indexing op
// of the tensor layer is built from (src/tensor/indexing/engine.rs has the contract).
//
// Both walk a shape row-major, one thread per element in a grid-stride loop, with a
// three-operand OffsetCalculator (offset_calculator.cuh):
//   gather:  operands (out, index, src with its `dim` stride 0);  out = src[.. + v * step]
//   scatter: operands (index, src, dst with its `dim` stride 0);  dst[.. + v * step] op= src
// where v is the index value (plus `size` when `wrap` and v < 0).
//
// Safety: an index value outside [0, size) after wrapping is never dereferenced (a gather writes
// zero bits instead, a scatter skips it), so no index value reads or writes outside the views the
// host checked. A gather reports the first such value it meets (ts_idx_report), which the host
// reads back after the kernel and returns as a typed error; so does a scatter given a report
// flag (bad != 0: a scatter into a tensor the op made, dropped on the error); the host checks
// the indices of a scatter into the caller's tensor before its launch (ts_idx_check).
//
// Scatter reductions (K): 0 assign (a plain store; duplicates: one unspecified writer wins),
// 1 sum, 2 prod, 3 amax, 4 amin (NaN propagating, as ts_max / ts_min). Sums use the hardware
// atomicAdd where it exists (f32, f64, i32, u32, i64 and u64 through the unsigned 64-bit form,
// which wraps identically), max / min of integers atomicMax / atomicMin; everything else is a
// compare-and-swap loop on the element's word (16-bit types on the aligned 32-bit word that
// holds them, the neighbouring half rewritten unchanged, as PyTorch's fallback does). Float
// results therefore depend on the order of the atomics: not deterministic run to run.
//
// Requires half.cuh, ops.cuh, int_divider.cuh and offset_calculator.cuh before it.
#ifndef TYPESTATE_TENSOR_INDEXING_CUH
#define TYPESTATE_TENSOR_INDEXING_CUH

#define TS_IDX_THREADS 256

template <typename To, typename From>
__device__ __forceinline__ To ts_idx_bitcast(From v) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  union {
    From f;
    To t;
  } u;
  u.f = v;
  return u.t;
}

// The position `v` names along a dim of `size`, or -1 when out of range.
template <typename I>
__device__ __forceinline__ long long ts_idx_resolve(I raw, long long size, int wrap) {
  long long v = (long long)raw;
  if (wrap && v < 0) {
    v += size;
  }
  return (v >= 0 && v < size) ? v : -1;
}

// A gather's report of an out-of-range index: bad[0] goes from 0 to 1 once, and the thread
// that moved it stores the index value in bad[1]; the host reads both after the kernel.
template <typename I>
__device__ __forceinline__ void ts_idx_report(unsigned long long* bad, I raw) {
  if (atomicCAS(bad, 0ull, 1ull) == 0ull) {
    bad[1] = (unsigned long long)(long long)raw;
  }
}

template <typename T, typename I, int N, typename index_t, typename offset_t>
__device__ __forceinline__ void ts_gather_one(T* __restrict__ out, const T* __restrict__ src,
                                              const I* __restrict__ idx, index_t i,
                                              long long size, long long step, int wrap,
                                              const OffsetCalculator<N, 3, index_t, offset_t>& calc,
                                              unsigned long long* bad, offset_t* dst, T* v) {
  offset_t o[3];
  calc.get(i, o);
  *dst = o[0];
  const I raw = idx[o[1]];
  const long long x = ts_idx_resolve(raw, size, wrap);
  // An out-of-range index reads nothing, is reported, and writes zero bits (a valid value
  // of every type), so the output is never left uninitialised.
  if (x < 0) {
    ts_idx_report(bad, raw);
  }
  *v = x < 0 ? T() : src[(long long)o[2] + x * step];
}

// T is the element type, or a plain word (unsigned int, unsigned long long, uint4) when the
// host found the rows contiguous and aligned and rescaled the shape and strides to words.
// With UNROLL (the word form), each thread keeps four index-then-source chains in flight
// (loads first, stores after); the element form, whose sources are often scattered within
// rows, keeps one (measured faster for a gather along the last dim).
template <typename T, typename I, int N, typename index_t, typename offset_t, bool UNROLL>
__device__ __forceinline__ void ts_gather(T* __restrict__ out, const T* __restrict__ src,
                                          const I* __restrict__ idx, index_t n, long long size,
                                          long long step, int wrap,
                                          const OffsetCalculator<N, 3, index_t, offset_t>& calc,
                                          unsigned long long* bad) {
  const index_t stride = (index_t)gridDim.x * blockDim.x;
  index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; UNROLL && (unsigned long long)i + 3ull * stride < (unsigned long long)n; i += 4 * stride) {
    offset_t dst[4];
    T v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      ts_gather_one<T, I, N, index_t, offset_t>(out, src, idx, i + (index_t)u * stride, size,
                                                step, wrap, calc, bad, &dst[u], &v[u]);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      out[dst[u]] = v[u];
    }
  }
  for (; i < n; i += stride) {
    offset_t dst;
    T v;
    ts_gather_one<T, I, N, index_t, offset_t>(out, src, idx, i, size, step, wrap, calc, bad, &dst,
                                              &v);
    out[dst] = v;
  }
}

// `a op b` in the compute type, stored back as T.
template <int K, typename T>
__device__ __forceinline__ T ts_sc_combine(T a, T b) {
  typedef typename ts_compute<T>::type C;
  const C x = ts_conv<C>::from(a);
  const C y = ts_conv<C>::from(b);
  C r;
  if constexpr (K == 1) {
    r = x + y;
  } else if constexpr (K == 2) {
    r = x * y;
  } else if constexpr (K == 3) {
    r = ts_max(x, y);
  } else {
    r = ts_min(x, y);
  }
  return ts_conv<T>::from(r);
}

// `*p = *p op v` atomically (K > 0) or `*p = v` (K == 0).
template <int K, typename T>
__device__ __forceinline__ void ts_sc_apply(T* p, T v) {
  if constexpr (K == 0) {
    *p = v;
  } else if constexpr (K == 1 && (ts_is_same<T, float>::value || ts_is_same<T, double>::value ||
                                  ts_is_same<T, int>::value ||
                                  ts_is_same<T, unsigned int>::value ||
                                  ts_is_same<T, unsigned long long>::value)) {
    atomicAdd(p, v);
  } else if constexpr (K == 1 && ts_is_same<T, long long>::value) {
    atomicAdd((unsigned long long*)p, (unsigned long long)v);
  } else if constexpr (K == 3 && (ts_is_same<T, int>::value || ts_is_same<T, unsigned int>::value ||
                                  ts_is_same<T, long long>::value ||
                                  ts_is_same<T, unsigned long long>::value)) {
    atomicMax(p, v);
  } else if constexpr (K == 4 && (ts_is_same<T, int>::value || ts_is_same<T, unsigned int>::value ||
                                  ts_is_same<T, long long>::value ||
                                  ts_is_same<T, unsigned long long>::value)) {
    atomicMin(p, v);
  } else if constexpr (sizeof(T) == 4) {
    unsigned int* w = (unsigned int*)p;
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      const T next = ts_sc_combine<K, T>(ts_idx_bitcast<T>(assumed), v);
      old = atomicCAS(w, assumed, ts_idx_bitcast<unsigned int>(next));
    } while (assumed != old);
  } else if constexpr (sizeof(T) == 8) {
    unsigned long long* w = (unsigned long long*)p;
    unsigned long long old = *w, assumed;
    do {
      assumed = old;
      const T next = ts_sc_combine<K, T>(ts_idx_bitcast<T>(assumed), v);
      old = atomicCAS(w, assumed, ts_idx_bitcast<unsigned long long>(next));
    } while (assumed != old);
  } else {
    static_assert(sizeof(T) == 2, "scatter reductions take 2-, 4- and 8-byte types");
    // The aligned 32-bit word holding the half; the other half is written back unchanged.
    const unsigned long long addr = (unsigned long long)p;
    unsigned int* w = (unsigned int*)(addr & ~3ull);
    const unsigned int shift = (addr & 2ull) ? 16u : 0u;
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      const T cur = ts_idx_bitcast<T>((unsigned short)((assumed >> shift) & 0xFFFFu));
      const unsigned short next = ts_idx_bitcast<unsigned short>(ts_sc_combine<K, T>(cur, v));
      const unsigned int word = (assumed & ~(0xFFFFu << shift)) | ((unsigned int)next << shift);
      old = atomicCAS(w, assumed, word);
    } while (assumed != old);
  }
}

// A scatter's check before its launch: the first index out of range, reported as a gather
// reports it (ts_idx_report); nothing else is read or written.
template <typename I, int N, typename index_t, typename offset_t>
__device__ __forceinline__ void ts_idx_check(const I* __restrict__ idx, index_t n, long long size,
                                             int wrap,
                                             const OffsetCalculator<N, 1, index_t, offset_t>& calc,
                                             unsigned long long* bad) {
  const index_t stride = (index_t)gridDim.x * blockDim.x;
  for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    offset_t o[1];
    calc.get(i, o);
    const I raw = idx[o[0]];
    if (ts_idx_resolve(raw, size, wrap) < 0) {
      ts_idx_report(bad, raw);
    }
  }
}

// Where position i's value lands (`*at`, relative to `out`), the value, and the raw index
// (for a report); false for an out-of-range index, which lands nowhere.
template <typename T, typename I, int N, typename index_t, typename offset_t>
__device__ __forceinline__ bool ts_scatter_one(const T* __restrict__ src,
                                               typename ts_compute<T>::type value,
                                               const I* __restrict__ idx, index_t i,
                                               long long size, long long step, int wrap,
                                               int has_src,
                                               const OffsetCalculator<N, 3, index_t, offset_t>& calc,
                                               long long* at, T* x, I* raw) {
  offset_t o[3];
  calc.get(i, o);
  *raw = idx[o[0]];
  const long long v = ts_idx_resolve(*raw, size, wrap);
  *at = (long long)o[2] + v * step;
  *x = has_src ? src[o[1]] : ts_conv<T>::from(value);
  return v >= 0;
}

// Four positions a round: their index and source loads first, then the four updates. An
// out-of-range index is skipped, and reported when `bad` is not null.
template <int K, typename T, typename I, int N, typename index_t, typename offset_t>
__device__ __forceinline__ void ts_scatter(T* out, const T* __restrict__ src,
                                           typename ts_compute<T>::type value,
                                           const I* __restrict__ idx, index_t n, long long size,
                                           long long step, int wrap, int has_src,
                                           const OffsetCalculator<N, 3, index_t, offset_t>& calc,
                                           unsigned long long* bad) {
  const index_t stride = (index_t)gridDim.x * blockDim.x;
  index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; (unsigned long long)i + 3ull * stride < (unsigned long long)n; i += 4 * stride) {
    long long at[4];
    T x[4];
    I raw[4];
    bool ok[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      ok[u] = ts_scatter_one<T, I, N, index_t, offset_t>(src, value, idx, i + (index_t)u * stride,
                                                         size, step, wrap, has_src, calc, &at[u],
                                                         &x[u], &raw[u]);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (ok[u]) {
        ts_sc_apply<K, T>(out + at[u], x[u]);
      } else if (bad) {
        ts_idx_report(bad, raw[u]);
      }
    }
  }
  for (; i < n; i += stride) {
    long long at;
    T x;
    I raw;
    if (ts_scatter_one<T, I, N, index_t, offset_t>(src, value, idx, i, size, step, wrap, has_src,
                                                   calc, &at, &x, &raw)) {
      ts_sc_apply<K, T>(out + at, x);
    } else if (bad) {
      ts_idx_report(bad, raw);
    }
  }
}

#endif  // TYPESTATE_TENSOR_INDEXING_CUH
