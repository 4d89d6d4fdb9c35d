// Blob sides as tensor views for the pointwise ops, borrowed as their states allow.
use typestate_tensor::synced::{Blob, HeadAtCpu};

#[test]
fn blob_views() {
    let blob = Blob::from_vec(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut blob: Blob<f32, HeadAtCpu> = blob.into_cpu_diff_mut().unwrap();
    blob.cpu_diff_view_mut().unwrap().fill_(0.5).unwrap();
    let sum = (&blob.cpu_data_view().unwrap() + &blob.cpu_diff_view().unwrap()).unwrap();
    assert_eq!(sum.to_vec(), vec![1.5, 2.5, 3.5, 4.5]);
    let blob = blob.update().unwrap();
    assert_eq!(blob.cpu_data(), &[0.5, 1.5, 2.5, 3.5]);
}
