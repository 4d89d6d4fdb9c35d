// Pointwise Apply kernels (PyTorch THC's kernelPointwiseApply1..3 and TensorFillOp, rebuilt):
// `out[i] = op(a[i], b[i], c[i])` over one output and 0 to 3 inputs (eager ops), or up to four
// outputs and any number of inputs (fused expressions, whose functor returns a ts_tuple), with
// the op a functor whose body is the op table's CUDA expression (the host generates it, see
// src/engine_gpu/pointwise/source.rs).
//
// Forms, chosen per launch by the host (src/engine_gpu/pointwise/launch.rs):
// - ts_apply_contiguous:     every operand is one dense run; no index math.
// - ts_apply_contiguous_vec: the same, VEC elements per aligned load/store (16 bytes for the
//                            widest operand); the last n % VEC elements run one per thread.
// - ts_apply_strided:        any strides; an OffsetCalculator compiled for the launch's rank
//                            turns the linear index into one offset per operand.
// - ts_apply_strided_vec:    strided, but VEC elements at a time along an innermost dim that
//                            every operand reads contiguously or broadcasts (a row broadcast).
// - ts_apply_tiled:          any rank, where some input is contiguous along another dim than
//                            the output (a transposed or permuted input): each block stages a
//                            tile over those two dims of every such input in shared memory,
//                            read along the input's own contiguous dim; the other dims are a
//                            batch.
//
// Every form is a grid-stride loop (the host sizes the grid from the multiprocessor count, so
// any n runs), and each thread handles W elements (or W vectors) per step: all loads first,
// then all stores, for memory-level parallelism. The four element-wise forms share that loop
// (ts_grid_stride) and differ only in their load and store; the tiled form strides over
// tiles. Every offset comes from OffsetCalculator: get from a linear index; the tiled form
// adds a row and a column term to its tile's batch offset. index_t is `unsigned int` when the host proved
// that n and every offset fit in 31 bits, else `unsigned long long`; the loops never wrap:
// n + step < 2^32 in the 32-bit case.
//
// Requires half.cuh, ops.cuh, int_divider.cuh and offset_calculator.cuh before it.
// No #include: NVRTC compiles this without toolkit headers.
#ifndef TYPESTATE_TENSOR_APPLY_CUH
#define TYPESTATE_TENSOR_APPLY_CUH

// Programmatic dependent launch (sm_90 and later; src/engine_gpu/kernel/pdl.rs). The first
// statement of every pointwise and fused entry point, before any global memory access:
// - griddepcontrol.launch_dependents: the next kernel on the stream, if it was launched as a
//   programmatic dependent, may be scheduled once every block of this one has got here (it
//   then waits at its own griddepcontrol.wait, so this only hides its launch latency);
// - griddepcontrol.wait: if this kernel was launched as a programmatic dependent, blocks until
//   the previous kernel on the stream has completed and its memory operations are visible;
//   otherwise (a plain launch, or no kernel before it) returns at once.
// The "memory" clobbers keep the compiler from moving any load or store above the wait.
// Before sm_90 this is empty, and such images are never launched as dependents
// (LoadedKernel::pdl).
__device__ __forceinline__ void ts_pdl_enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// N elements of T in one naturally aligned aggregate, so that a load or store of it is one
// vector memory instruction (ld.global.v4.u32 and the like).
template <typename T, int N>
struct __align__(sizeof(T) * N) ts_vec {
  T v[N];
};

// The inputs of one launch, as a recursive list: each level holds one input's pointer and the
// W values loaded from it (already in its compute type) for the current step. After inlining
// and unrolling every index is a constant, so the values live in registers.
template <int W, typename... In>
struct ts_inputs;

template <int W>
struct ts_inputs<W> {
  __device__ __forceinline__ ts_inputs() {}
  template <typename index_t>
  __device__ __forceinline__ void load(int, index_t) {}
  template <typename offset_t>
  __device__ __forceinline__ void load_at(int, const offset_t*) {}
  template <int VEC, typename index_t>
  __device__ __forceinline__ void load_vec(int, index_t) {}
  template <int VEC, unsigned BCAST, typename offset_t>
  __device__ __forceinline__ void load_vec_at(int, const offset_t*) {}
  // Calls the op on the values gathered so far (all inputs' value j).
  template <typename Op, typename... C>
  __device__ __forceinline__ auto call(const Op& op, int, C... c) const {
    return op(c...);
  }
};

