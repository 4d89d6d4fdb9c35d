// The host cost of launching a kernel, with nothing else around it: the floor under
// `bench/examples/gpu_launch_bench` (ours) and `scripts/bench_torch_launch.py` (PyTorch), measured
// in the same device call as both.
//
//   nvcc -O2 -arch=sm_90 -o launch_floor scripts/launch_floor.cu -lcuda -lnvrtc
//   ./launch_floor [--batches 50] [--batch 200]
//
// Each case launches an empty kernel (one block of 128 threads) `--batch` times in a row,
// starting on an idle stream (synchronised before each batch, so the launch queue never
// fills), and reports the median over `--batches` batches of the host time per launch, in µs:
// the method of gpu_launch_bench. Cases:
// - driver `cuLaunchKernel` on a created non-blocking stream and on the legacy stream, with
//   no parameters and with the six parameters of a binary pointwise kernel (out, a, b, n,
//   p0, p1);
// - the same preceded by `cuCtxGetCurrent` (what our launch does to check the bound context);
// - `cuLaunchKernelEx` without attributes and with programmatic stream serialization (PDL),
//   and with PDL on a kernel shaped like our eager 1024-element add (`pdl_add_kernel`);
// - the runtime's `cudaLaunchKernel` (what PyTorch's launches go through) on both streams.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

__global__ void empty_kernel() {}

__global__ void params_kernel(float* out, const float* a, const float* b, unsigned int n,
                              float p0, float p1) {
  // Never true for the launches below (n == 0): the parameters are used, nothing is written.
  if (threadIdx.x < n) out[threadIdx.x] = a[threadIdx.x] * p0 + b[threadIdx.x] * p1;
}

// The shape of our eager `add_into` on 1024 f32 elements under PDL (`kernels/apply.cuh`'s
// `ts_pdl_enter`): let the next kernel start launching, wait for the previous one, then
// add 4 elements per thread in 2 blocks of 128 threads. Launched with the PDL attribute it
// is the floor of our launch's driver call on a kernel that does the same work.
__global__ void pdl_add_kernel(float* out, const float* a, const float* b, unsigned int n,
                               float p0, float p1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const unsigned int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 3 < n) {
    const float4 x = *reinterpret_cast<const float4*>(a + i);
    const float4 y = *reinterpret_cast<const float4*>(b + i);
    *reinterpret_cast<float4*>(out + i) =
        make_float4(x.x * p0 + y.x * p1, x.y * p0 + y.y * p1, x.z * p0 + y.z * p1,
                    x.w * p0 + y.w * p1);
  }
}

static void check_cu(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    std::fprintf(stderr, "%s failed: %s\n", what, name ? name : "?");
    std::exit(1);
  }
}

// The source of `pdl_add_kernel` for NVRTC: the same kernel, compiled at run time with the
// options our engine passes (`--gpu-architecture=sm_XY -std=c++17`, a CUBIN) and loaded with
// `cuModuleLoadData`, as our kernels are, instead of registered from nvcc's fatbin.
static const char* kPdlAddSource = R"(
extern "C" __global__ void pdl_add_kernel(float* out, const float* a, const float* b,
                                          unsigned int n, float p0, float p1) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const unsigned int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 3 < n) {
    const float4 x = *reinterpret_cast<const float4*>(a + i);
    const float4 y = *reinterpret_cast<const float4*>(b + i);
    *reinterpret_cast<float4*>(out + i) =
        make_float4(x.x * p0 + y.x * p1, x.y * p0 + y.y * p1, x.z * p0 + y.z * p1,
                    x.w * p0 + y.w * p1);
  }
}
)";

static void check_nvrtc(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, nvrtcGetErrorString(r));
    std::exit(1);
  }
}

