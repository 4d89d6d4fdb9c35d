// A transition consumes the memory: the old state cannot be used afterwards.
use typestate_tensor::synced::SyncedMemory;

fn main() {
    let m = SyncedMemory::from_vec(vec![1.0f32, 2.0]);
    let synced = m.into_gpu().unwrap();
    let _ = m.cpu();
    let _ = synced;
}
