// Tensor reductions (sum, prod, mean, max, min, argmax, argmin) over any strided view, in two
// kernel forms chosen per launch by the host (src/engine_gpu/reduce/plan.rs):
//
// - ts_reduce_row: a reduced dim is the fastest-moving one in memory (a last-axis or a full
//   reduction). A group of BX threads (8 to 512, blockDim.x) folds one output's elements;
//   a block holds blockDim.y such groups. Along a contiguous run (CONTIG) each thread loads
//   VEC elements per 16-byte aligned vector, four vectors in flight per step, after peeling
//   the unaligned head of its range; otherwise an OffsetCalculator maps the reduced linear
//   index to an offset. The group then folds its threads' accumulators with warp shuffles
//   and, for BX > 32, one shared-memory word per warp.
// - ts_reduce_col: a kept dim is the fastest-moving one (a first- or middle-axis reduction of
//   a contiguous tensor, the classic column reduction): consecutive threads of a warp own
//   consecutive outputs (OVEC each, loaded as one aligned vector), so every load of the warp
//   reads one contiguous span; blockDim.y threads split the reduced elements and fold their
//   accumulators through shared memory in a tree.
//
// Both are one pass when one block (row) or one column of blocks (col) covers each output.
// When the outputs are too few to fill the GPU, the host splits each output's elements into
// gridDim.y chunks: each block then writes its accumulator to partial[split * num_out + o],
// and a second launch of ts_reduce_col with FROM_ACC (input: the partials, split as its
// reduced dim) folds and projects them. Partial accumulators keep the accumulation type, and
// the tree shapes are fixed by the launch, so a result does not depend on timing.
//
// The op is a functor (ts_red_sum<In, Out>, ...) with
//   acc_t identity(), acc_t map(In x, long long index), acc_t combine(acc_t, acc_t),
//   Out project(acc_t)
// mirroring src/ops/reduce/op.rs (`Reduction`): accumulation types, NaN and tie rules are the
// same. `index` is the element's logical index (row-major over the reduced dims), read only
// by the arg ops; the compiler drops its arithmetic for the others.
//
// index_t / offset_t are unsigned int / int when the host proved every count, index and
// offset fits 31 bits, else unsigned long long / long long; loops never wrap (a bound plus
// four block strides stays below 2^32 in the 32-bit case).
//
// Requires half.cuh, ops.cuh, int_divider.cuh and offset_calculator.cuh before it.
// No #include: NVRTC compiles this without toolkit headers.
#ifndef TYPESTATE_TENSOR_REDUCE_CUH
#define TYPESTATE_TENSOR_REDUCE_CUH

// Threads per block, at most (the entry points' __launch_bounds__).
#define TS_RED_THREADS 512

// N elements of T in one naturally aligned aggregate: one vector load.
template <typename T, int N>
struct __align__(sizeof(T) * N) ts_red_vec {
  T v[N];
};

// ---- values ------------------------------------------------------------------------------

// An element in its compute type (ops.cuh's ts_compute; bool counts as 0 or 1).
__device__ __forceinline__ float ts_red_widen(float x) { return x; }
__device__ __forceinline__ double ts_red_widen(double x) { return x; }
__device__ __forceinline__ float ts_red_widen(ts_f16 x) { return ts_f16_to_float(x); }
__device__ __forceinline__ float ts_red_widen(ts_bf16 x) { return ts_bf16_to_float(x); }
__device__ __forceinline__ int ts_red_widen(int x) { return x; }
__device__ __forceinline__ long long ts_red_widen(long long x) { return x; }
__device__ __forceinline__ unsigned int ts_red_widen(unsigned char x) { return x; }
__device__ __forceinline__ int ts_red_widen(signed char x) { return x; }
__device__ __forceinline__ int ts_red_widen(short x) { return x; }
__device__ __forceinline__ unsigned int ts_red_widen(unsigned short x) { return x; }
__device__ __forceinline__ unsigned int ts_red_widen(unsigned int x) { return x; }
__device__ __forceinline__ unsigned long long ts_red_widen(unsigned long long x) { return x; }
__device__ __forceinline__ unsigned int ts_red_widen(bool x) { return x ? 1u : 0u; }

