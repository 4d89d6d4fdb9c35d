// Sorting along the last dim of a row-major [rows, n] tensor (issue 28), and searchsorted.
// The host (src/engine_gpu/sort/) moves the sorted dim last before a launch.
//
// Keys: each element maps to an order-preserving unsigned key of its width (ts_sort_key,
// mirroring SortElement::sort_key in src/tensor/order/key.rs): NaN (any sign or payload) to
// the largest key, -0.0 to +0.0's key, negative floats bit-flipped, signed integers with the
// sign bit flipped. Descending sorts flip the key (~key), so NaN comes first. Every entry
// carries its index in the row as a tiebreak: entries compare by (key, index), so the sort is
// stable, and the padding entries up to a power of two (key ~0, index 0x7fffffff) sort after
// every real one.
//
// - ts_sort_rows (rows of at most TS_SORT_TILE): one block per row (grid-stride) loads the row
//   into shared memory, runs the whole bitonic network there, and writes the first m values
//   (gathered from the input by index) and indices (m = n for sort, k for topk).
// - Longer rows, padded to P = 2^m entries in global scratch (keys, int indices):
//   ts_sort_init fills the scratch; ts_sort_tiles sorts each TS_SORT_TILE span in shared
//   memory (k = 0) or finishes the merge stages j < TS_SORT_TILE of one k; ts_sort_step runs
//   one global compare-exchange stage (k, j) for j >= TS_SORT_TILE; ts_sort_final gathers the
//   values. Directions come from each entry's index within its row, so the spans line up into
//   one bitonic network per row.
//
// Requires half.cuh, ops.cuh and reduce.cuh (ts_red_widen).
#ifndef TYPESTATE_TENSOR_SORT_CUH
#define TYPESTATE_TENSOR_SORT_CUH

#define TS_SORT_TILE 2048
#define TS_SORT_THREADS 1024
#define TS_SORT_PAD_INDEX 0x7fffffff

// ---- keys ----------------------------------------------------------------------------------

template <typename T>
struct ts_sort_key;

