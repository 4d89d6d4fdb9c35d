// Dropping a borrowed external buffer while the memory still uses it.
use typestate_tensor::synced::SyncedMemory;

fn main() {
    let mut buf = vec![1.0f32, 2.0, 3.0];
    let m = SyncedMemory::borrow_cpu(&mut buf);
    drop(buf);
    let _ = m.cpu();
}
