// Radix sorting along rows (issue 28): a radix select for `topk` and a least-significant-digit
// radix sort for rows longer than one block's shared memory (src/engine_gpu/sort/ plans them).
//
// Both work on the order-preserving keys of sort.cuh (ts_sort_dir_key: NaN largest, -0.0 as
// +0.0, flipped for descending), 8 bits at a time, and both keep sort.cuh's order among equal
// keys: the lower index first.
//
// - ts_topk_rows: one block per row. Digit by digit from the top, a histogram of the keys that
//   still match the chosen prefix finds the digit holding the k-th smallest key; `prefix` and
//   `mask` grow and `need` becomes how many keys equal to the prefix (under the mask) are
//   still wanted; it stops early when that digit's count is exactly `need`. One more pass
//   takes every key below the prefix and the first `need` equal to it into shared memory (in
//   any order when every key equal to it is wanted; else in index order, ranked by a
//   block-wide count, so that ties at the k-th key keep the lowest indices); those k (<= TS_SORT_TILE) entries are sorted by the
//   bitonic network of sort.cuh and their values gathered from the row.
// - ts_radix_rows: rows that fit one block (up to 4096 entries), sorted there, one pass per
//   byte of the key, as a stable counting sort in shared memory.
// - ts_radix_hist / ts_radix_scan / ts_radix_scatter: one stable counting pass of an LSD sort
//   over all rows at once, on (key, id) pairs where id = row * n + i (below 2^32). The passes
//   run over the key's bytes from the lowest, then over the bytes of the row number (id / n),
//   so the result is ordered by row, then key, then index. hist counts each tile's digits
//   into a [256][tiles] table; scan turns each digit's row of it into exclusive offsets and
//   the digit's total; scatter ranks its tile's entries stably (warp by warp, 32 at a time,
//   with ts_match_digit), reorders them by digit in shared memory and writes them to their
//   places, each digit's run contiguous. The first pass reads the input values themselves
//   (ids implicit); the last pass of a whole sort writes the values at the ids and the ids'
//   places in their rows instead of keys and ids; ts_radix_final gathers the first m of each
//   row for a partial one.
//
// Requires half.cuh, ops.cuh and sort.cuh before it.
#ifndef TYPESTATE_TENSOR_RADIX_CUH
#define TYPESTATE_TENSOR_RADIX_CUH

#define TS_RADIX_THREADS 256
#define TS_RADIX_WARPS (TS_RADIX_THREADS / 32)
// Loads in flight a thread in the radix select's counting passes.
#define TS_SEL_ITEMS 4

__device__ __forceinline__ unsigned int ts_lanes_below() {
  return (1u << (threadIdx.x & 31u)) - 1u;
}

// The lanes of the warp whose digit `d` (0..255, or 256 for none) equals this lane's, for a
// lane with a digit: __match_any_sync by nine ballots (one per bit and one for having a
// digit), which issue at full rate where MATCH measured the counting passes compute-bound
// (the LSD histogram pass 640 -> 405 us on 2^26 keys, the row sort of 2^16 x 1024 1.95 ->
// 1.69 ms, H100).
// Every lane of the warp calls it; a lane without a digit gets an unspecified mask.
__device__ __forceinline__ unsigned int ts_match_digit(unsigned int d) {
  unsigned int peers = __ballot_sync(0xffffffffu, d < 256u);
#pragma unroll
  for (int b = 0; b < 8; ++b) {
    const unsigned int set = __ballot_sync(0xffffffffu, (d >> b) & 1u);
    peers &= ((d >> b) & 1u) ? set : ~set;
  }
  return peers;
}

// The stable rank of this lane's digit `d` (< 256; 256 for none, whose rank is unspecified)
// among its warp's entries so far: `counts[d]` (the warp's running count of the digit in
// shared memory) before this round of 32, plus the lanes below with the same digit; `counts`
// grows by the round's lanes of each digit. Every lane of the warp calls it, round by round.
__device__ __forceinline__ unsigned int ts_radix_rank(unsigned int d, unsigned int* counts) {
  const unsigned int lane = threadIdx.x & 31u;
  const unsigned int peers = ts_match_digit(d);
  const unsigned int leader = (unsigned int)(__ffs(peers) - 1);
  unsigned int before = 0;
  if (lane == leader && d < 256) {
    before = counts[d];
    counts[d] = before + __popc(peers);
  }
  before = __shfl_sync(0xffffffffu, before, leader);
  __syncwarp();
  return before + __popc(peers & ts_lanes_below());
}

