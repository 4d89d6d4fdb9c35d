// A view of a safetensors file borrows the file's bytes (no copy): it cannot outlive the
// file (or its memory map), so dropping the file while a view is alive does not compile.
use typestate_tensor::io::safetensors::{to_bytes, SafetensorsFile};
use typestate_tensor::tensor::Tensor;

fn main() {
    let w = Tensor::<f32>::ones(&[2, 3]).unwrap();
    let bytes = to_bytes([("w", (&w).into())], None).unwrap();
    let file = SafetensorsFile::from_bytes(&bytes).unwrap();
    let view = file.view::<f32>("w").unwrap();
    drop(file);
    println!("{}", view.to_vec()[0]);
}
