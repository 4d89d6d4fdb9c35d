// Pointwise Apply kernels (PyTorch THC's kernelPointwiseApply1..3 and TensorFillOp, rebuilt):
// `out[i] = op(a[i], b[i], c[i])` over one output and 0 to 3 inputs, with the op a functor
// whose body is the op table's CUDA expression (the host generates it, see
// src/gpu/pointwise/source.rs).
//
// Forms, chosen per launch by the host (src/gpu/pointwise/launch.rs):
// - ts_apply_contiguous:     every operand is one dense run; no index math.
// - ts_apply_contiguous_vec: the same, VEC elements per aligned load/store (16 bytes for the
//                            widest operand); the last n % VEC elements run one per thread.
// - ts_apply_strided:        any strides; an OffsetCalculator compiled for the launch's rank
//                            turns the linear index into one offset per operand.
// - ts_apply_tiled_2d:       rank 2 where some input walks the output's rows in its memory
//                            order (a transposed input): each block stages a tile of every such
//                            input in shared memory, read along the input's own rows.
//
// Every form is a grid-stride loop (the host sizes the grid from the multiprocessor count, so
// any n runs), and each thread handles W elements (or W vectors) per step: all loads first,
// then all stores, for memory-level parallelism. index_t is `unsigned int` when the host proved
// that n and every offset fit in 31 bits, else `unsigned long long`; the loops never wrap:
// n + step < 2^32 in the 32-bit case.
//
// Requires half.cuh, ops.cuh, int_divider.cuh and offset_calculator.cuh before it.
// No #include: NVRTC compiles this without toolkit headers.
#ifndef TYPESTATE_TENSOR_APPLY_CUH
#define TYPESTATE_TENSOR_APPLY_CUH

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
  template <typename Op, typename... C>
  __device__ __forceinline__ auto call(const Op& op, int j, C... c) const {
    return rest.call(op, j, c..., v[j]);
  }
};

// ---- contiguous ------------------------------------------------------------------------

template <int BLOCK, int W, typename index_t, typename Op, typename out_t, typename... In>
__device__ __forceinline__ void ts_apply_contiguous(const Op& op, index_t n, out_t* out,
                                                    const In*... in) {
  ts_inputs<W, In...> ins(in...);
  const index_t step = (index_t)gridDim.x * (index_t)(BLOCK * W);
  for (index_t base = (index_t)blockIdx.x * (index_t)(BLOCK * W) + threadIdx.x; base < n;
       base += step) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const index_t i = base + (index_t)(j * BLOCK);
      if (i < n) ins.load(j, i);
    }
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const index_t i = base + (index_t)(j * BLOCK);
      if (i < n) out[i] = ts_conv<out_t>::from(ins.call(op, j));
    }
  }
}

// Precondition (host-checked): every pointer is aligned to VEC * sizeof(its element type).
template <int BLOCK, int W, int VEC, typename index_t, typename Op, typename out_t,
          typename... In>
__device__ __forceinline__ void ts_apply_contiguous_vec(const Op& op, index_t n, out_t* out,
                                                        const In*... in) {
  ts_inputs<W * VEC, In...> ins(in...);
  const index_t nvec = n / VEC;
  const index_t step = (index_t)gridDim.x * (index_t)(BLOCK * W);
  for (index_t base = (index_t)blockIdx.x * (index_t)(BLOCK * W) + threadIdx.x; base < nvec;
       base += step) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const index_t iv = base + (index_t)(j * BLOCK);
      if (iv < nvec) ins.template load_vec<VEC>(j, iv * VEC);
    }
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const index_t iv = base + (index_t)(j * BLOCK);
      if (iv < nvec) {
        ts_vec<out_t, VEC> o;
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          o.v[e] = ts_conv<out_t>::from(ins.call(op, j * VEC + e));
        }
        *reinterpret_cast<ts_vec<out_t, VEC>*>(out + iv * VEC) = o;
      }
    }
  }
  // The last n % VEC (< VEC <= blockDim.x) elements: one per thread of block 0.
  const index_t t = nvec * VEC + (index_t)blockIdx.x * BLOCK + threadIdx.x;
  if (t < n) {
    ts_inputs<1, In...> one(in...);
    one.load(0, t);
    out[t] = ts_conv<out_t>::from(one.call(op, 0));
  }
}

// ---- strided ---------------------------------------------------------------------------

// Pointers are each operand's element at linear index 0; calc gives every other element's
// offset from it (negative for inputs walked backwards).
template <int BLOCK, int W, int NDIMS, typename index_t, typename offset_t, typename Op,
          typename out_t, typename... In>
__device__ __forceinline__ void ts_apply_strided(
    const Op& op, index_t n,
    const OffsetCalculator<NDIMS, 1 + sizeof...(In), index_t, offset_t>& calc, out_t* out,
    const In*... in) {
  constexpr int NARGS = 1 + sizeof...(In);
  ts_inputs<W, In...> ins(in...);
  offset_t out_off[W];
  const index_t step = (index_t)gridDim.x * (index_t)(BLOCK * W);
  for (index_t base = (index_t)blockIdx.x * (index_t)(BLOCK * W) + threadIdx.x; base < n;
       base += step) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const index_t i = base + (index_t)(j * BLOCK);
      if (i < n) {
        offset_t off[NARGS];
        calc.get(i, off);
        out_off[j] = off[0];
        ins.load_at(j, off + 1);
      }
    }
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const index_t i = base + (index_t)(j * BLOCK);
      if (i < n) out[out_off[j]] = ts_conv<out_t>::from(ins.call(op, j));
    }
  }
}

#endif  // TYPESTATE_TENSOR_APPLY_CUH