template <int W, typename H, typename... T>
struct ts_inputs<W, H, T...> {
  typedef typename ts_compute<H>::type compute_t;
  const H* ptr;
  compute_t v[W];
  ts_inputs<W, T...> rest;

  __device__ __forceinline__ ts_inputs(const H* p, const T*... ps) : ptr(p), rest(ps...) {}

  // Value j from element i of every input (contiguous inputs).
  template <typename index_t>
  __device__ __forceinline__ void load(int j, index_t i) {
    v[j] = ts_conv<compute_t>::from(ptr[i]);
    rest.load(j, i);
  }
  // Value j from this input's element offset off[0] (the next input's is off[1], ...).
  template <typename offset_t>
  __device__ __forceinline__ void load_at(int j, const offset_t* off) {
    v[j] = ts_conv<compute_t>::from(ptr[off[0]]);
    rest.load_at(j, off + 1);
  }
  // Values j*VEC .. j*VEC + VEC - 1 from one aligned vector at element i (a multiple of VEC).
  template <int VEC, typename index_t>
  __device__ __forceinline__ void load_vec(int j, index_t i) {
    const ts_vec<H, VEC> x = *reinterpret_cast<const ts_vec<H, VEC>*>(ptr + i);
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      v[j * VEC + e] = ts_conv<compute_t>::from(x.v[e]);
    }
    rest.template load_vec<VEC>(j, i);
  }
  // Values j*VEC .. j*VEC + VEC - 1 of one vector of the innermost dim starting at element
  // offset off[0]: one aligned vector load, or, when bit 0 of BCAST is set (this input is
  // broadcast along the innermost dim), one element repeated.
  template <int VEC, unsigned BCAST, typename offset_t>
  __device__ __forceinline__ void load_vec_at(int j, const offset_t* off) {
    if constexpr ((BCAST & 1u) != 0) {
      const compute_t x = ts_conv<compute_t>::from(ptr[off[0]]);
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        v[j * VEC + e] = x;
      }
    } else {
      const ts_vec<H, VEC> x = *reinterpret_cast<const ts_vec<H, VEC>*>(ptr + off[0]);
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        v[j * VEC + e] = ts_conv<compute_t>::from(x.v[e]);
      }
    }
    rest.template load_vec_at<VEC, (BCAST >> 1)>(j, off + 1);
  }
  template <typename Op, typename... C>
  __device__ __forceinline__ auto call(const Op& op, int j, C... c) const {
    return rest.call(op, j, c..., v[j]);
  }
};

// ---- outputs -----------------------------------------------------------------------------

// The results of one element: the op's value for a one-output kernel, or a ts_tuple of
// values for a fused kernel with several outputs (outputs in order).
template <typename... T>
struct ts_tuple;
template <>
struct ts_tuple<> {};
template <typename H, typename... T>
struct ts_tuple<H, T...> {
  H head;
  ts_tuple<T...> tail;
};
__device__ __forceinline__ ts_tuple<> ts_make_tuple() { return ts_tuple<>{}; }
template <typename H, typename... T>
__device__ __forceinline__ ts_tuple<H, T...> ts_make_tuple(H h, T... t) {
  return ts_tuple<H, T...>{h, ts_make_tuple(t...)};
}

// The first result and the rest: a plain value is a one-element list.
template <typename R>
__device__ __forceinline__ const R& ts_head(const R& r) { return r; }
template <typename H, typename... T>
__device__ __forceinline__ const H& ts_head(const ts_tuple<H, T...>& r) { return r.head; }
template <typename R>
__device__ __forceinline__ ts_tuple<> ts_rest(const R&) { return ts_tuple<>{}; }
template <typename H, typename... T>
__device__ __forceinline__ const ts_tuple<T...>& ts_rest(const ts_tuple<H, T...>& r) {
  return r.tail;
}