template <>
struct ts_sort_key<float> {
  typedef unsigned int K;
  static __device__ __forceinline__ K of(float x) {
    if (x != x) return 0xffffffffu;
    unsigned int u = x == 0.0f ? 0u : __float_as_uint(x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
};
template <>
struct ts_sort_key<double> {
  typedef unsigned long long K;
  static __device__ __forceinline__ K of(double x) {
    if (x != x) return 0xffffffffffffffffull;
    unsigned long long u = x == 0.0 ? 0ull : (unsigned long long)__double_as_longlong(x);
    return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
  }
};
template <>
struct ts_sort_key<ts_f16> {
  typedef unsigned short K;
  static __device__ __forceinline__ K of(ts_f16 x) {
    unsigned int b = x.bits;
    if ((b & 0x7c00u) == 0x7c00u && (b & 0x03ffu)) return (K)0xffffu;
    if ((b & 0x7fffu) == 0u) b = 0u;
    return (K)((b & 0x8000u) ? (~b & 0xffffu) : (b | 0x8000u));
  }
};
template <>
struct ts_sort_key<ts_bf16> {
  typedef unsigned short K;
  static __device__ __forceinline__ K of(ts_bf16 x) {
    unsigned int b = x.bits;
    if ((b & 0x7f80u) == 0x7f80u && (b & 0x007fu)) return (K)0xffffu;
    if ((b & 0x7fffu) == 0u) b = 0u;
    return (K)((b & 0x8000u) ? (~b & 0xffffu) : (b | 0x8000u));
  }
};
#define TS_SORT_SIGNED(T, U, SIGN)                                      \
  template <>                                                           \
  struct ts_sort_key<T> {                                               \
    typedef U K;                                                        \
    static __device__ __forceinline__ K of(T x) { return (K)((U)x ^ (U)SIGN); } \
  };
TS_SORT_SIGNED(signed char, unsigned char, 0x80u)
TS_SORT_SIGNED(short, unsigned short, 0x8000u)
TS_SORT_SIGNED(int, unsigned int, 0x80000000u)
TS_SORT_SIGNED(long long, unsigned long long, 0x8000000000000000ull)
#undef TS_SORT_SIGNED
#define TS_SORT_UNSIGNED(T)                                             \
  template <>                                                           \
  struct ts_sort_key<T> {                                               \
    typedef T K;                                                        \
    static __device__ __forceinline__ K of(T x) { return x; }           \
  };
TS_SORT_UNSIGNED(unsigned char)
TS_SORT_UNSIGNED(unsigned short)
TS_SORT_UNSIGNED(unsigned int)
TS_SORT_UNSIGNED(unsigned long long)
#undef TS_SORT_UNSIGNED
template <>
struct ts_sort_key<bool> {
  typedef unsigned char K;
  static __device__ __forceinline__ K of(bool x) { return x ? (K)1 : (K)0; }
};

// The key of x in the sort's direction.
template <typename T>
__device__ __forceinline__ typename ts_sort_key<T>::K ts_sort_dir_key(T x, bool desc) {
  typedef typename ts_sort_key<T>::K K;
  const K k = ts_sort_key<T>::of(x);
  return desc ? (K)~k : k;
}

// (ka, ia) before (kb, ib).
template <typename K>
__device__ __forceinline__ bool ts_sort_less(K ka, int ia, K kb, int ib) {
  return ka < kb || (ka == kb && ia < ib);
}

// ---- the bitonic network -------------------------------------------------------------------

// The stages j = j_first, j_first / 2, ..., 1 of merge step k over `len` entries in shared
// memory whose first entry is entry `base` of its row (the direction of entry i is ascending
// when ((base + i) & k) == 0). Every thread of the block calls it; it ends synchronised.
template <typename K>
__device__ __forceinline__ void ts_sort_merge_smem(K* keys, int* ids, unsigned int len,
                                                   unsigned long long base, unsigned long long k,
                                                   unsigned int j_first) {
  for (unsigned int j = j_first; j > 0; j >>= 1) {
    for (unsigned int i = threadIdx.x; i < len; i += blockDim.x) {
      const unsigned int l = i ^ j;
      if (l > i) {
        const bool up = ((base + i) & k) == 0;
        const K ki = keys[i], kl = keys[l];
        const int ii = ids[i], il = ids[l];
        const bool swap = up ? ts_sort_less(kl, il, ki, ii) : ts_sort_less(ki, ii, kl, il);
        if (swap) {
          keys[i] = kl;
          keys[l] = ki;
          ids[i] = il;
          ids[l] = ii;
        }
      }
    }
    __syncthreads();
  }
}

// Sorts `len` (a power of two) entries in shared memory whose first is entry `base` of its
// row, with the directions of the row's network (k = 2 .. len).
template <typename K>
__device__ __forceinline__ void ts_sort_smem(K* keys, int* ids, unsigned int len,
                                             unsigned long long base) {
  for (unsigned int k = 2; k <= len; k <<= 1) {
    ts_sort_merge_smem(keys, ids, len, base, (unsigned long long)k, k >> 1);
  }
}

// ---- rows that fit one block ---------------------------------------------------------------

template <typename T>
__device__ __forceinline__ void ts_sort_rows(const T* __restrict__ in, T* __restrict__ vals,
                                             long long* __restrict__ idx, long long rows,
                                             long long n, long long p, long long m, bool desc) {
  typedef typename ts_sort_key<T>::K K;
  __shared__ K keys[TS_SORT_TILE];
  __shared__ int ids[TS_SORT_TILE];
  const unsigned int len = (unsigned int)p;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* r = in + row * n;
    for (unsigned int i = threadIdx.x; i < len; i += blockDim.x) {
      if ((long long)i < n) {
        keys[i] = ts_sort_dir_key(r[i], desc);
        ids[i] = (int)i;
      } else {
        keys[i] = (K)~(K)0;
        ids[i] = TS_SORT_PAD_INDEX;
      }
    }
    __syncthreads();
    ts_sort_smem(keys, ids, len, 0ull);
    // The first m of the row (m <= n: topk writes only those).
    for (unsigned int i = threadIdx.x; (long long)i < m; i += blockDim.x) {
      const int j = ids[i];
      vals[row * m + i] = r[j];
      idx[row * m + i] = (long long)j;
    }
    __syncthreads();
  }
}

// ---- long rows, in global scratch ----------------------------------------------------------

template <typename T>
__device__ __forceinline__ void ts_sort_init(const T* __restrict__ in,
                                             typename ts_sort_key<T>::K* __restrict__ keys,
                                             int* __restrict__ ids, long long rows, long long n,
                                             long long p, bool desc) {
  typedef typename ts_sort_key<T>::K K;
  const long long total = rows * p;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long row = e / p, i = e % p;
    if (i < n) {
      keys[e] = ts_sort_dir_key(in[row * n + i], desc);
      ids[e] = (int)i;
    } else {
      keys[e] = (K)~(K)0;
      ids[e] = TS_SORT_PAD_INDEX;
    }
  }
}