// ---- topk: a radix select per row ----------------------------------------------------------

// Block-wide: how many threads below this one have `lt` (and `eq`), and the block's totals.
// Every thread of the block calls it; it ends synchronised.
__device__ __forceinline__ void ts_sel_count(bool lt, bool eq, unsigned int* warp_lt,
                                             unsigned int* warp_eq, unsigned int& below_lt,
                                             unsigned int& below_eq, unsigned int& all_lt,
                                             unsigned int& all_eq) {
  const unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned int mlt = __ballot_sync(0xffffffffu, lt);
  const unsigned int meq = __ballot_sync(0xffffffffu, eq);
  if (lane == 0) {
    warp_lt[warp] = __popc(mlt);
    warp_eq[warp] = __popc(meq);
  }
  __syncthreads();
  unsigned int a = 0, b = 0, ta = 0, tb = 0;
  for (unsigned int w = 0; w < (blockDim.x >> 5); ++w) {
    const unsigned int x = warp_lt[w], y = warp_eq[w];
    if (w < warp) {
      a += x;
      b += y;
    }
    ta += x;
    tb += y;
  }
  below_lt = a + __popc(mlt & ts_lanes_below());
  below_eq = b + __popc(meq & ts_lanes_below());
  all_lt = ta;
  all_eq = tb;
  __syncthreads();
}