// The type of ts_rest(r) for results of type R.
template <typename R>
struct ts_rest_type {
  typedef ts_tuple<> type;
};
template <typename H, typename... T>
struct ts_rest_type<ts_tuple<H, T...>> {
  typedef ts_tuple<T...> type;
};

// The outputs of one launch, as a recursive list of pointers (output 0 first), storing one
// element's results: at one index for all (contiguous forms) or at one offset per output
// (strided forms: off[0] is this output's, off[1] the next one's, ...).
template <typename... Out>
struct ts_outputs;

template <>
struct ts_outputs<> {
  static constexpr int COUNT = 0;
  template <typename index_t, typename R>
  __device__ __forceinline__ void store(index_t, const R&) const {}
  template <typename offset_t, typename R>
  __device__ __forceinline__ void store_at(const offset_t*, const R&) const {}
  template <int VEC, typename index_t, typename R>
  __device__ __forceinline__ void store_vec(index_t, const R*) const {}
  template <int VEC, typename offset_t, typename R>
  __device__ __forceinline__ void store_vec_at(const offset_t*, const R*) const {}
};

template <typename H, typename... T>
struct ts_outputs<H, T...> {
  static constexpr int COUNT = 1 + sizeof...(T);
  H* ptr;
  ts_outputs<T...> rest;

  __device__ __forceinline__ ts_outputs(H* p, T*... ps) : ptr(p), rest(ps...) {}

  template <typename index_t, typename R>
  __device__ __forceinline__ void store(index_t i, const R& r) const {
    ptr[i] = ts_conv<H>::from(ts_head(r));
    rest.store(i, ts_rest(r));
  }
  template <typename offset_t, typename R>
  __device__ __forceinline__ void store_at(const offset_t* off, const R& r) const {
    ptr[off[0]] = ts_conv<H>::from(ts_head(r));
    rest.store_at(off + 1, ts_rest(r));
  }
  // VEC results r[0..VEC) as one aligned vector at element i of every output.
  template <int VEC, typename index_t, typename R>
  __device__ __forceinline__ void store_vec(index_t i, const R* r) const {
    ts_vec<H, VEC> o;
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      o.v[e] = ts_conv<H>::from(ts_head(r[e]));
    }
    *reinterpret_cast<ts_vec<H, VEC>*>(ptr + i) = o;
    store_rest_vec<VEC>(i, r);
  }
  // VEC results as one aligned vector at element offset off[0] of this output, off[1] of the
  // next, ...
  template <int VEC, typename offset_t, typename R>
  __device__ __forceinline__ void store_vec_at(const offset_t* off, const R* r) const {
    ts_vec<H, VEC> o;
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      o.v[e] = ts_conv<H>::from(ts_head(r[e]));
    }
    *reinterpret_cast<ts_vec<H, VEC>*>(ptr + off[0]) = o;
    if constexpr (sizeof...(T) > 0) {
      typedef typename ts_rest_type<R>::type rest_t;
      rest_t tails[VEC];
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        tails[e] = ts_rest(r[e]);
      }
      rest.template store_vec_at<VEC>(off + 1, tails);
    }
  }

 private:
  template <int VEC, typename index_t, typename R>
  __device__ __forceinline__ void store_rest_vec(index_t i, const R* r) const {
    if constexpr (sizeof...(T) > 0) {
      typedef typename ts_rest_type<R>::type rest_t;
      rest_t tails[VEC];
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        tails[e] = ts_rest(r[e]);
      }
      rest.template store_vec<VEC>(i, tails);
    }
  }
};

// ---- the grid-stride loop --------------------------------------------------------------

