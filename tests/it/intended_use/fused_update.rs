// In-place fused updates: a tensor, three tensors at once, and a blob's data from its diff.
use typestate_tensor::synced::{Blob, HeadAtCpu};
use typestate_tensor::tensor::{expr, Tensor};

#[test]
fn fused_update() {
    let y = Tensor::from_vec(&[3], vec![1.0f32, 1.0, 1.0]).unwrap();
    let mut x = Tensor::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).unwrap();
    x.update(|x| x * 2.0f32 + &y).unwrap();
    assert_eq!(x.to_vec(), vec![3.0, 5.0, 7.0]);

    let mut z = Tensor::from_vec(&[3], vec![0.0f32; 3]).unwrap();
    expr::update((&mut x, &mut z), |(x, z)| (x.clone() - 1.0f32, z + x)).unwrap();
    assert_eq!(
        (x.to_vec(), z.to_vec()),
        (vec![2.0, 4.0, 6.0], vec![3.0, 5.0, 7.0])
    );

    let blob = Blob::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).unwrap();
    let mut blob: Blob<f32, HeadAtCpu> = blob.into_cpu_diff_mut().unwrap();
    blob.cpu_diff_mut().copy_from_slice(&[1.0, 1.0, 1.0]);
    {
        let (mut w, g) = blob.cpu_data_mut_with_diff().unwrap();
        w.update(|w| w - &g).unwrap();
    }
    let blob = blob.sgd_update(0.5, 0.0).unwrap();
    assert_eq!(blob.cpu_data(), &[-0.5, 0.5, 1.5]);
}