// The k smallest keys of each row of the row-major [rows, n] `in` (k <= TS_SORT_TILE,
// n < 2^31), sorted, into the row-major [rows, k] `vals` and `idx`. blockDim.x is a multiple
// of 32.
template <typename T>
__device__ __forceinline__ void ts_topk_rows(const T* __restrict__ in, T* __restrict__ vals,
                                             long long* __restrict__ idx, long long rows,
                                             long long n, long long k, bool desc) {
  typedef typename ts_sort_key<T>::K K;
  __shared__ K sk[TS_SORT_TILE];
  __shared__ int si[TS_SORT_TILE];
  __shared__ unsigned int hist[256];
  __shared__ unsigned int warp_lt[32], warp_eq[32];
  __shared__ unsigned int s_digit, s_need, s_count, s_fill;
  const unsigned int lane = threadIdx.x & 31u;
  const unsigned int kk = (unsigned int)k;
  unsigned int p = 1;
  while (p < kk) p <<= 1;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* r = in + row * n;
    K prefix = 0, mask = 0;
    unsigned int need = kk;
    for (int shift = 8 * (int)sizeof(K) - 8; shift >= 0; shift -= 8) {
      for (unsigned int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0;
      __syncthreads();
      // TS_SEL_ITEMS loads in flight a thread, then their counting.
      for (long long i0 = 0; i0 < n; i0 += (long long)blockDim.x * TS_SEL_ITEMS) {
        K kv[TS_SEL_ITEMS];
#pragma unroll
        for (int u = 0; u < TS_SEL_ITEMS; ++u) {
          const long long i = i0 + (long long)u * blockDim.x + threadIdx.x;
          kv[u] = i < n ? ts_sort_dir_key(r[i], desc) : (K)0;
        }
#pragma unroll
        for (int u = 0; u < TS_SEL_ITEMS; ++u) {
          const long long i = i0 + (long long)u * blockDim.x + threadIdx.x;
          unsigned int d = 256;
          if (i < n && (K)(kv[u] & mask) == prefix) d = (unsigned int)(kv[u] >> shift) & 0xffu;
          // One shared-memory atomic per distinct digit of the warp. MATCH here, not
          // ts_match_digit: after the first digit most lanes have none, and one instruction
          // beats nine ballots (measured: topk 5.2 against 9.4 ms on 2^14 x 32768).
          const unsigned int peers = __match_any_sync(0xffffffffu, d);
          if (d < 256 && lane == (unsigned int)(__ffs(peers) - 1)) atomicAdd(&hist[d], __popc(peers));
        }
      }
      __syncthreads();
      if (threadIdx.x < 32) {
        // Lane l owns digits 8l .. 8l + 7; the lane whose range holds the need-th key picks.
        unsigned int c[8], sum = 0;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          c[j] = hist[lane * 8 + j];
          sum += c[j];
        }
        unsigned int inc = sum;
#pragma unroll
        for (unsigned int o = 1; o < 32; o <<= 1) {
          const unsigned int t = __shfl_up_sync(0xffffffffu, inc, o);
          if (lane >= o) inc += t;
        }
        unsigned int acc = inc - sum;
        if (acc < need && need <= inc) {
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            if (acc < need && need <= acc + c[j]) {
              s_digit = lane * 8 + j;
              s_need = need - acc;
              s_count = c[j];
            }
            acc += c[j];
          }
        }
      }
      __syncthreads();
      prefix |= (K)((K)s_digit << shift);
      mask |= (K)((K)0xffu << shift);
      need = s_need;
      if (s_count == need) break;  // every key equal to the prefix is wanted
    }
    if (s_count == need) {
      // Every key at or below the prefix is wanted (k of them): taken in any order, by
      // warp-aggregated slots, since the network below orders them by (key, index).
      if (threadIdx.x == 0) s_fill = 0;
      __syncthreads();
      for (long long i0 = 0; i0 < n; i0 += (long long)blockDim.x * TS_SEL_ITEMS) {
        K kv[TS_SEL_ITEMS];
#pragma unroll
        for (int u = 0; u < TS_SEL_ITEMS; ++u) {
          const long long i = i0 + (long long)u * blockDim.x + threadIdx.x;
          kv[u] = i < n ? ts_sort_dir_key(r[i], desc) : (K)~(K)0;
        }
#pragma unroll
        for (int u = 0; u < TS_SEL_ITEMS; ++u) {
          const long long i = i0 + (long long)u * blockDim.x + threadIdx.x;
          const bool take = i < n && (K)(kv[u] & mask) <= prefix;
          const unsigned int who = __ballot_sync(0xffffffffu, take);
          unsigned int base = 0;
          if (who != 0 && lane == 0) base = atomicAdd(&s_fill, __popc(who));
          base = __shfl_sync(0xffffffffu, base, 0);
          if (take) {
            const unsigned int slot = base + __popc(who & ts_lanes_below());
            sk[slot] = kv[u];
            si[slot] = (int)i;
          }
        }
      }
    } else {
      // Keys below the prefix fill slots [0, kk - need) in index order, the first `need`
      // keys equal to it (ties at the k-th key: the lowest indices) the slots after.
      const unsigned int below = kk - need;
      unsigned int got_lt = 0, got_eq = 0;
      for (long long i0 = 0; i0 < n && (got_lt < below || got_eq < need); i0 += blockDim.x) {
        const long long i = i0 + threadIdx.x;
        K key = 0;
        bool lt = false, eq = false;
        if (i < n) {
          key = ts_sort_dir_key(r[i], desc);
          const K m = (K)(key & mask);
          lt = m < prefix;
          eq = m == prefix;
        }
        unsigned int bl, be, tl, te;
        ts_sel_count(lt, eq, warp_lt, warp_eq, bl, be, tl, te);
        if (lt) {
          sk[got_lt + bl] = key;
          si[got_lt + bl] = (int)i;
        } else if (eq && got_eq + be < need) {
          sk[below + got_eq + be] = key;
          si[below + got_eq + be] = (int)i;
        }
        got_lt += tl;
        got_eq += te;
      }
    }
    for (unsigned int i = kk + threadIdx.x; i < p; i += blockDim.x) {
      sk[i] = (K)~(K)0;
      si[i] = TS_SORT_PAD_INDEX;
    }
    __syncthreads();
    ts_sort_smem(sk, si, p, 0ull);
    for (unsigned int i = threadIdx.x; i < kk; i += blockDim.x) {
      const int j = si[i];
      vals[row * k + i] = r[j];
      idx[row * k + i] = (long long)j;
    }
    __syncthreads();
  }
}

// ---- the LSD radix sort ----------------------------------------------------------------------

// Entries per thread of one LSD tile: 8 for keys up to 4 bytes, 4 for 8-byte keys, so that a
// thread's entries and ranks stay within 64 registers (four blocks of 256 resident on each
// multiprocessor; 16 entries measured 115 registers, two blocks).
template <typename K>
struct ts_radix_items {
  enum { value = sizeof(K) > 4 ? 4 : 8 };
};

// The digit of pass `pass`: the key's bytes from the lowest, then the row number's.
template <typename K>
__device__ __forceinline__ unsigned int ts_radix_digit(K key, unsigned int id, int pass,
                                                       int key_passes, unsigned int n) {
  if (pass < key_passes) return (unsigned int)(key >> (8 * pass)) & 0xffu;
  return ((id / n) >> (8 * (pass - key_passes))) & 0xffu;
}

