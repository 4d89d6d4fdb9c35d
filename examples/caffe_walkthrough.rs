//! The Caffe documentation's SyncedMemory walkthrough, step by step, printing the copies
//! each step makes. Each step's type is the head state Caffe's `head_` would hold.
//!
//! Run with `cargo run --example caffe_walkthrough`. Without a GPU it prints a note.

use typestate_tensor::gpu::{Gpu, Stream};
use typestate_tensor::synced::{
    HeadAtCpu, HeadAtGpu, HeadState, Synced, SyncedMemory, TransferStats, Uninitialized,
};
use typestate_tensor::Result;

const N: usize = 1 << 20;

/// Prints one step: the Caffe call, the new state, and the copies it made.
struct Log {
    before: TransferStats,
}

impl Log {
    fn step<S: HeadState>(&mut self, caffe: &str, m: &SyncedMemory<f32, S>) {
        let now = m.stats();
        let copy = match (
            now.h2d_copies - self.before.h2d_copies,
            now.d2h_copies - self.before.d2h_copies,
        ) {
            (0, 0) => "no copy".to_owned(),
            (1, 0) => format!(
                "copied cpu->gpu ({} bytes)",
                now.h2d_bytes - self.before.h2d_bytes
            ),
            (0, 1) => format!(
                "copied gpu->cpu ({} bytes)",
                now.d2h_bytes - self.before.d2h_bytes
            ),
            (h, d) => format!("{h} uploads, {d} downloads"),
        };
        println!("{caffe:<34} -> {:<10} {copy}", m.head().name());
        self.before = now;
    }
}

/// Writes `value` into every element of the GPU copy (a stand-in for a kernel).
fn fill_gpu(m: &mut SyncedMemory<f32, HeadAtGpu>, value: f32, stream: &Stream) -> Result<()> {
    m.gpu_mut().copy_from_host(&vec![value; N], stream)
}

fn main() -> Result<()> {
    if !Gpu::available() {
        println!("No CUDA GPU on this machine: the walkthrough needs one to copy between the");
        println!("host and the device. The CPU-only part of the state machine is in");
        println!("tests/it/syncedmem.rs; run this example on a machine with an NVIDIA GPU.");
        return Ok(());
    }
    let gpu = Gpu::new(0)?;
    println!("{} ({} floats per copy)\n", gpu.device_name(), N);

    let m = SyncedMemory::<f32, Uninitialized>::with_gpu(&gpu, N)?;
    let stream = gpu.default_stream().clone();
    let mut log = Log { before: m.stats() };

    // "Assuming that data are on the CPU initially."
    let mut m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut()?;
    m.cpu_mut().fill(1.0);
    log.step("(data written on the CPU)", &m);

    let m: SyncedMemory<f32, Synced> = m.into_gpu()?;
    log.step("foo = blob.gpu_data();", &m);
    let m: SyncedMemory<f32, Synced> = m.into_cpu()?;
    log.step("foo = blob.cpu_data();", &m);
    let mut m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_mut()?;
    log.step("bar = blob.mutable_gpu_data();", &m);
    fill_gpu(&mut m, 2.0, &stream)?; // "... some operations ..."
    let mut m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_mut()?;
    log.step("bar = blob.mutable_gpu_data();", &m);
    fill_gpu(&mut m, 3.0, &stream)?;
    let m: SyncedMemory<f32, Synced> = m.into_cpu()?;
    log.step("foo = blob.cpu_data();", &m);
    assert!(m.cpu().iter().all(|&v| v == 3.0));
    let m: SyncedMemory<f32, Synced> = m.into_gpu()?;
    log.step("foo = blob.gpu_data();", &m);
    let mut m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut()?;
    log.step("bar = blob.mutable_cpu_data();", &m);
    m.cpu_mut().fill(4.0);
    let mut m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_mut()?;
    log.step("bar = blob.mutable_gpu_data();", &m);
    fill_gpu(&mut m, 5.0, &stream)?;
    let m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut()?;
    log.step("bar = blob.mutable_cpu_data();", &m);
    assert!(m.cpu().iter().all(|&v| v == 5.0));

    let s = m.stats();
    println!(
        "\n{} uploads, {} downloads; {} host and {} device allocation(s); host pinned: {:?}",
        s.h2d_copies,
        s.d2h_copies,
        s.host_allocs,
        s.device_allocs,
        m.is_host_pinned()
    );
    Ok(())
}
