// An asynchronous push needs a CPU buffer the memory owns: a borrowed one could be released
// (by leaking the memory) while the copy still reads it.
use typestate_tensor::gpu::Stream;
use typestate_tensor::synced::SyncedMemory;

fn push(buf: &mut [f32], stream: &Stream) {
    let m = SyncedMemory::borrow_cpu(buf);
    let _ = m.async_gpu_push(stream);
}

fn main() {
    let _ = push;
}