// k == 0: sorts each TS_SORT_TILE span; else the stages j < TS_SORT_TILE of merge step k.
template <typename K>
__device__ __forceinline__ void ts_sort_tiles(K* __restrict__ keys, int* __restrict__ ids,
                                              long long total, long long p, long long k) {
  __shared__ K sk[TS_SORT_TILE];
  __shared__ int si[TS_SORT_TILE];
  const long long tiles = total / TS_SORT_TILE;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long first = t * TS_SORT_TILE;
    for (unsigned int i = threadIdx.x; i < TS_SORT_TILE; i += blockDim.x) {
      sk[i] = keys[first + i];
      si[i] = ids[first + i];
    }
    __syncthreads();
    const unsigned long long base = (unsigned long long)(first % p);
    if (k == 0) {
      ts_sort_smem(sk, si, TS_SORT_TILE, base);
    } else {
      ts_sort_merge_smem(sk, si, TS_SORT_TILE, base, (unsigned long long)k, TS_SORT_TILE / 2);
    }
    for (unsigned int i = threadIdx.x; i < TS_SORT_TILE; i += blockDim.x) {
      keys[first + i] = sk[i];
      ids[first + i] = si[i];
    }
    __syncthreads();
  }
}

// One global compare-exchange stage (k, j), j >= TS_SORT_TILE: one thread per pair.
template <typename K>
__device__ __forceinline__ void ts_sort_step(K* __restrict__ keys, int* __restrict__ ids,
                                             long long total, long long p, long long k,
                                             long long j) {
  const long long pairs = total / 2;
  for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < pairs;
       q += (long long)gridDim.x * blockDim.x) {
    // The q-th entry whose bit j is clear, and its partner.
    const long long i = (q / j) * 2 * j + (q % j);
    const long long l = i + j;
    const bool up = (((i % p)) & k) == 0;
    const K ki = keys[i], kl = keys[l];
    const int ii = ids[i], il = ids[l];
    const bool swap = up ? ts_sort_less(kl, il, ki, ii) : ts_sort_less(ki, ii, kl, il);
    if (swap) {
      keys[i] = kl;
      keys[l] = ki;
      ids[i] = il;
      ids[l] = ii;
    }
  }
}

template <typename T>
__device__ __forceinline__ void ts_sort_final(const T* __restrict__ in,
                                              const int* __restrict__ ids, T* __restrict__ vals,
                                              long long* __restrict__ idx, long long rows,
                                              long long n, long long p, long long m) {
  // The first m of each row (m <= n: topk reads only those).
  const long long total = rows * m;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long row = e / m, i = e % m;
    const int j = ids[row * p + i];
    vals[e] = in[row * n + j];
    idx[e] = (long long)j;
  }
}

// ---- searchsorted --------------------------------------------------------------------------

// PyTorch's cus_lower_bound / cus_upper_bound over the m-element `seq`, one thread per value,
// compared in the compute type (ts_red_widen), so NaN compares false as in PyTorch.
template <typename T>
__device__ __forceinline__ void ts_searchsorted(const T* __restrict__ seq, long long m,
                                                const T* __restrict__ vals, long long count,
                                                long long* __restrict__ out, bool right) {
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < count;
       e += (long long)gridDim.x * blockDim.x) {
    const auto v = ts_red_widen(vals[e]);
    long long start = 0, end = m;
    while (start < end) {
      const long long mid = start + ((end - start) >> 1);
      const auto s = ts_red_widen(seq[mid]);
      const bool go_right = right ? !(s > v) : !(s >= v);
      if (go_right) {
        start = mid + 1;
      } else {
        end = mid;
      }
    }
    out[e] = start;
  }
}

#endif  // TYPESTATE_TENSOR_SORT_CUH
