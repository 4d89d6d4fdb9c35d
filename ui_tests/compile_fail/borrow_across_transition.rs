// A read borrow cannot be held across a transition (the transition may write that side).
use typestate_tensor::synced::SyncedMemory;

fn main() {
    let m = SyncedMemory::from_vec(vec![1.0f32, 2.0]);
    let first = &m.cpu()[0];
    let m = m.into_gpu_mut().unwrap();
    println!("{first}");
    let _ = m;
}
