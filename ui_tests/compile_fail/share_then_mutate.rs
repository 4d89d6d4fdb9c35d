// Data shared with another blob is frozen read-only: writing it needs `thaw_data()`.
use typestate_tensor::synced::{Blob, HeadAtCpu, Uninitialized};

fn main() {
    let a: Blob<f32, HeadAtCpu, Uninitialized> = Blob::from_vec(&[2], vec![1.0, 2.0]).unwrap();
    let mut a = a.freeze_data();
    let _b = Blob::<f32, Uninitialized>::new(&[2])
        .unwrap()
        .with_shared_data(a.shared_data());
    a.cpu_data_mut()[0] = 3.0;
}