// The loop of every form but the tiled one, written once: the grid strides over n items
// (elements, or vectors of VEC elements), each thread taking W items per step, BLOCK apart so
// that a warp's accesses stay adjacent; load(j, i) runs for all W items before store(j, i)
// runs for any (all loads in flight at once), each only for i < n. The forms differ only in
// what load and store do with item i (a direct index, an offset from an OffsetCalculator, a
// vector). load and store are lambdas; after inlining and unrolling j is a constant in each
// copy of their bodies, so the values and offsets they keep per j stay in registers and the
// generated code is the one of the loop written out in each form (checked on the PTX).
template <int BLOCK, int W, typename index_t, typename Load, typename Store>
__device__ __forceinline__ void ts_grid_stride(index_t n, const Load& load, const Store& store) {
  const index_t step = (index_t)gridDim.x * (index_t)(BLOCK * W);
  for (index_t base = (index_t)blockIdx.x * (index_t)(BLOCK * W) + threadIdx.x; base < n;
       base += step) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const index_t i = base + (index_t)(j * BLOCK);
      if (i < n) load(j, i);
    }
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const index_t i = base + (index_t)(j * BLOCK);
      if (i < n) store(j, i);
    }
  }
}

// Computes results j*VEC .. j*VEC + VEC - 1 and stores them as one aligned vector per
// output at element i (the contiguous vector form's store).
template <int VEC, typename Op, typename Ins, typename Outs, typename index_t>
__device__ __forceinline__ void ts_store_vec(const Op& op, const Ins& ins, int j,
                                             const Outs& outs, index_t i) {
  typedef decltype(ins.call(op, 0)) result_t;
  result_t r[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    r[e] = ins.call(op, j * VEC + e);
  }
  outs.template store_vec<VEC>(i, r);
}

// The same at one element offset per output (the strided vector form's store).
template <int VEC, typename Op, typename Ins, typename Outs, typename offset_t>
__device__ __forceinline__ void ts_store_vec_at(const Op& op, const Ins& ins, int j,
                                                const Outs& outs, const offset_t* off) {
  typedef decltype(ins.call(op, 0)) result_t;
  result_t r[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    r[e] = ins.call(op, j * VEC + e);
  }
  outs.template store_vec_at<VEC>(off, r);
}

// ---- contiguous ------------------------------------------------------------------------

// Every form takes its outputs as a ts_outputs pack (one output for the eager kernels, up to
// four for fused ones) and its inputs as pointers; offsets from calc are the outputs' first
// (Outs::COUNT of them), then the inputs'.

template <int BLOCK, int W, typename index_t, typename Op, typename Outs, typename... In>
__device__ __forceinline__ void ts_apply_contiguous(const Op& op, index_t n, const Outs& outs,
                                                    const In*... in) {
  ts_inputs<W, In...> ins(in...);
  ts_grid_stride<BLOCK, W>(
      n, [&](int j, index_t i) { ins.load(j, i); },
      [&](int j, index_t i) { outs.store(i, ins.call(op, j)); });
}

// Precondition (host-checked): every pointer is aligned to VEC * sizeof(its element type).
template <int BLOCK, int W, int VEC, typename index_t, typename Op, typename Outs,
          typename... In>
__device__ __forceinline__ void ts_apply_contiguous_vec(const Op& op, index_t n,
                                                        const Outs& outs, const In*... in) {
  ts_inputs<W * VEC, In...> ins(in...);
  const index_t nvec = n / VEC;
  // Item iv is the vector of elements iv * VEC .. iv * VEC + VEC - 1.
  ts_grid_stride<BLOCK, W>(
      nvec, [&](int j, index_t iv) { ins.template load_vec<VEC>(j, iv * VEC); },
      [&](int j, index_t iv) { ts_store_vec<VEC>(op, ins, j, outs, iv * VEC); });
  // The last n % VEC (< VEC <= blockDim.x) elements: one per thread of block 0.
  const index_t t = nvec * VEC + (index_t)blockIdx.x * BLOCK + threadIdx.x;
  if (t < n) {
    ts_inputs<1, In...> one(in...);
    one.load(0, t);
    outs.store(t, one.call(op, 0));
  }
}

// ---- strided ---------------------------------------------------------------------------

// Pointers are each operand's element at linear index 0; calc gives every other element's
// offset from it (negative for inputs walked backwards).
template <int BLOCK, int W, int NDIMS, typename index_t, typename offset_t, typename Op,
          typename Outs, typename... In>
