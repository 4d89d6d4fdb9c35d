// Keeps a stream busy for a given GPU time, touching no memory: the race-widening kernel
// of the stream-order tests and a stand-in for a long kernel in examples.
//
// One thread reads the global nanosecond timer (%globaltimer) and sleeps in short naps
// (__nanosleep, sm_70+) until `ns` nanoseconds have passed since it started.
// No #include: NVRTC compiles this with builtin types only.

__device__ __forceinline__ unsigned long long ts_global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void ts_sleep(unsigned long long ns) {
  const unsigned long long start = ts_global_ns();
  while (ts_global_ns() - start < ns) {
    __nanosleep(1000);
  }
}
