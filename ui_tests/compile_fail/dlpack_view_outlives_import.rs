// An imported DLPack tensor calls the producer's deleter when dropped, which may free the
// memory: a view of it borrows the import, so it cannot be used after the drop.
use typestate_tensor::dlpack::ffi::DLManagedTensorVersioned;
use typestate_tensor::dlpack::DlpackTensor;
use typestate_tensor::Cpu;

fn import(ptr: *mut DLManagedTensorVersioned) {
    // SAFETY: a test of the borrow rules only; never called.
    let t = unsafe { DlpackTensor::<f32, Cpu>::from_versioned(ptr, &Cpu) }.unwrap();
    let view = t.view();
    drop(t);
    println!("{}", view.to_vec()[0]);
}

fn main() {
    let _ = import;
}
