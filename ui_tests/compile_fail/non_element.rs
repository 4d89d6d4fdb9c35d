// Only the crate's element types can be stored.
use typestate_tensor::synced::{SyncedMemory, Uninitialized};

fn main() {
    let _ = SyncedMemory::<String, Uninitialized>::new(3);
}
