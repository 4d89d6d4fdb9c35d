// Blob::update() of data never written (Caffe: a fatal error at run time).
use typestate_tensor::synced::{Blob, Uninitialized};

fn main() {
    let b = Blob::<f32, Uninitialized>::new(&[3]).unwrap();
    let _ = b.update();
}
