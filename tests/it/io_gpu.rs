//! Loading safetensors files straight to a GPU through pinned memory (issue 30), and GPU
//! tensors saved through the host. Without the `gpu-tests` feature these are ignored; on a
//! machine without a GPU they print a skip line.

use typestate_tensor::element::Element;
use typestate_tensor::gpu::Gpu;
use typestate_tensor::io::{safetensors, SafetensorsFile, TensorRef};
use typestate_tensor::Tensor;

use crate::common::device::gpu_or_skip;
use crate::common::rng::Rng;
use crate::io_util::{for_each_type, random_tensor, reference, temp_dir, views};

/// Ten tensors of `T` (every layout of random shapes, 0-d and empty ones included) written
/// here, loaded to the GPU several in flight on a new stream, read back and compared.
fn load_type<T: Element>(gpu: &Gpu) {
    let mut rng = Rng(0x6b0 + T::DTYPE as u64);
    let dir = temp_dir(&format!("gpu-load-{}", T::NAME));
    let path = dir.join("g.safetensors");
    let bases: Vec<Tensor<T>> = (0..3).map(|_| random_tensor::<T>(&mut rng)).collect();
    let mut entries: Vec<(String, TensorRef<'_>)> = Vec::new();
    let mut want = Vec::new();
    for (i, b) in bases.iter().enumerate() {
        for (name, v) in views(b) {
            entries.push((format!("{name}{i}"), TensorRef::from_view(v.clone())));
            want.push((format!("{name}{i}"), v.shape().to_vec(), reference(&v)));
        }
    }
    safetensors::save(&path, entries, None).unwrap();
    // SAFETY: this test alone writes the file, and not while it is mapped.
    let file = unsafe { SafetensorsFile::map(&path) }.unwrap();
    let names: Vec<&str> = want.iter().map(|(n, _, _)| n.as_str()).collect();
    let stream = gpu.new_stream().unwrap();
    let loaded = file.to_gpu::<T>(&names, gpu, &stream).unwrap();
    assert_eq!(loaded.len(), want.len());
    for (g, (name, shape, values)) in loaded.iter().zip(&want) {
        assert_eq!(g.shape(), &shape[..], "{name}");
        // Read on the default stream: the tensor orders the read after its copy.
        assert_eq!(
            &g.to_cpu().unwrap().to_vec(),
            values,
            "{name} ({})",
            T::NAME
        );
    }
    let one = file.tensor_gpu::<T>(names[0], gpu).unwrap();
    assert_eq!(one.to_cpu().unwrap().to_vec(), want[0].2);
    // A GPU tensor (and a transposed view of one) saved through the host.
    let back = dir.join("back.safetensors");
    let host = loaded[0].to_cpu().unwrap();
    safetensors::save(&back, [("x", (&host).into())], None).unwrap();
    assert_eq!(
        SafetensorsFile::open(&back)
            .unwrap()
            .tensor::<T>("x")
            .unwrap()
            .to_vec(),
        want[0].2
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn safetensors_to_gpu_every_type() {
    let Some(gpu) = gpu_or_skip("safetensors_to_gpu_every_type") else {
        return;
    };
    for_each_type!(load_type(&gpu));
}

/// A bad name or type fails before any copy, with the typed error.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn safetensors_to_gpu_checks_names_first() {
    let Some(gpu) = gpu_or_skip("safetensors_to_gpu_checks_names_first") else {
        return;
    };
    let a = Tensor::from_vec(&[2], vec![1.0f32, 2.0]).unwrap();
    let bytes = safetensors::to_bytes([("a", (&a).into())], None).unwrap();
    let f = SafetensorsFile::from_bytes(&bytes).unwrap();
    let s = gpu.default_stream();
    assert!(f.to_gpu::<f32>(&["a", "b"], &gpu, s).is_err());
    assert!(f.to_gpu::<f64>(&["a"], &gpu, s).is_err());
    assert_eq!(f.to_gpu::<f32>(&["a", "a"], &gpu, s).unwrap().len(), 2);
}