__device__ __forceinline__ void ts_apply_strided(
    const Op& op, index_t n,
    const OffsetCalculator<NDIMS, Outs::COUNT + sizeof...(In), index_t, offset_t>& calc,
    const Outs& outs, const In*... in) {
  constexpr int NOUT = Outs::COUNT;
  constexpr int NARGS = NOUT + sizeof...(In);
  ts_inputs<W, In...> ins(in...);
  offset_t out_off[W][NOUT];
  ts_grid_stride<BLOCK, W>(
      n,
      [&](int j, index_t i) {
        offset_t off[NARGS];
        calc.get(i, off);
#pragma unroll
        for (int o = 0; o < NOUT; ++o) {
          out_off[j][o] = off[o];
        }
        ins.load_at(j, off + NOUT);
      },
      [&](int j, index_t) { outs.store_at(out_off[j], ins.call(op, j)); });
}

// Strided, VEC elements at a time along the innermost dim. calc describes the shape with the
// innermost size divided by VEC, and innermost strides VEC (for inputs read along it) or 0
// (bit k of BCAST set: input k is broadcast along it). Preconditions (host-checked): every
// output and every non-broadcast input have innermost stride 1, every offset calc yields for
// them is a multiple of VEC, and their pointers are aligned to VEC * sizeof(element).
template <int BLOCK, int W, int VEC, unsigned BCAST, int NDIMS, typename index_t,
          typename offset_t, typename Op, typename Outs, typename... In>
__device__ __forceinline__ void ts_apply_strided_vec(
    const Op& op, index_t nvec,
    const OffsetCalculator<NDIMS, Outs::COUNT + sizeof...(In), index_t, offset_t>& calc,
    const Outs& outs, const In*... in) {
  constexpr int NOUT = Outs::COUNT;
  constexpr int NARGS = NOUT + sizeof...(In);
  ts_inputs<W * VEC, In...> ins(in...);
  offset_t out_off[W][NOUT];
  ts_grid_stride<BLOCK, W>(
      nvec,
      [&](int j, index_t i) {
        offset_t off[NARGS];
        calc.get(i, off);
#pragma unroll
        for (int o = 0; o < NOUT; ++o) {
          out_off[j][o] = off[o];
        }
        ins.template load_vec_at<VEC, BCAST>(j, off + NOUT);
      },
      [&](int j, index_t) { ts_store_vec_at<VEC>(op, ins, j, outs, out_off[j]); });
}

// ---- tiled (permuted inputs, any rank) -----------------------------------------------

// Like ts_inputs, for the tiled kernel: bit 0 of STAGED says whether this input goes through
// shared memory. A staged input's tile holds TC columns of PITCH elements, indexed
// [column][row], at its own place in the block's shared buffer. PITCH is TR + 1 for VEC == 1
// (the padding element puts a warp reading along a row, across columns, on distinct banks)
// and TR + VEC otherwise (every column then starts VEC-aligned, so a staged vector is one
// shared-memory store, and columns still fall on different banks: with VEC * sizeof(H) == 4
// a column is TR * sizeof(H) / 4 + 1 words, odd for every tile edge of 8 or more; narrower
// vectors of 1-byte elements may meet pairwise on a bank). Each tile's byte
// size is rounded up to 16 so the next one keeps its alignment (the host's
// TileShape::smem_bytes computes the same size for its budget).
template <int W, int TR, int TC, int VEC, unsigned STAGED, unsigned DIRECT, typename... In>
struct ts_tiled_inputs {
  static constexpr int SMEM_BYTES = 0;
  __device__ __forceinline__ explicit ts_tiled_inputs(char*) {}
  template <typename offset_t>
  __device__ __forceinline__ void stage(int, int, const offset_t*) {}
  template <typename offset_t, typename stride_t>
  __device__ __forceinline__ void load_direct(int, const offset_t*, const stride_t*) {}
  __device__ __forceinline__ void load_staged(int, int, int) {}
  template <typename Op, typename... C>
  __device__ __forceinline__ auto call(const Op& op, int, C... c) const {
    return op(c...);
  }
};