// The type sum, prod and mean accumulate in: float for f32 and the half types, double for
// f64, and the 64 bits of a wrapping i64 for integers and bool (unsigned, where C++ defines
// wrapping; converting an int or long long to it sign-extends, an unsigned int zero-extends,
// and a u64's bits are taken as they are).
template <typename In>
struct ts_sum_acc {
  typedef unsigned long long type;
};
template <>
struct ts_sum_acc<float> {
  typedef float type;
};
template <>
struct ts_sum_acc<double> {
  typedef double type;
};
template <>
struct ts_sum_acc<ts_f16> {
  typedef float type;
};
template <>
struct ts_sum_acc<ts_bf16> {
  typedef float type;
};

// An accumulated or compute value stored as Out: rounded once for the half types, the bits of
// the i64 for integer sums, a plain conversion (exact) otherwise.
template <typename Out>
struct ts_red_out {
  template <typename A>
  static __device__ __forceinline__ Out from(A a) {
    return (Out)a;
  }
};
template <>
struct ts_red_out<ts_f16> {
  static __device__ __forceinline__ ts_f16 from(float a) { return ts_float_to_f16(a); }
};
template <>
struct ts_red_out<ts_bf16> {
  static __device__ __forceinline__ ts_bf16 from(float a) { return ts_float_to_bf16(a); }
};

// The smallest and largest compute values: the neutral starts of max and min.
template <typename V>
struct ts_red_limits;
template <>
struct ts_red_limits<float> {
  static __device__ __forceinline__ float lowest() { return __int_as_float(0xff800000); }
  static __device__ __forceinline__ float highest() { return __int_as_float(0x7f800000); }
};
template <>
struct ts_red_limits<double> {
  static __device__ __forceinline__ double lowest() {
    return __longlong_as_double(0xfff0000000000000LL);
  }
  static __device__ __forceinline__ double highest() {
    return __longlong_as_double(0x7ff0000000000000LL);
  }
};
template <>
struct ts_red_limits<int> {
  static __device__ __forceinline__ int lowest() { return -2147483647 - 1; }
  static __device__ __forceinline__ int highest() { return 2147483647; }
};
template <>
struct ts_red_limits<long long> {
  static __device__ __forceinline__ long long lowest() { return -9223372036854775807LL - 1; }
  static __device__ __forceinline__ long long highest() { return 9223372036854775807LL; }
};
template <>
struct ts_red_limits<unsigned int> {
  static __device__ __forceinline__ unsigned int lowest() { return 0u; }
  static __device__ __forceinline__ unsigned int highest() { return 0xffffffffu; }
};
template <>
struct ts_red_limits<unsigned long long> {
  static __device__ __forceinline__ unsigned long long lowest() { return 0ull; }
  static __device__ __forceinline__ unsigned long long highest() { return 0xffffffffffffffffull; }
};

// ---- warp shuffles -----------------------------------------------------------------------

// Lane + d's value within segments of w lanes (w a power of two, at most 32). Every lane of
// the warp calls it.
#define TS_RED_SHFL(T)                                                           \
  __device__ __forceinline__ T ts_red_shfl(T v, unsigned int d, int w) {         \
    return __shfl_down_sync(0xffffffffu, v, d, w);                               \
  }
TS_RED_SHFL(float)
TS_RED_SHFL(double)
TS_RED_SHFL(int)
TS_RED_SHFL(unsigned int)
TS_RED_SHFL(long long)
TS_RED_SHFL(unsigned long long)
#undef TS_RED_SHFL

// ---- ops ---------------------------------------------------------------------------------

// The accumulator of argmax / argmin: a compute value and its logical index.
template <typename V>
struct ts_arg {
  V value;
  long long index;
};

template <typename V>
__device__ __forceinline__ ts_arg<V> ts_red_shfl(ts_arg<V> a, unsigned int d, int w) {
  a.value = ts_red_shfl(a.value, d, w);
  a.index = ts_red_shfl(a.index, d, w);
  return a;
}

template <typename In, typename Out>
struct ts_red_sum {
  typedef In in_t;
  typedef Out out_t;
  typedef typename ts_sum_acc<In>::type acc_t;
  __device__ __forceinline__ explicit ts_red_sum(double) {}
  __device__ __forceinline__ acc_t identity() const { return (acc_t)0; }
  __device__ __forceinline__ acc_t map(In x, long long) const { return (acc_t)ts_red_widen(x); }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const { return a + b; }
  __device__ __forceinline__ Out project(acc_t a) const { return ts_red_out<Out>::from(a); }
};