// `kPdlAddSource` compiled by NVRTC for `sm_<major><minor>` and loaded as a module.
static CUfunction nvrtc_pdl_add(int major, int minor) {
  nvrtcProgram prog;
  check_nvrtc(nvrtcCreateProgram(&prog, kPdlAddSource, "pdl_add.cu", 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  char arch[64];
  std::snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
  const char* opts[] = {arch, "-std=c++17"};
  check_nvrtc(nvrtcCompileProgram(prog, 2, opts), "nvrtcCompileProgram");
  size_t size = 0;
  check_nvrtc(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
  std::vector<char> cubin(size);
  check_nvrtc(nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
  nvrtcDestroyProgram(&prog);
  CUmodule module;
  check_cu(cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
  CUfunction f;
  check_cu(cuModuleGetFunction(&f, module, "pdl_add_kernel"), "cuModuleGetFunction");
  return f;
}

static void check_rt(cudaError_t r, const char* what) {
  if (r != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(r));
    std::exit(1);
  }
}

// Median over `batches` batches of `batch` calls of `launch`, in µs per call; `sync` waits
// for the stream before each batch.
static double per_launch_us(int batches, int batch, const std::function<void()>& launch,
                            const std::function<void()>& sync) {
  for (int i = 0; i < 2 * batch; ++i) launch();  // warm-up
  sync();
  std::vector<double> us;
  us.reserve(batches);
  for (int b = 0; b < batches; ++b) {
    sync();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) launch();
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
  }
  sync();
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

int main(int argc, char** argv) {
  int batches = 50, batch = 200;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--batches")) batches = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
  }
  check_rt(cudaSetDevice(0), "cudaSetDevice");
  check_rt(cudaFree(nullptr), "cudaFree(0)");  // creates and binds the primary context
  cudaDeviceProp prop;
  check_rt(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int driver = 0;
  check_cu(cuDriverGetVersion(&driver), "cuDriverGetVersion");

  CUfunction f_empty, f_params, f_pdl_add;
  check_rt(cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t*>(&f_empty),
                               reinterpret_cast<const void*>(empty_kernel)),
           "cudaGetFuncBySymbol");
  check_rt(cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t*>(&f_params),
                               reinterpret_cast<const void*>(params_kernel)),
           "cudaGetFuncBySymbol");
  check_rt(cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t*>(&f_pdl_add),
                               reinterpret_cast<const void*>(pdl_add_kernel)),
           "cudaGetFuncBySymbol");
  const CUfunction f_pdl_add_nvrtc = prop.major >= 9 ? nvrtc_pdl_add(prop.major, prop.minor) : nullptr;

  cudaStream_t created;
  check_rt(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking), "cudaStreamCreate");
  struct Named {
    const char* name;
    cudaStream_t rt;
    CUstream cu;
  };
  const Named streams[] = {{"non-blocking stream", created, reinterpret_cast<CUstream>(created)},
                           {"legacy stream", cudaStreamLegacy, CU_STREAM_LEGACY}};

  float* buf = nullptr;
  check_rt(cudaMalloc(&buf, 4096), "cudaMalloc");
  float* out = buf;
  const float* a = buf + 256;
  const float* b = buf + 512;
  unsigned int n = 0;
  float p0 = 1.0f, p1 = 2.0f;
  void* params[] = {&out, &a, &b, &n, &p0, &p1};
  float* work = nullptr;
  check_rt(cudaMalloc(&work, 3 * 1024 * sizeof(float)), "cudaMalloc");
  check_rt(cudaMemset(work, 0, 3 * 1024 * sizeof(float)), "cudaMemset");
  float* w_out = work;
  const float* w_a = work + 1024;
  const float* w_b = work + 2048;
  unsigned int w_n = 1024;
  void* work_params[] = {&w_out, &w_a, &w_b, &w_n, &p0, &p1};

  std::printf("device: %s (sm_%d%d), driver %d; %d batches of %d launches, median\n\n",
              prop.name, prop.major, prop.minor, driver, batches, batch);
  std::printf("| launch | stream | host µs per launch |\n| --- | --- | ---: |\n");
  for (const Named& s : streams) {
    auto sync = [&] { check_rt(cudaStreamSynchronize(s.rt), "cudaStreamSynchronize"); };
    auto row = [&](const char* what, const std::function<void()>& launch) {
      std::printf("| %s | %s | %.3f |\n", what, s.name, per_launch_us(batches, batch, launch, sync));
      std::fflush(stdout);
    };
    row("cuLaunchKernel, empty kernel", [&] {
      check_cu(cuLaunchKernel(f_empty, 1, 1, 1, 128, 1, 1, 0, s.cu, nullptr, nullptr),
               "cuLaunchKernel");
    });
    row("cuLaunchKernel, 6 parameters", [&] {
      check_cu(cuLaunchKernel(f_params, 1, 1, 1, 128, 1, 1, 0, s.cu, params, nullptr),
               "cuLaunchKernel");
    });
    row("cuCtxGetCurrent + cuLaunchKernel, 6 parameters", [&] {
      CUcontext ctx;
      check_cu(cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
      check_cu(cuLaunchKernel(f_params, 1, 1, 1, 128, 1, 1, 0, s.cu, params, nullptr),
               "cuLaunchKernel");
    });
    row("cuLaunchKernelEx, 6 parameters, no attribute", [&] {
      CUlaunchConfig config = {};
      config.gridDimX = config.gridDimY = config.gridDimZ = 1;
      config.blockDimX = 128;
      config.blockDimY = config.blockDimZ = 1;
      config.hStream = s.cu;
      check_cu(cuLaunchKernelEx(&config, f_params, params, nullptr), "cuLaunchKernelEx");
    });
    if (prop.major >= 9) {
      row("cuLaunchKernelEx, 6 parameters, PDL attribute", [&] {
        CUlaunchAttribute attr = {};
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig config = {};
        config.gridDimX = config.gridDimY = config.gridDimZ = 1;
        config.blockDimX = 128;
        config.blockDimY = config.blockDimZ = 1;
        config.hStream = s.cu;
        config.attrs = &attr;
        config.numAttrs = 1;
        check_cu(cuLaunchKernelEx(&config, f_params, params, nullptr), "cuLaunchKernelEx");
      });
      row("cuLaunchKernelEx, PDL attribute, 1024-element add waiting on its predecessor", [&] {
        CUlaunchAttribute attr = {};
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig config = {};
        config.gridDimX = 2;
        config.gridDimY = config.gridDimZ = 1;
        config.blockDimX = 128;
        config.blockDimY = config.blockDimZ = 1;
        config.hStream = s.cu;
        config.attrs = &attr;
        config.numAttrs = 1;
        check_cu(cuLaunchKernelEx(&config, f_pdl_add, work_params, nullptr), "cuLaunchKernelEx");
      });
      row("cuLaunchKernelEx, PDL attribute, the same add compiled by NVRTC (cuModuleLoadData)", [&] {
        CUlaunchAttribute attr = {};
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig config = {};
        config.gridDimX = 2;
        config.gridDimY = config.gridDimZ = 1;
        config.blockDimX = 128;
        config.blockDimY = config.blockDimZ = 1;
        config.hStream = s.cu;
        config.attrs = &attr;
        config.numAttrs = 1;
        check_cu(cuLaunchKernelEx(&config, f_pdl_add_nvrtc, work_params, nullptr),
                 "cuLaunchKernelEx");
      });
    }
    row("cudaLaunchKernel, empty kernel", [&] {
      check_rt(cudaLaunchKernel(reinterpret_cast<const void*>(empty_kernel), dim3(1), dim3(128),
                                nullptr, 0, s.rt),
               "cudaLaunchKernel");
    });
    row("cudaLaunchKernel, 6 parameters", [&] {
      check_rt(cudaLaunchKernel(reinterpret_cast<const void*>(params_kernel), dim3(1), dim3(128),
                                params, 0, s.rt),
               "cudaLaunchKernel");
    });
    row("<<<>>>, 6 parameters", [&] {
      params_kernel<<<1, 128, 0, s.rt>>>(out, a, b, n, p0, p1);
    });
  }
  {
    // The context check alone.
    CUcontext ctx;
    auto nothing = [] {};
    const double us = per_launch_us(batches, batch * 10,
                                    [&] { check_cu(cuCtxGetCurrent(&ctx), "cuCtxGetCurrent"); },
                                    nothing);
    std::printf("| cuCtxGetCurrent alone | - | %.3f |\n", us);
  }
  check_rt(cudaFree(work), "cudaFree");
  check_rt(cudaFree(buf), "cudaFree");
  check_rt(cudaStreamDestroy(created), "cudaStreamDestroy");
  check_rt(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return 0;
}