template <int W, int TR, int TC, int VEC, unsigned STAGED, unsigned DIRECT, typename H,
          typename... T>
struct ts_tiled_inputs<W, TR, TC, VEC, STAGED, DIRECT, H, T...> {
  typedef typename ts_compute<H>::type compute_t;
  typedef ts_tiled_inputs<W, TR, TC, VEC, (STAGED >> 1), (DIRECT >> 1), T...> rest_t;
  static constexpr bool IS_STAGED = (STAGED & 1u) != 0;
  // An unstaged input read as one aligned vector of VEC columns (host-planned: stride 1
  // along the columns, its other strides multiples of VEC, its pointer VEC-aligned).
  static constexpr bool IS_DIRECT_VEC = !IS_STAGED && VEC > 1 && (DIRECT & 1u) != 0;
  static constexpr int PITCH = VEC == 1 ? TR + 1 : TR + VEC;
  static constexpr int TILE_BYTES =
      IS_STAGED ? ((int)sizeof(H) * TC * PITCH + 15) / 16 * 16 : 0;
  static constexpr int SMEM_BYTES = TILE_BYTES + rest_t::SMEM_BYTES;

  const H* ptr;
  H* tile;
  compute_t v[W];
  rest_t rest;

  __device__ __forceinline__ ts_tiled_inputs(char* smem, const H* p, const T*... ps)
      : ptr(p), tile(reinterpret_cast<H*>(smem)), rest(smem + TILE_BYTES, ps...) {}

  // Phase 1: a staged input copies its elements at offsets off[0] .. off[0] + VEC - 1 (rows
  // row .. row + VEC - 1 of tile column col; with VEC > 1 one aligned vector, the host
  // having checked stride 1 along the rows and VEC-aligned offsets).
  template <typename offset_t>
  __device__ __forceinline__ void stage(int col, int row, const offset_t* off) {
    if constexpr (IS_STAGED) {
      if constexpr (VEC == 1) {
        tile[col * PITCH + row] = ptr[off[0]];
      } else {
        *reinterpret_cast<ts_vec<H, VEC>*>(tile + col * PITCH + row) =
            *reinterpret_cast<const ts_vec<H, VEC>*>(ptr + off[0]);
      }
    }
    rest.stage(col, row, off + 1);
  }
  // Values j*VEC .. j*VEC + VEC - 1 of an input that is not staged: VEC consecutive columns
  // from offset off[0], step[0] (its stride along the columns) apart, one element each, or
  // (bit 0 of DIRECT) one aligned vector.
  template <typename offset_t, typename stride_t>
  __device__ __forceinline__ void load_direct(int j, const offset_t* off, const stride_t* step) {
    if constexpr (IS_DIRECT_VEC) {
      const ts_vec<H, VEC> x = *reinterpret_cast<const ts_vec<H, VEC>*>(ptr + off[0]);
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        v[j * VEC + e] = ts_conv<compute_t>::from(x.v[e]);
      }
    } else if constexpr (!IS_STAGED) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        v[j * VEC + e] = ts_conv<compute_t>::from(ptr[off[0] + (offset_t)e * step[0]]);
      }
    }
    rest.load_direct(j, off + 1, step + 1);
  }
  // Values j*VEC .. j*VEC + VEC - 1 of a staged input, from its tile (columns col .. col +
  // VEC - 1, row row).
  __device__ __forceinline__ void load_staged(int j, int col, int row) {
    if constexpr (IS_STAGED) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        v[j * VEC + e] = ts_conv<compute_t>::from(tile[(col + e) * PITCH + row]);
      }
    }
    rest.load_staged(j, col, row);
  }
  template <typename Op, typename... C>
  __device__ __forceinline__ auto call(const Op& op, int j, C... c) const {
    return rest.call(op, j, c..., v[j]);
  }
};

