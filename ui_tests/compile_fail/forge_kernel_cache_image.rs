// Issue 24, forging path 4: a CUBIN planted under the key of the crate's own `gt` through
// `KernelCache::image_with` made `a.gt(&b)` return bools holding 7; `DiskCache::store`
// persisted it. The caches, their keys and the NVRTC wrapper are private.
fn main() {
    let cache = typestate_tensor::gpu::compile::KernelCache::global();
    let _ = typestate_tensor::gpu::pointwise::kernel_cache::kernel_key;
    let _ = typestate_tensor::gpu::compile::DiskCache::from_env();
    let _ = cache;
}
