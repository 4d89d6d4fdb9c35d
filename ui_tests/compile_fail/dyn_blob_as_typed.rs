// A typed Blob method on an erased DynBlob: its states are values, so the typed call is
// not there; the message names `try_into_blob`.
use typestate_tensor::synced::DynBlob;

fn step(net: &mut [DynBlob<f32>]) {
    for p in net {
        p.cpu_data_mut()[0] = 1.0;
    }
}

fn main() {
    let _ = step;
}