// The offsets of every operand at batch index b (row-major over dims 0 .. NDIMS - 3 of calc):
// IntDivider divisions over the batch dims, dim 0 taking the last quotient. Zero for rank 2.
template <int NDIMS, int NARGS, typename index_t, typename offset_t>
__device__ __forceinline__ void ts_batch_offsets(
    const OffsetCalculator<NDIMS, NARGS, index_t, offset_t>& calc, index_t b,
    offset_t out[NARGS]) {
#pragma unroll
  for (int arg = 0; arg < NARGS; ++arg) {
    out[arg] = 0;
  }
  if constexpr (NDIMS > 2) {
#pragma unroll
    for (int dim = NDIMS - 3; dim > 0; --dim) {
      DivMod<index_t> qr = calc.sizes[dim].divmod(b);
      b = qr.div;
#pragma unroll
      for (int arg = 0; arg < NARGS; ++arg) {
        out[arg] += (offset_t)qr.mod * calc.strides[dim][arg];
      }
    }
#pragma unroll
    for (int arg = 0; arg < NARGS; ++arg) {
      out[arg] += (offset_t)b * calc.strides[0][arg];
    }
  }
}

// Any rank >= 2, for layouts where some inputs (bit k of STAGED: input k) are contiguous along
// dim NDIMS - 2 of calc ("rows", D) while the output is contiguous along dim NDIMS - 1
// ("columns", C): a transpose, batched or not, NCHW <-> NHWC, a head split. The host orders
// calc's dims batch first (dims 0 .. NDIMS - 3), then D, then C. A plain strided walk reads
// such an input a row apart per lane; here the grid strides over tiles of TR rows by TC
// columns of every batch index. Each block copies the staged inputs' tile into shared memory
// with consecutive threads walking rows (coalesced for them), then computes and stores with
// consecutive threads walking columns (coalesced for the output and the inputs read along C).
// Each thread does W = TR * TC / BLOCK elements of a tile, as W / VEC accesses of VEC
// consecutive elements: VEC rows of a staged input per load, VEC columns of every output per
// store (one aligned vector each), VEC columns of an unstaged input one element at a time, or
// as one aligned vector for the inputs of DIRECT (bit k: input k).
// Every global load of a tile (the staged inputs' and the others') is issued before the
// barrier, the stores after it.
//
// Preconditions (host-checked): TR and TC are powers of two with TR * TC a multiple of
// BLOCK * VEC; the tile count (at most the element count) and the grid-stride step fit index_t
// without wrapping; every offset r * stride + c * stride + batch offset fits offset_t (the
// host's extent check covers the sum over all dims). For VEC > 1 also: rows and cols are
// multiples of VEC; every output has stride 1 along C and every staged input stride 1 along
// D; their other strides are multiples of VEC and their pointers VEC-element aligned; every
// input of DIRECT has stride 1 along C, its other strides multiples of VEC and its pointer
// VEC-element aligned.
template <int BLOCK, int TR, int TC, int VEC, unsigned STAGED, unsigned DIRECT, int NDIMS,
          typename index_t, typename offset_t, typename Op, typename Outs, typename... In>
