// Blobs in different states in one collection, converted back with a run-time check.
use typestate_tensor::synced::{Blob, DynBlob, HeadAtCpu, Uninitialized};

#[test]
fn erased_net() {
    let net: Vec<DynBlob<f32>> = vec![
        Blob::<f32, Uninitialized>::new(&[2, 3]).unwrap().erase(),
        Blob::from_vec(&[2], vec![1.0f32, 2.0]).unwrap().erase(),
    ];
    let mut it = net.into_iter();
    let _a: Blob<f32, Uninitialized> = it.next().unwrap().try_into_blob().unwrap();
    let b: Blob<f32, HeadAtCpu, Uninitialized> = it.next().unwrap().try_into_blob().unwrap();
    assert_eq!(b.cpu_data(), &[1.0, 2.0]);
}
