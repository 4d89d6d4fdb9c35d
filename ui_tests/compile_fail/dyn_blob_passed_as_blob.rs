// An erased `DynBlob` passed where a typed `Blob` is expected: rustc's type mismatch; the fix
// is `.try_into_blob::<D, G>()` (the message cannot name it, see the report).
use typestate_tensor::synced::{Blob, DynBlob, HeadAtCpu};

fn step(p: &mut Blob<f32, HeadAtCpu>) {
    p.cpu_data_mut()[0] = 1.0;
}

fn train(net: &mut [DynBlob<f32>]) {
    for p in net {
        step(p);
    }
}

fn main() {
    let _ = train;
}