__device__ __forceinline__ void ts_apply_tiled(
    const Op& op,
    const OffsetCalculator<NDIMS, Outs::COUNT + sizeof...(In), index_t, offset_t>& calc,
    const Outs& outs, const In*... in) {
  constexpr int NOUT = Outs::COUNT;
  constexpr int NIN = (int)sizeof...(In);
  constexpr int NARGS = NOUT + NIN;
  constexpr int W = TR * TC / BLOCK;
  constexpr int WV = W / VEC;
  static_assert(NDIMS >= 2, "a tile spans two dims");
  static_assert(W >= 1 && W * BLOCK == TR * TC, "the block must cover a tile evenly");
  static_assert((TR & (TR - 1)) == 0 && (TC & (TC - 1)) == 0, "tile edges are powers of 2");
  static_assert((VEC & (VEC - 1)) == 0 && WV >= 1 && WV * VEC == W && TR % VEC == 0 &&
                    TC % VEC == 0,
                "a thread moves whole vectors");
  typedef ts_tiled_inputs<W, TR, TC, VEC, STAGED, DIRECT, In...> inputs_t;
  __shared__ __align__(16) char smem[inputs_t::SMEM_BYTES > 0 ? inputs_t::SMEM_BYTES : 16];
  inputs_t ins(smem, in...);

  const index_t rows = calc.sizes[NDIMS - 2].divisor;
  const index_t cols = calc.sizes[NDIMS - 1].divisor;
  const index_t tiles_c = (cols + TC - 1) / TC;
  const index_t tiles_rc = ((rows + TR - 1) / TR) * tiles_c;
  index_t batches = 1;
#pragma unroll
  for (int dim = 0; dim < NDIMS - 2; ++dim) {
    batches *= calc.sizes[dim].divisor;
  }
  const index_t tiles = batches * tiles_rc;
  // The inputs' strides along the columns (an unstaged input's VEC elements).
  offset_t col_step[NIN > 0 ? NIN : 1];
#pragma unroll
  for (int k = 0; k < NIN; ++k) {
    col_step[k] = calc.strides[NDIMS - 1][NOUT + k];
  }

  for (index_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    index_t rc = t;
    offset_t base[NARGS];
    if constexpr (NDIMS > 2) {
      const index_t b = t / tiles_rc;
      rc = t - b * tiles_rc;
      ts_batch_offsets(calc, b, base);
    } else {
#pragma unroll
      for (int arg = 0; arg < NARGS; ++arg) {
        base[arg] = 0;
      }
    }
    const index_t tr = rc / tiles_c;
    const index_t r0 = tr * TR;
    const index_t c0 = (rc - tr * tiles_c) * TC;
    offset_t out_off[WV][NOUT];
#pragma unroll
    for (int k = 0; k < WV; ++k) {
      // Access e of the block covers VEC elements.
      const int e = (int)threadIdx.x + k * BLOCK;
      // Staged inputs: consecutive threads walk rows (D), their contiguous dim, VEC rows each.
      if constexpr (STAGED != 0) {
        const int sr = (e % (TR / VEC)) * VEC;
        const int sc = e / (TR / VEC);
        const index_t r = r0 + sr;
        const index_t c = c0 + sc;
        if (r < rows && c < cols) {
          offset_t off[NARGS];
#pragma unroll
          for (int arg = 0; arg < NARGS; ++arg) {
            off[arg] = base[arg] + (offset_t)r * calc.strides[NDIMS - 2][arg] +
                       (offset_t)c * calc.strides[NDIMS - 1][arg];
          }
          ins.stage(sc, sr, off + NOUT);
        }
      }
      // The output and the other inputs: consecutive threads walk columns (C), the output's
      // contiguous dim, VEC columns each.
      const index_t r = r0 + e / (TC / VEC);
      const index_t c = c0 + (e % (TC / VEC)) * VEC;
      if (r < rows && c < cols) {
        offset_t off[NARGS];
#pragma unroll
        for (int arg = 0; arg < NARGS; ++arg) {
          off[arg] = base[arg] + (offset_t)r * calc.strides[NDIMS - 2][arg] +
                     (offset_t)c * calc.strides[NDIMS - 1][arg];
        }
#pragma unroll
        for (int o = 0; o < NOUT; ++o) {
          out_off[k][o] = off[o];
        }
        ins.load_direct(k, off + NOUT, col_step);
      }
    }
    if constexpr (STAGED != 0) {
      __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < WV; ++k) {
      const int e = (int)threadIdx.x + k * BLOCK;
      const int er = e / (TC / VEC);
      const int ec = (e % (TC / VEC)) * VEC;
      if (r0 + er < rows && c0 + ec < cols) {
        ins.load_staged(k, ec, er);
        if constexpr (VEC == 1) {
          outs.store_at(out_off[k], ins.call(op, k));
        } else {
          ts_store_vec_at<VEC>(op, ins, k, outs, out_off[k]);
        }
      }
    }
    if constexpr (STAGED != 0) {
      // The next tile overwrites the tiles this one read.
      __syncthreads();
    }
  }
}

#endif  // TYPESTATE_TENSOR_APPLY_CUH