// Entry e of the pass's input: the first pass reads the values (ids implicit).
template <typename T>
__device__ __forceinline__ void ts_radix_load(const T* __restrict__ in,
                                              const typename ts_sort_key<T>::K* __restrict__ keys,
                                              const unsigned int* __restrict__ ids, long long e,
                                              int pass, bool desc,
                                              typename ts_sort_key<T>::K& key, unsigned int& id) {
  if (pass == 0) {
    key = ts_sort_dir_key(in[e], desc);
    id = (unsigned int)e;
  } else {
    key = keys[e];
    id = ids[e];
  }
}

// Exclusive prefix over the block of each thread's `v` (blockDim.x == TS_RADIX_THREADS);
// `total` gets the block's sum. Ends synchronised.
__device__ __forceinline__ unsigned int ts_radix_block_scan(unsigned int v, unsigned int* warps,
                                                            unsigned int& total) {
  const unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  unsigned int inc = v;
#pragma unroll
  for (unsigned int o = 1; o < 32; o <<= 1) {
    const unsigned int t = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += t;
  }
  if (lane == 31) warps[warp] = inc;
  __syncthreads();
  unsigned int before = 0, all = 0;
#pragma unroll
  for (unsigned int w = 0; w < TS_RADIX_WARPS; ++w) {
    const unsigned int x = warps[w];
    if (w < warp) before += x;
    all += x;
  }
  total = all;
  __syncthreads();
  return before + inc - v;
}

// Thread d of the block (blockDim.x == 256): the warps' counts of digit d in `warp_hist`
// become their exclusive offsets among the digit's entries, and the digit's start in the
// block's tile (an exclusive scan over the digits) is returned. Ends synchronised.
__device__ __forceinline__ unsigned int ts_radix_digit_start(
    unsigned int (*warp_hist)[256], unsigned int* warps) {
  const unsigned int d = threadIdx.x;
  unsigned int run = 0;
#pragma unroll
  for (int w = 0; w < TS_RADIX_WARPS; ++w) {
    const unsigned int c = warp_hist[w][d];
    warp_hist[w][d] = run;
    run += c;
  }
  unsigned int all;
  return ts_radix_block_scan(run, warps, all);
}

// Rows of at most TS_RADIX_THREADS * ITEMS entries (ITEMS 4, 8 or 16, the host's choice by
// row length; 16 only for keys up to 4 bytes): one block per row sorts it in registers and
// shared memory (each thread holding ceil(n / TS_RADIX_THREADS) <= ITEMS entries), one byte of the key per pass from the lowest, each pass a stable counting sort (the warps rank their
// contiguous chunks 32 entries at a time, as ts_radix_scatter does). Positions past the row
// take the largest key and sort after every real entry (after NaN too: a stable pass keeps
// them behind the real entries of the same key). The first m of each sorted row go out.
template <typename T, int ITEMS>
__device__ __forceinline__ void ts_radix_rows(const T* __restrict__ in, T* __restrict__ vals,
                                              long long* __restrict__ idx, long long rows,
                                              long long n, long long m, bool desc) {
  typedef typename ts_sort_key<T>::K K;
  static_assert(ITEMS <= 8 || sizeof(K) <= 4, "16 entries a thread only for keys up to 4 bytes");
  enum { items = ITEMS };
  __shared__ unsigned int warp_hist[TS_RADIX_WARPS][256];
  __shared__ unsigned int digit_start[256];
  __shared__ unsigned int warps[TS_RADIX_WARPS];
  __shared__ K sk[TS_RADIX_THREADS * items];
  __shared__ unsigned short sid[TS_RADIX_THREADS * items];
  const unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  // Entries a thread holds: just enough for the row (the rest of the unrolled slots idle).
  const int used = (int)((n + TS_RADIX_THREADS - 1) / TS_RADIX_THREADS);
  const unsigned int first = warp * 32u * (unsigned int)used + lane;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* r = in + row * n;
    K key[items];
    unsigned short id[items];
    unsigned short rank[items];
#pragma unroll
    for (int j = 0; j < items; ++j) {
      const unsigned int q = first + 32u * j;
      key[j] = j < used && (long long)q < n ? ts_sort_dir_key(r[q], desc) : (K)~(K)0;
      id[j] = (unsigned short)q;
    }
    for (int pass = 0; pass < (int)sizeof(K); ++pass) {
      const int shift = 8 * pass;
#pragma unroll
      for (int w = 0; w < TS_RADIX_WARPS; ++w) warp_hist[w][threadIdx.x] = 0;
      __syncthreads();
#pragma unroll
      for (int j = 0; j < items; ++j) {
        if (j < used) {
          const unsigned int d = (unsigned int)(key[j] >> shift) & 0xffu;
          rank[j] = (unsigned short)ts_radix_rank(d, warp_hist[warp]);
        }
      }
      __syncthreads();
      digit_start[threadIdx.x] = ts_radix_digit_start(warp_hist, warps);
      __syncthreads();
#pragma unroll
      for (int j = 0; j < items; ++j) {
        if (j < used) {
          const unsigned int d = (unsigned int)(key[j] >> shift) & 0xffu;
          const unsigned int at = digit_start[d] + warp_hist[warp][d] + rank[j];
          sk[at] = key[j];
          sid[at] = id[j];
        }
      }
      __syncthreads();
#pragma unroll
      for (int j = 0; j < items; ++j) {
        if (j < used) {
          key[j] = sk[first + 32u * j];
          id[j] = sid[first + 32u * j];
        }
      }
      __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < items; ++j) {
      const unsigned int q = first + 32u * j;
      if (j < used && (long long)q < m) {
        vals[row * m + q] = r[id[j]];
        idx[row * m + q] = (long long)id[j];
      }
    }
  }
}