template <typename In, typename Out>
struct ts_red_prod {
  typedef In in_t;
  typedef Out out_t;
  typedef typename ts_sum_acc<In>::type acc_t;
  __device__ __forceinline__ explicit ts_red_prod(double) {}
  __device__ __forceinline__ acc_t identity() const { return (acc_t)1; }
  __device__ __forceinline__ acc_t map(In x, long long) const { return (acc_t)ts_red_widen(x); }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const { return a * b; }
  __device__ __forceinline__ Out project(acc_t a) const { return ts_red_out<Out>::from(a); }
};

// The sum divided by the element count (converted to acc_t as the host's `div_count` does),
// rounded once to Out; 0 / 0 is NaN.
template <typename In, typename Out>
struct ts_red_mean {
  typedef In in_t;
  typedef Out out_t;
  typedef typename ts_sum_acc<In>::type acc_t;
  double count;
  __device__ __forceinline__ explicit ts_red_mean(double n) : count(n) {}
  __device__ __forceinline__ acc_t identity() const { return (acc_t)0; }
  __device__ __forceinline__ acc_t map(In x, long long) const { return (acc_t)ts_red_widen(x); }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const { return a + b; }
  __device__ __forceinline__ Out project(acc_t a) const {
    return ts_red_out<Out>::from(a / (acc_t)count);
  }
};

// a if it is NaN or larger, else b (which keeps a NaN b): NaN propagates from either side.
template <typename In, typename Out>
struct ts_red_max {
  typedef In in_t;
  typedef Out out_t;
  typedef typename ts_compute<In>::type acc_t;
  __device__ __forceinline__ explicit ts_red_max(double) {}
  __device__ __forceinline__ acc_t identity() const { return ts_red_limits<acc_t>::lowest(); }
  __device__ __forceinline__ acc_t map(In x, long long) const { return ts_red_widen(x); }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const {
    return (a != a || a > b) ? a : b;
  }
  __device__ __forceinline__ Out project(acc_t a) const { return ts_red_out<Out>::from(a); }
};

template <typename In, typename Out>
struct ts_red_min {
  typedef In in_t;
  typedef Out out_t;
  typedef typename ts_compute<In>::type acc_t;
  __device__ __forceinline__ explicit ts_red_min(double) {}
  __device__ __forceinline__ acc_t identity() const { return ts_red_limits<acc_t>::highest(); }
  __device__ __forceinline__ acc_t map(In x, long long) const { return ts_red_widen(x); }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const {
    return (a != a || a < b) ? a : b;
  }
  __device__ __forceinline__ Out project(acc_t a) const { return ts_red_out<Out>::from(a); }
};

// Whether (a, ia) beats (b, ib): a NaN beats every number, a better value wins, equal values
// go to the smaller index (src/ops/reduce/op.rs, `arg_beats`).
template <bool LARGER, typename V>
__device__ __forceinline__ bool ts_arg_beats(const ts_arg<V>& a, const ts_arg<V>& b) {
  const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
  if (a_nan || b_nan) {
    return a_nan && (!b_nan || a.index < b.index);
  }
  if (a.value != b.value) {
    return LARGER ? a.value > b.value : a.value < b.value;
  }
  return a.index < b.index;
}

template <typename In, typename Out>
struct ts_red_argmax {
  typedef In in_t;
  typedef Out out_t;
  typedef ts_arg<typename ts_compute<In>::type> acc_t;
  __device__ __forceinline__ explicit ts_red_argmax(double) {}
  __device__ __forceinline__ acc_t identity() const {
    acc_t a = {ts_red_limits<typename ts_compute<In>::type>::lowest(), 9223372036854775807LL};
    return a;
  }
  __device__ __forceinline__ acc_t map(In x, long long i) const {
    acc_t a = {ts_red_widen(x), i};
    return a;
  }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const {
    return ts_arg_beats<true>(a, b) ? a : b;
  }
  __device__ __forceinline__ Out project(acc_t a) const { return (Out)a.index; }
};

