// Blob reductions on the GPU: Caffe's caffe_gpu_asum and caffe_gpu_dot(x, x) (sum of
// squares) over contiguous memory. (Blob's pointwise math runs on the Apply kernels.)
//
// Each block folds a grid-stride slice of `x` into one double and writes it to
// `partial[blockIdx.x]`; the host adds the partials in order. Accumulating in double and
// reducing in a fixed tree over a fixed grid makes the result deterministic for a given n.
//
// The host defines before this text:
//   TS_ELEM    the element type (float or double)
//   TS_BLOCK   threads per block (a power of two)
// No #include: NVRTC compiles this with builtin types only.

// sum |x[i]| (square == 0) or sum x[i]^2 (square != 0), per block.
extern "C" __global__ void ts_blob_reduce(const TS_ELEM* __restrict__ x,
                                          unsigned long long n, int square,
                                          double* __restrict__ partial) {
  __shared__ double acc[TS_BLOCK];
  double s = 0.0;
  const unsigned long long stride = (unsigned long long)gridDim.x * TS_BLOCK;
  for (unsigned long long i = (unsigned long long)blockIdx.x * TS_BLOCK + threadIdx.x; i < n;
       i += stride) {
    const double v = (double)x[i];
    // A NaN stays a NaN through either term.
    s += square ? v * v : (v < 0.0 ? -v : v);
  }
  acc[threadIdx.x] = s;
  __syncthreads();
  for (unsigned int w = TS_BLOCK / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) {
      acc[threadIdx.x] += acc[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = acc[0];
  }
}