// Each tile's count of every digit, into hist[d * tiles + tile].
template <typename T>
__device__ __forceinline__ void ts_radix_hist(const T* __restrict__ in,
                                              const typename ts_sort_key<T>::K* __restrict__ keys,
                                              const unsigned int* __restrict__ ids,
                                              unsigned int* __restrict__ hist, long long total,
                                              unsigned int n, int pass, int key_passes, bool desc) {
  typedef typename ts_sort_key<T>::K K;
  const int items = ts_radix_items<K>::value;
  __shared__ unsigned int h[256];
  const unsigned int lane = threadIdx.x & 31u;
  const long long tiles = gridDim.x, tile = blockIdx.x;
  h[threadIdx.x] = 0;
  __syncthreads();
  const long long base = tile * (long long)(TS_RADIX_THREADS * items);
  // Every load of the tile first (items in flight a thread), then the counting.
  unsigned int dig[ts_radix_items<K>::value];
#pragma unroll
  for (int j = 0; j < items; ++j) {
    const long long e = base + (long long)j * TS_RADIX_THREADS + threadIdx.x;
    dig[j] = 256;
    if (e < total) {
      K key;
      unsigned int id;
      if (pass < key_passes) {
        ts_radix_load<T>(in, keys, ids, e, pass, desc, key, id);
      } else {
        key = 0;
        id = ids[e];
      }
      dig[j] = ts_radix_digit<K>(key, id, pass, key_passes, n);
    }
  }
#pragma unroll
  for (int j = 0; j < items; ++j) {
    const unsigned int d = dig[j];
    const unsigned int peers = ts_match_digit(d);
    if (d < 256 && lane == (unsigned int)(__ffs(peers) - 1)) atomicAdd(&h[d], __popc(peers));
  }
  __syncthreads();
  hist[(long long)threadIdx.x * tiles + tile] = h[threadIdx.x];
}

// Block d: digit d's row of `hist` (one count per tile) into exclusive offsets, its sum into
// totals[d].
__device__ __forceinline__ void ts_radix_scan(unsigned int* __restrict__ hist,
                                              unsigned int* __restrict__ totals,
                                              long long tiles) {
  __shared__ unsigned int warps[TS_RADIX_WARPS];
  unsigned int* row = hist + (long long)blockIdx.x * tiles;
  unsigned int carry = 0;
  for (long long c0 = 0; c0 < tiles; c0 += 4 * TS_RADIX_THREADS) {
    const long long first = c0 + 4 * (long long)threadIdx.x;
    unsigned int v[4], sum = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v[j] = first + j < tiles ? row[first + j] : 0u;
      sum += v[j];
    }
    unsigned int all;
    unsigned int run = carry + ts_radix_block_scan(sum, warps, all);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (first + j < tiles) row[first + j] = run;
      run += v[j];
    }
    carry += all;
  }
  if (threadIdx.x == 0) totals[blockIdx.x] = carry;
}