template <typename In, typename Out>
struct ts_red_argmin {
  typedef In in_t;
  typedef Out out_t;
  typedef ts_arg<typename ts_compute<In>::type> acc_t;
  __device__ __forceinline__ explicit ts_red_argmin(double) {}
  __device__ __forceinline__ acc_t identity() const {
    acc_t a = {ts_red_limits<typename ts_compute<In>::type>::highest(), 9223372036854775807LL};
    return a;
  }
  __device__ __forceinline__ acc_t map(In x, long long i) const {
    acc_t a = {ts_red_widen(x), i};
    return a;
  }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const {
    return ts_arg_beats<false>(a, b) ? a : b;
  }
  __device__ __forceinline__ Out project(acc_t a) const { return (Out)a.index; }
};

// ---- the row form ------------------------------------------------------------------------

// Folds elements [begin, end) of a contiguous run starting at `row` (element k at logical
// index l0 + k * ls), the calling thread taking every bx-th element (or vector) from tx.
template <class Op, int VEC, typename index_t>
__device__ __forceinline__ typename Op::acc_t ts_red_contig(
    const Op& op, const typename Op::in_t* __restrict__ row, index_t begin, index_t end,
    long long l0, long long ls, unsigned int tx, unsigned int bx) {
  typedef typename Op::in_t in_t;
  typedef typename Op::acc_t acc_t;
  typedef ts_red_vec<in_t, VEC> vec_t;
  acc_t acc = op.identity();
  const in_t* p = row + begin;
  const index_t len = end - begin;
  const long long lp = l0 + (long long)begin * ls;
  // Elements before the first VEC-aligned one. Elements are naturally aligned, so the
  // misalignment is a whole number of them.
  index_t head = 0;
  if (VEC > 1) {
    const unsigned int mis =
        (unsigned int)(((unsigned long long)p) % (VEC * sizeof(in_t))) / (unsigned int)sizeof(in_t);
    head = mis == 0 ? 0 : (index_t)(VEC - mis);
    head = head < len ? head : len;
  }
  for (index_t k = tx; k < head; k += bx) {
    acc = op.combine(acc, op.map(p[k], lp + (long long)k * ls));
  }
  const index_t nvec = (len - head) / VEC;
  const vec_t* pv = reinterpret_cast<const vec_t*>(p + head);
  const long long lv = lp + (long long)head * ls;
  index_t i = tx;
  for (; i + 3 * bx < nvec; i += 4 * bx) {
    vec_t v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      v[u] = pv[i + u * bx];
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const long long at = (long long)(i + u * bx) * VEC + e;
        acc = op.combine(acc, op.map(v[u].v[e], lv + at * ls));
      }
    }
  }
  for (; i < nvec; i += bx) {
    const vec_t v = pv[i];
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      acc = op.combine(acc, op.map(v.v[e], lv + ((long long)i * VEC + e) * ls));
    }
  }
  for (index_t k = head + nvec * VEC + tx; k < len; k += bx) {
    acc = op.combine(acc, op.map(p[k], lp + (long long)k * ls));
  }
  return acc;
}

// Folds the accumulators of each group of bx threads (a row of the block, threadIdx.y); the
// result is valid in the group's thread 0. Every thread of the block calls it.
template <class Op>
__device__ __forceinline__ typename Op::acc_t ts_red_group(const Op& op, typename Op::acc_t acc,
                                                          typename Op::acc_t* warp_acc,
                                                          unsigned int tx, unsigned int ty,
                                                          unsigned int bx) {
  if (bx <= 32) {
    for (unsigned int d = bx / 2; d > 0; d >>= 1) {
      acc = op.combine(acc, ts_red_shfl(acc, d, (int)bx));
    }
    return acc;
  }
  for (unsigned int d = 16; d > 0; d >>= 1) {
    acc = op.combine(acc, ts_red_shfl(acc, d, 32));
  }
  const unsigned int warps = bx / 32, lane = tx % 32, warp = tx / 32;
  __syncthreads();  // the previous group step's reads of warp_acc are done
  if (lane == 0) {
    warp_acc[ty * warps + warp] = acc;
  }
  __syncthreads();
  if (warp == 0) {
    acc = lane < warps ? warp_acc[ty * warps + lane] : op.identity();
    for (unsigned int d = 16; d > 0; d >>= 1) {
      acc = op.combine(acc, ts_red_shfl(acc, d, 32));
    }
  }
  return acc;
}

