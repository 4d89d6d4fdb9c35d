// Sharing data read-only between blobs, then taking it back for writing.
use typestate_tensor::synced::{Blob, Frozen, HeadAtCpu, Uninitialized};

#[test]
fn share_read_thaw() {
    let a = Blob::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).unwrap();
    let a: Blob<f32, Frozen<HeadAtCpu>, Uninitialized> = a.freeze_data();
    let b = Blob::<f32, Uninitialized>::new(&[3])
        .unwrap()
        .with_shared_data(a.shared_data())
        .unwrap();
    assert_eq!(a.cpu_data(), b.cpu_data());
    drop(b);
    let mut a: Blob<f32, HeadAtCpu, Uninitialized> = a.thaw_data().unwrap();
    a.cpu_data_mut()[0] = 9.0;
}
