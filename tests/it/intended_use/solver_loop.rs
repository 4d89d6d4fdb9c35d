// A Caffe solver step over a `Vec` of parameter blobs through `&mut`: the `_in_place` math
// keeps each blob's type, the split borrow writes the diff while reading the data (weight
// decay), and a state change goes through a consuming pass over the vector. The erased
// `DynBlob` collection does the same at run time.
use typestate_tensor::synced::{Blob, DynBlob, HeadAtCpu, HeadAtGpu};
use typestate_tensor::Result;

fn sgd_step(params: &mut [Blob<f32, HeadAtCpu>], lr: f32, wd: f32) -> Result<()> {
    for p in params.iter_mut() {
        {
            let (mut g, w) = p.cpu_diff_mut_with_data()?;
            g.update(|g| g + w.lazy() * wd)?; // diff += wd * data (Caffe's Regularize)
        }
        p.scale_diff_in_place(lr)?; // diff *= lr
        p.update_in_place()?; // data -= diff (Caffe's Update)
    }
    Ok(())
}

// The same loop on the GPU: the types say where each step runs.
fn fused_step(params: &mut [Blob<f32, HeadAtGpu>], lr: f32, wd: f32) -> Result<()> {
    for p in params {
        p.sgd_update_in_place(lr, wd)?; // data -= lr * (diff + wd * data), one kernel
    }
    Ok(())
}

// A failed state change hands the blob back (`Handback`), so the error is as large as a
// blob: the crate's design for consuming calls, not something for the user to box.
#[allow(clippy::result_large_err)]
#[test]
fn solver_loop() -> Result<()> {
    let mut params: Vec<Blob<f32, HeadAtCpu>> = vec![
        Blob::from_vec(&[2], vec![1.0, 2.0])?.into_cpu_diff_mut()?,
        Blob::from_vec(&[2, 2], vec![1.0, 2.0, 3.0, 4.0])?.into_cpu_diff_mut()?,
    ];
    for p in params.iter_mut() {
        p.cpu_diff_mut().fill(1.0); // the gradient a backward pass would write
    }
    sgd_step(&mut params, 0.5, 0.0)?;
    assert_eq!(params[0].cpu_data(), &[0.5, 1.5]);

    // A step that changes the state is a consuming pass over the vector.
    let on_cpu: Vec<Blob<f32, HeadAtCpu>> = params
        .into_iter()
        .map(|p| p.into_cpu_data_mut())
        .collect::<std::result::Result<_, _>>()?;
    let _ = fused_step;

    // Blobs in different states, erased: Caffe's run-time API, checked at run time.
    let mut net: Vec<DynBlob<f32>> = on_cpu.into_iter().map(Blob::erase).collect();
    net.push(Blob::<f32>::new(&[3])?.into_cpu_data_mut()?.erase());
    for p in &mut net {
        p.mutable_cpu_diff()?.fill(0.25);
        p.update()?;
    }
    assert_eq!(net[2].cpu_data()?, &[-0.25, -0.25, -0.25]);
    Ok(())
}
