// OffsetCalculator: linear index (row-major over a shape) -> one element offset per operand.
//
// Mirrors src/engine_gpu/offset_calculator.rs, whose `kernel_param_bytes` writes this struct's exact byte
// image; the kernel is compiled per rank (NDIMS) at run time and takes it by value, so sizes
// and strides live in the parameter space and every loop below unrolls (no local-memory copy
// of a dynamically indexed array, the nvcc pitfall THC's OffsetInfo works around).
//
// Layout (C rules; the Rust side writes the same bytes):
//   IntDivider<index_t> sizes[NDIMS];      // dim 0 outermost; sizes[0] is not divided by
//   [padding to alignof(offset_t)]         // (none for the pairs the crate uses)
//   offset_t strides[NDIMS][NARGS];        // in elements, may be negative or zero
//   [padding to the struct's alignment]
//
// Requires int_divider.cuh before it. No include directives: NVRTC compiles it without headers.
#ifndef TYPESTATE_TENSOR_OFFSET_CALCULATOR_CUH
#define TYPESTATE_TENSOR_OFFSET_CALCULATOR_CUH

template <int NDIMS, int NARGS, typename index_t, typename offset_t>
struct OffsetCalculator {
  static_assert(NDIMS >= 1, "rank 0 is collapsed to rank 1 by the host");
  static_assert(NARGS >= 1, "at least one operand");

  IntDivider<index_t> sizes[NDIMS];
  offset_t strides[NDIMS][NARGS];

  // Precondition: linear < product of the sizes. The host checked that every partial sum of
  // |index * stride| fits offset_t, so no product or sum below overflows (a product whose
  // stride is 0 is 0 even where (offset_t)r wraps).
  __device__ __forceinline__ void get(index_t linear, offset_t out[NARGS]) const {
#pragma unroll
    for (int arg = 0; arg < NARGS; ++arg) {
      out[arg] = 0;
    }
    // Innermost dim first; the quotient left after dim 1 is the index along dim 0.
#pragma unroll
    for (int dim = NDIMS - 1; dim > 0; --dim) {
      DivMod<index_t> qr = sizes[dim].divmod(linear);
      linear = qr.div;
#pragma unroll
      for (int arg = 0; arg < NARGS; ++arg) {
        out[arg] += (offset_t)qr.mod * strides[dim][arg];
      }
    }
#pragma unroll
    for (int arg = 0; arg < NARGS; ++arg) {
      out[arg] += (offset_t)linear * strides[0][arg];
    }
  }

  // The offsets of the element at row r (dim 0) and column c (dim 1) of a rank-2 shape, for
  // a caller that walks the two dims itself (the tiled form): no division. Precondition: r <
  // sizes[0].divisor and c < sizes[1].divisor (then get's overflow argument holds). One sum
  // per operand, dim 0's term first: accumulating from 0 dim by dim, or through an index
  // array, lets the compiler order the multiply-adds differently (checked on the PTX).
  __device__ __forceinline__ void get_at(index_t r, index_t c, offset_t out[NARGS]) const {
    static_assert(NDIMS == 2, "get_at takes a row and a column");
#pragma unroll
    for (int arg = 0; arg < NARGS; ++arg) {
      out[arg] = (offset_t)r * strides[0][arg] + (offset_t)c * strides[1][arg];
    }
  }
};

#endif  // TYPESTATE_TENSOR_OFFSET_CALCULATOR_CUH
