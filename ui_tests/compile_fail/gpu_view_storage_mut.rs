// A writable GPU view does not hand out its storage mutably (it could be swapped under its
// owner); host views do, as an unsized `&mut [T]`.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::TensorViewMut;

fn storage(v: &mut TensorViewMut<'_, f32, Gpu>) {
    let _ = v.storage_mut();
}

fn main() {
    let _ = storage;
}
