// Scans along the last dim of a row-major [rows, n] tensor (issue 28): cumsum, cumprod,
// cummax / cummin (value and index), logcumsumexp. The host (src/engine_gpu/scan/) moves the
// scanned dim last before a launch.
//
// ts_scan_rows: blocks take tiles (a row, or a tile_len span of a row when the host splits
// few long rows into tiles), one tile at a time, in a grid-stride loop. A block walks its tile
// in chunks of TS_SCAN_THREADS * TS_SCAN_ITEMS elements: each thread folds TS_SCAN_ITEMS
// consecutive elements, the block scans the threads' totals (warp shuffles, then one warp over
// the warp totals through shared memory), and the chunk's results are the carry of the chunks
// before it, the thread's exclusive prefix and its own running fold. The carry then moves on
// by the chunk's total.
//
// Split rows (three launches on one stream): (1) ts_scan_rows with out == 0 writes each
// tile's total to totals[tile]; (2) ts_scan_carry turns each row's totals into exclusive
// carries, in place (one block per row, the same block scan); (3) ts_scan_rows with carry_in == totals scans every tile again from its carry and
// writes the outputs.
//
// The op is a functor with acc_t, identity(), map(In, long long index), combine(a, b) for a
// before b (not assumed commutative), and store(acc_t, out, idx, position); the ops mirror
// src/engine_cpu/order/scan.rs: sums and products in ts_sum_acc (wrapping 64 bits for
// integers and bool, float for the half types), cummax / cummin by PyTorch's rule (a NaN, or
// a value >= (<=) the running one while it is not NaN, takes over), logcumsumexp by PyTorch's
// _log_add_exp_helper in float (double for f64).
//
// Requires half.cuh, ops.cuh and reduce.cuh (ts_sum_acc, ts_red_widen, ts_red_out).
#ifndef TYPESTATE_TENSOR_SCAN_CUH
#define TYPESTATE_TENSOR_SCAN_CUH

#define TS_SCAN_THREADS 256
#define TS_SCAN_ITEMS 4

// ---- helpers -------------------------------------------------------------------------------

__device__ __forceinline__ bool ts_scan_isnan(float x) { return x != x; }
__device__ __forceinline__ bool ts_scan_isnan(double x) { return x != x; }
template <typename V>
__device__ __forceinline__ bool ts_scan_isnan(V) { return false; }

// Lane - d's value (any plain type, moved as 32-bit words).
template <typename T>
__device__ __forceinline__ T ts_scan_shfl_up(T v, unsigned int d) {
  union U {
    T t;
    int w[(sizeof(T) + 3) / 4];
  } u;
  u.t = v;
#pragma unroll
  for (int k = 0; k < (int)((sizeof(T) + 3) / 4); ++k) {
    u.w[k] = __shfl_up_sync(0xffffffffu, u.w[k], d);
  }
  return u.t;
}

// ---- ops -----------------------------------------------------------------------------------

template <typename In, typename Out>
struct ts_scan_sum {
  typedef typename ts_sum_acc<In>::type acc_t;
  __device__ __forceinline__ acc_t identity() const { return (acc_t)0; }
  __device__ __forceinline__ acc_t map(In x, long long) const { return (acc_t)ts_red_widen(x); }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const { return a + b; }
  __device__ __forceinline__ void store(acc_t a, Out* out, long long*, long long at) const {
    out[at] = ts_red_out<Out>::from(a);
  }
};

template <typename In, typename Out>
struct ts_scan_prod {
  typedef typename ts_sum_acc<In>::type acc_t;
  __device__ __forceinline__ acc_t identity() const { return (acc_t)1; }
  __device__ __forceinline__ acc_t map(In x, long long) const { return (acc_t)ts_red_widen(x); }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const { return a * b; }
  __device__ __forceinline__ void store(acc_t a, Out* out, long long*, long long at) const {
    out[at] = ts_red_out<Out>::from(a);
  }
};

// A running extreme: the value in its compute type and where it was found (-1: none yet,
// the identity).
template <typename V>
struct ts_scan_ext {
  V value;
  long long index;
};

// MAX: b takes over from the earlier a if b is NaN, or a is not NaN and b >= a (<= for min):
// the later index wins ties, and NaN (the later one among NaNs) wins everything. Associative:
// the max (min) of (NaN-first rank, value, index).
template <typename In, typename Out, bool MAX>
struct ts_scan_extreme {
  typedef decltype(ts_red_widen(In())) value_t;
  typedef ts_scan_ext<value_t> acc_t;
  __device__ __forceinline__ acc_t identity() const {
    acc_t a;
    a.value = (value_t)0;
    a.index = -1;
    return a;
  }
  __device__ __forceinline__ acc_t map(In x, long long j) const {
    acc_t a;
    a.value = ts_red_widen(x);
    a.index = j;
    return a;
  }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const {
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    const bool takes = ts_scan_isnan(b.value) ||
                       (!ts_scan_isnan(a.value) && (MAX ? b.value >= a.value : b.value <= a.value));
    return takes ? b : a;
  }
  __device__ __forceinline__ void store(acc_t a, Out* out, long long* idx, long long at) const {
    out[at] = ts_red_out<Out>::from(a.value);
    idx[at] = a.index;
  }
};

// PyTorch's _log_add_exp_helper(x, y) with std::min / std::max's NaN behaviour.
__device__ __forceinline__ float ts_scan_log1p_exp(float d) { return log1pf(expf(d)); }
__device__ __forceinline__ double ts_scan_log1p_exp(double d) { return log1p(exp(d)); }
template <typename F>
__device__ __forceinline__ F ts_log_add_exp(F x, F y) {
  const F mn = ts_scan_isnan(y) ? y : (y < x ? y : x);
  const F mx = ts_scan_isnan(y) ? y : (x < y ? y : x);
  if (mn != mx || ts_isfinite(mn)) {
    return ts_scan_log1p_exp(mn - mx) + mx;
  }
  return x;
}