// One output per group of blockDim.x threads, blockDim.y outputs per block, chunk
// `blockIdx.y` of each output's elements. kept: output index -> (input offset, output
// offset); red: reduced index -> (input offset, logical index step). With CONTIG, red is one
// dim of input stride 1 (its logical stride is red.strides[0][1]).
template <class Op, int NK, int NR, typename index_t, typename offset_t, int VEC, bool CONTIG>
__device__ __forceinline__ void ts_reduce_row(
    const typename Op::in_t* __restrict__ in, typename Op::out_t* __restrict__ out,
    typename Op::acc_t* __restrict__ partial, index_t num_out, index_t red_n, index_t chunk,
    long long lbase, double count, const OffsetCalculator<NK, 2, index_t, offset_t>& kept,
    const OffsetCalculator<NR, 2, index_t, offset_t>& red) {
  typedef typename Op::acc_t acc_t;
  __shared__ acc_t warp_acc[TS_RED_THREADS / 32];
  const Op op(count);
  const unsigned int bx = blockDim.x, by = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
  const index_t split = blockIdx.y;
  // The host launches ceil(red_n / chunk) splits (1 when red_n is 0), so begin <= red_n.
  const index_t begin = split * chunk;
  const index_t end = red_n - begin < chunk ? red_n : begin + chunk;
  const index_t groups = (num_out + by - 1) / by;
  for (index_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const index_t o = g * by + ty;
    acc_t acc = op.identity();
    offset_t offs[2] = {0, 0};
    if (o < num_out) {
      kept.get(o, offs);
      const typename Op::in_t* row = in + offs[0];
      if (CONTIG) {
        acc = ts_red_contig<Op, VEC, index_t>(op, row, begin, end, lbase,
                                              (long long)red.strides[0][1], tx, bx);
      } else {
        for (index_t j = begin + tx; j < end; j += bx) {
          offset_t r[2];
          red.get(j, r);
          acc = op.combine(acc, op.map(row[r[0]], lbase + (long long)r[1]));
        }
      }
    }
    acc = ts_red_group(op, acc, warp_acc, tx, ty, bx);
    if (tx == 0 && o < num_out) {
      if (gridDim.y == 1) {
        out[offs[1]] = op.project(acc);
      } else {
        partial[split * num_out + o] = acc;
      }
    }
  }
}

// ---- the column form ---------------------------------------------------------------------

// The element type a column launch reads: the op's input, or (FROM_ACC) the partial
// accumulators of a split launch, which it folds without mapping.
template <class Op, bool FROM_ACC>
struct ts_red_src {
  typedef typename Op::in_t type;
};
template <class Op>
struct ts_red_src<Op, true> {
  typedef typename Op::acc_t type;
};

template <class Op, bool FROM_ACC>
__device__ __forceinline__ typename Op::acc_t ts_red_take(const Op& op,
                                                          const typename ts_red_src<Op, FROM_ACC>::type& x,
                                                          long long index) {
  if constexpr (FROM_ACC) {
    return x;
  } else {
    return op.map(x, index);
  }
}

