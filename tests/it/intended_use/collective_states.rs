// The states the collectives take and leave: a `Synced` or `HeadAtGpu` diff all-reduced
// becomes `HeadAtGpu`, which `update()` takes with data at the GPU; out of place the diff is
// only read. Element types NCCL has (here f16 and u8) compile.
use half::f16;
use typestate_tensor::collective::{Communicator, LocalGroup, ReduceOp};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::synced::{Blob, HeadAtGpu, Synced};
use typestate_tensor::tensor::Tensor;
use typestate_tensor::Result;

fn group_step(
    group: &mut LocalGroup,
    blobs: Vec<Blob<f32, HeadAtGpu, Synced>>,
) -> Result<Vec<Blob<f32, HeadAtGpu, HeadAtGpu>>> {
    let blobs: Vec<Blob<f32, HeadAtGpu, HeadAtGpu>> =
        group.all_reduce_diffs(blobs, ReduceOp::Avg)?;
    let mut out = Vec::new();
    for b in blobs {
        out.push(b.update()?);
    }
    Ok(out)
}

fn rank_step(
    comm: &mut Communicator,
    blob: Blob<f64, Synced, Synced>,
    gathered: &mut Tensor<f64, Gpu>,
) -> Result<Blob<f64, HeadAtGpu, HeadAtGpu>> {
    blob.all_gather_diff_into(comm, gathered)?;
    let blob: Blob<f64, HeadAtGpu, Synced> = blob.broadcast_data(comm, 0)?;
    Ok(blob.all_reduce_diff(comm, ReduceOp::Sum)?)
}

fn other_types(
    group: &mut LocalGroup,
    a: &mut [Tensor<f16, Gpu>],
    b: &mut [Tensor<u8, Gpu>; 2],
) -> Result<()> {
    group.all_reduce_in_place(a, ReduceOp::Max)?;
    group.broadcast_in_place(b, 1)
}