template <typename In, typename Out>
struct ts_scan_lcse {
  typedef typename ts_sum_acc<In>::type acc_t;  // float, or double for f64
  __device__ __forceinline__ acc_t identity() const { return ts_red_limits<acc_t>::lowest(); }
  __device__ __forceinline__ acc_t map(In x, long long) const { return (acc_t)ts_red_widen(x); }
  // The later term is PyTorch's x, the running value its y.
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const {
    return ts_log_add_exp(b, a);
  }
  __device__ __forceinline__ void store(acc_t a, Out* out, long long*, long long at) const {
    out[at] = ts_red_out<Out>::from(a);
  }
};

// ---- the block scan ------------------------------------------------------------------------

// The exclusive prefix of each thread's `v` over the block (in thread order) and, through
// `total`, the block's total. Every thread of the block calls it; `warps` is shared scratch of
// 32 accumulators, free again when it returns.
template <typename Op>
__device__ __forceinline__ typename Op::acc_t ts_scan_block(const Op& op, typename Op::acc_t v,
                                                            typename Op::acc_t* warps,
                                                            typename Op::acc_t* total) {
  typedef typename Op::acc_t acc_t;
  const unsigned int lane = threadIdx.x & 31u;
  const unsigned int warp = threadIdx.x >> 5;
  const unsigned int nwarps = blockDim.x >> 5;
  acc_t incl = v;
#pragma unroll
  for (unsigned int d = 1; d < 32; d <<= 1) {
    const acc_t o = ts_scan_shfl_up(incl, d);
    if (lane >= d) incl = op.combine(o, incl);
  }
  if (lane == 31) warps[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    acc_t t = lane < nwarps ? warps[lane] : op.identity();
#pragma unroll
    for (unsigned int d = 1; d < 32; d <<= 1) {
      const acc_t o = ts_scan_shfl_up(t, d);
      if (lane >= d) t = op.combine(o, t);
    }
    warps[lane] = t;
  }
  __syncthreads();
  const acc_t before_warp = warp == 0 ? op.identity() : warps[warp - 1];
  *total = warps[nwarps - 1];
  acc_t before_lane = ts_scan_shfl_up(incl, 1);
  if (lane == 0) before_lane = op.identity();
  __syncthreads();
  return op.combine(before_warp, before_lane);
}

// Scans tiles of rows (see the top of the file). out == 0: only each tile's total is written
// (to totals[tile]); carry_in != 0: tile b starts from carry_in[b] (else from the identity).
template <typename Op, typename In, typename Out>
__device__ __forceinline__ void ts_scan_rows(const In* __restrict__ in, Out* __restrict__ out,
                                             long long* __restrict__ idx,
                                             const typename Op::acc_t* __restrict__ carry_in,
                                             typename Op::acc_t* __restrict__ totals,
                                             long long rows, long long n, long long tiles,
                                             long long tile_len) {
  typedef typename Op::acc_t acc_t;
  __shared__ acc_t warps[32];
  const Op op;
  const long long chunk = (long long)blockDim.x * TS_SCAN_ITEMS;
  for (long long b = blockIdx.x; b < rows * tiles; b += gridDim.x) {
    const long long row = b / tiles;
    const long long start = (b % tiles) * tile_len;
    const long long end = start + tile_len < n ? start + tile_len : n;
    const In* rin = in + row * n;
    acc_t carry = carry_in ? carry_in[b] : op.identity();
    for (long long base = start; base < end; base += chunk) {
      const long long first = base + (long long)threadIdx.x * TS_SCAN_ITEMS;
      acc_t run[TS_SCAN_ITEMS];
      acc_t local = op.identity();
#pragma unroll
      for (int i = 0; i < TS_SCAN_ITEMS; ++i) {
        const long long j = first + i;
        if (j < end) local = op.combine(local, op.map(rin[j], j));
        run[i] = local;
      }
      acc_t chunk_total;
      const acc_t excl = ts_scan_block(op, local, warps, &chunk_total);
      if (out) {
        const acc_t pre = op.combine(carry, excl);
#pragma unroll
        for (int i = 0; i < TS_SCAN_ITEMS; ++i) {
          const long long j = first + i;
          if (j < end) op.store(op.combine(pre, run[i]), out, idx, row * n + j);
        }
      }
      carry = op.combine(carry, chunk_total);
    }
    if (totals && threadIdx.x == 0) totals[b] = carry;
  }
}

// Each row's `tiles` totals to exclusive carries, in place: one block per row (grid-stride),
// walking the row's totals in chunks of blockDim.x with the block scan.
template <typename Op>
__device__ __forceinline__ void ts_scan_carry(typename Op::acc_t* __restrict__ totals,
                                              long long rows, long long tiles) {
  typedef typename Op::acc_t acc_t;
  __shared__ acc_t warps[32];
  const Op op;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    acc_t carry = op.identity();
    for (long long base = 0; base < tiles; base += blockDim.x) {
      const long long t = base + threadIdx.x;
      const acc_t here = t < tiles ? totals[r * tiles + t] : op.identity();
      acc_t chunk_total;
      const acc_t excl = ts_scan_block(op, here, warps, &chunk_total);
      if (t < tiles) totals[r * tiles + t] = op.combine(carry, excl);
      carry = op.combine(carry, chunk_total);
    }
  }
}

#endif  // TYPESTATE_TENSOR_SCAN_CUH