// OVEC consecutive outputs per thread (blockDim.x threads along the outputs), blockDim.y
// threads along chunk `blockIdx.y` of the reduced elements. With OVEC > 1 the host checked
// that outputs o..o+OVEC-1 (o a multiple of OVEC) are consecutive input elements of the
// innermost kept dim, VEC-aligned at every reduced offset, and OVEC output strides of that
// dim apart (kept.strides[NK - 1][1]).
template <class Op, int NK, int NR, typename index_t, typename offset_t, int OVEC, bool FROM_ACC>
__device__ __forceinline__ void ts_reduce_col(
    const typename ts_red_src<Op, FROM_ACC>::type* __restrict__ in,
    typename Op::out_t* __restrict__ out, typename Op::acc_t* __restrict__ partial,
    index_t num_out, index_t red_n, index_t chunk, long long lbase, double count,
    const OffsetCalculator<NK, 2, index_t, offset_t>& kept,
    const OffsetCalculator<NR, 2, index_t, offset_t>& red) {
  typedef typename Op::acc_t acc_t;
  typedef typename ts_red_src<Op, FROM_ACC>::type src_t;
  typedef ts_red_vec<src_t, OVEC> vec_t;
  __shared__ acc_t smem[TS_RED_THREADS * OVEC];
  const Op op(count);
  const unsigned int bx = blockDim.x, by = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
  const index_t split = blockIdx.y;
  const index_t begin = split * chunk;
  const index_t end = red_n - begin < chunk ? red_n : begin + chunk;
  const index_t nvec_out = num_out / OVEC;
  const index_t groups = (nvec_out + bx - 1) / bx;
  const offset_t out_inner = kept.strides[NK - 1][1];
  for (index_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const index_t ov = g * bx + tx;
    acc_t acc[OVEC];
#pragma unroll
    for (int k = 0; k < OVEC; ++k) {
      acc[k] = op.identity();
    }
    offset_t offs[2] = {0, 0};
    if (ov < nvec_out) {
      kept.get(ov * OVEC, offs);
      const src_t* base = in + offs[0];
      index_t j = begin + ty;
      for (; j + 3 * by < end; j += 4 * by) {
        offset_t r[4][2];
        vec_t v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          red.get(j + u * by, r[u]);
          v[u] = *reinterpret_cast<const vec_t*>(base + r[u][0]);
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
#pragma unroll
          for (int k = 0; k < OVEC; ++k) {
            acc[k] = op.combine(acc[k], ts_red_take<Op, FROM_ACC>(op, v[u].v[k],
                                                                   lbase + (long long)r[u][1]));
          }
        }
      }
      for (; j < end; j += by) {
        offset_t r[2];
        red.get(j, r);
        const vec_t v = *reinterpret_cast<const vec_t*>(base + r[0]);
#pragma unroll
        for (int k = 0; k < OVEC; ++k) {
          acc[k] = op.combine(acc[k], ts_red_take<Op, FROM_ACC>(op, v.v[k], lbase + (long long)r[1]));
        }
      }
    }
    if (by > 1) {
      __syncthreads();  // the previous group step's reads of smem are done
      const unsigned int me = (ty * bx + tx) * OVEC;
#pragma unroll
      for (int k = 0; k < OVEC; ++k) {
        smem[me + k] = acc[k];
      }
      __syncthreads();
      for (unsigned int s = by / 2; s > 0; s >>= 1) {
        if (ty < s) {
#pragma unroll
          for (int k = 0; k < OVEC; ++k) {
            smem[me + k] = op.combine(smem[me + k], smem[me + s * bx * OVEC + k]);
          }
        }
        __syncthreads();
      }
#pragma unroll
      for (int k = 0; k < OVEC; ++k) {
        acc[k] = smem[me + k];
      }
    }
    if (ty == 0 && ov < nvec_out) {
#pragma unroll
      for (int k = 0; k < OVEC; ++k) {
        if (gridDim.y == 1) {
          out[offs[1] + (offset_t)k * out_inner] = op.project(acc[k]);
        } else {
          partial[split * num_out + ov * OVEC + k] = acc[k];
        }
      }
    }
  }
}

// ---- sum_abs, sum_sq -----------------------------------------------------------------------

// sum |x| (BLAS / Caffe asum) and sum x * x (Caffe sumsq) of floats, in ts_sum_acc<In> (float
// for f32 and the half types, double for f64), rounded once to Out: ts_red_sum with the
// magnitude or square taken in acc_t as each element is folded, so one pass and no temporary.
// Mirrors `SumAbs` / `SumSq` in src/ops/reduce/op.rs.
template <typename In, typename Out>
struct ts_red_sum_abs {
  typedef In in_t;
  typedef Out out_t;
  typedef typename ts_sum_acc<In>::type acc_t;
  __device__ __forceinline__ explicit ts_red_sum_abs(double) {}
  __device__ __forceinline__ acc_t identity() const { return (acc_t)0; }
  __device__ __forceinline__ acc_t map(In x, long long) const {
    return ts_abs((acc_t)ts_red_widen(x));
  }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const { return a + b; }
  __device__ __forceinline__ Out project(acc_t a) const { return ts_red_out<Out>::from(a); }
};

template <typename In, typename Out>
struct ts_red_sum_sq {
  typedef In in_t;
  typedef Out out_t;
  typedef typename ts_sum_acc<In>::type acc_t;
  __device__ __forceinline__ explicit ts_red_sum_sq(double) {}
  __device__ __forceinline__ acc_t identity() const { return (acc_t)0; }
  __device__ __forceinline__ acc_t map(In x, long long) const {
    const acc_t v = (acc_t)ts_red_widen(x);
    return v * v;
  }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const { return a + b; }
  __device__ __forceinline__ Out project(acc_t a) const { return ts_red_out<Out>::from(a); }
};

#endif  // TYPESTATE_TENSOR_REDUCE_CUH