// One stable counting pass: tile blockIdx.x of the input to its places in the output.
template <typename T>
__device__ __forceinline__ void ts_radix_scatter(
    const T* __restrict__ in, const typename ts_sort_key<T>::K* __restrict__ keys_in,
    const unsigned int* __restrict__ ids_in, typename ts_sort_key<T>::K* __restrict__ keys_out,
    unsigned int* __restrict__ ids_out, const unsigned int* __restrict__ hist,
    const unsigned int* __restrict__ totals, long long total, unsigned int n, int pass,
    int key_passes, bool desc, T* __restrict__ vals, long long* __restrict__ idx) {
  typedef typename ts_sort_key<T>::K K;
  const int items = ts_radix_items<K>::value;
  const int tile_len = TS_RADIX_THREADS * items;
  __shared__ unsigned int warp_hist[TS_RADIX_WARPS][256];
  __shared__ unsigned int digit_start[256];
  __shared__ unsigned int global_start[256];
  __shared__ unsigned int warps[TS_RADIX_WARPS];
  __shared__ K sk[TS_RADIX_THREADS * ts_radix_items<K>::value];
  __shared__ unsigned int sid[TS_RADIX_THREADS * ts_radix_items<K>::value];
  const unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const long long tiles = gridDim.x, tile = blockIdx.x;
  const long long base = tile * tile_len;
#pragma unroll
  for (int w = 0; w < TS_RADIX_WARPS; ++w) warp_hist[w][threadIdx.x] = 0;
  __syncthreads();
  // Warp w ranks its contiguous chunk of 32 * items entries, 32 at a time, in order; every
  // load first (items in flight a thread), then the ranking.
  K key[ts_radix_items<K>::value];
  unsigned int id[ts_radix_items<K>::value];
  // The entry's rank among its warp's entries of its digit (low 16 bits) and the digit (256
  // past the input) above it: one register an entry.
  unsigned int ranked[ts_radix_items<K>::value];
#pragma unroll
  for (int j = 0; j < items; ++j) {
    const long long e = base + (long long)warp * 32 * items + j * 32 + lane;
    key[j] = 0;
    id[j] = 0;
    if (e < total) {
      ts_radix_load<T>(in, keys_in, ids_in, e, pass, desc, key[j], id[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < items; ++j) {
    const long long e = base + (long long)warp * 32 * items + j * 32 + lane;
    const unsigned int d = e < total ? ts_radix_digit<K>(key[j], id[j], pass, key_passes, n) : 256u;
    ranked[j] = ts_radix_rank(d, warp_hist[warp]) | (d << 16);
  }
  __syncthreads();
  // Per digit (thread d): the warps' exclusive offsets, the tile's count, the tile's start of
  // the digit, and the digit's place in the output.
  {
    const unsigned int d = threadIdx.x;
    digit_start[d] = ts_radix_digit_start(warp_hist, warps);
    unsigned int all;
    const unsigned int digit_base = ts_radix_block_scan(totals[d], warps, all);
    global_start[d] = digit_base + hist[(long long)d * tiles + tile];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < items; ++j) {
    const unsigned int d = ranked[j] >> 16;
    if (d < 256) {
      const unsigned int at = digit_start[d] + warp_hist[warp][d] + (ranked[j] & 0xffffu);
      sk[at] = key[j];
      sid[at] = id[j];
    }
  }
  __syncthreads();
  const long long left = total - base;
  const int count = left < tile_len ? (int)left : tile_len;
  for (int q = threadIdx.x; q < count; q += TS_RADIX_THREADS) {
    const K k = sk[q];
    const unsigned int i = sid[q];
    const unsigned int d = ts_radix_digit<K>(k, i, pass, key_passes, n);
    const unsigned int at = global_start[d] + ((unsigned int)q - digit_start[d]);
    if (vals != 0) {
      // The last pass of a whole sort: the value at the id and the id's place in its row.
      vals[at] = in[i];
      idx[at] = (long long)(i % n);
    } else {
      keys_out[at] = k;
      ids_out[at] = i;
    }
  }
}

// The first m of each sorted row of n: values gathered at the sorted ids, and the ids as
// positions in their row.
template <typename T>
__device__ __forceinline__ void ts_radix_final(const T* __restrict__ in,
                                               const unsigned int* __restrict__ ids,
                                               T* __restrict__ vals, long long* __restrict__ idx,
                                               long long rows, long long n, long long m) {
  const long long count = rows * m;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < count;
       e += (long long)gridDim.x * blockDim.x) {
    const long long row = e / m, i = e % m;
    const unsigned int id = ids[row * n + i];
    vals[e] = in[id];
    idx[e] = (long long)id - row * n;
  }
}

#endif  // TYPESTATE_TENSOR_RADIX_CUH
