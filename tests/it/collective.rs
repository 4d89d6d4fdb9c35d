//! NCCL collectives (docs/COLLECTIVES.md).
//!
//! - Without a GPU (plain `cargo test`): the typed errors of what needs no device: a missing
//!   libnccl (or, where one is on the library path, its version), the environment of the
//!   per-process start, the unique id as hex and as a file (atomic write, polling, timeout).
//! - One GPU (`--features gpu-tests`): world size 1 through both starts (a `LocalGroup` of
//!   one GPU, and the per-process path as rank 0 of 1 with the id written to a file), where
//!   every collective is the identity or a copy, in place and out of place, for every
//!   element type; Blob diffs and data (the type state after the call); ordering with work
//!   on another stream; the refusals (strided views, counts, roots, a second rank of one id
//!   in one process).
//! - Two GPUs (`--features multi-gpu-tests`): sum, average, max and min against host
//!   references on random data, all-gather and reduce-scatter layouts, broadcasts, Blob
//!   diffs averaged and replicas updated to bitwise-equal data, ranks with unequal counts
//!   or buffers on the wrong GPU refused. They print a skip line on fewer than two GPUs.
//!
//! GPU tests skip with a printed line where libnccl cannot be loaded (put
//! `$(bash scripts/nccl-lib.sh)` on LD_LIBRARY_PATH). Two-GPU tests also skip unless
//! `NCCL_NVLS_ENABLE=0` is set: NVLink multicast stays off on shared machines.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::collective::{
    self, Communicator, LocalGroup, NcclElement, RankEnv, ReduceOp, UniqueId, ID_FILE_VAR,
    ID_TIMEOUT_VAR, ID_VAR,
};
use typestate_tensor::error::{Error, GpuError, NcclError};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::synced::{Blob, Head, HeadAtGpu, Synced, Uninitialized};
use typestate_tensor::tensor::Tensor;
use typestate_tensor::{DType, Element, Result};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

/// A fresh folder for id files.
fn scratch(test: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "typestate-tensor-collective-{test}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn nccl_or_skip(test: &str) -> bool {
    match collective::version() {
        Ok(_) => true,
        Err(e) => {
            println!("{test}: skipped, NCCL unavailable ({e})");
            false
        }
    }
}

fn gpu_or_skip(test: &str) -> Option<Gpu> {
    if !Gpu::available() {
        println!("{test}: skipped, no CUDA driver or GPU on this machine");
        return None;
    }
    if !nccl_or_skip(test) {
        return None;
    }
    Some(Gpu::new(0).expect("GPU 0"))
}

fn two_gpus_or_skip(test: &str) -> Option<[Gpu; 2]> {
    let count = Gpu::device_count().unwrap_or(0);
    if count < 2 {
        println!("{test}: skipped, needs 2 GPUs, found {count}");
        return None;
    }
    if !nccl_or_skip(test) {
        return None;
    }
    if std::env::var("NCCL_NVLS_ENABLE").as_deref() != Ok("0") {
        println!("{test}: skipped, set NCCL_NVLS_ENABLE=0 (NVLink multicast stays off)");
        return None;
    }
    Some([Gpu::new(0).expect("GPU 0"), Gpu::new(1).expect("GPU 1")])
}

/// Random values of `T`, small enough that sums of a few stay exact in every type.
fn random<T: Element>(seed: u64, n: usize) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| T::from_f64(f64::from(rng.gen_range(-60i32..60)) + 0.5))
        .collect()
}

fn host<T: Element>(t: &Tensor<T, Gpu>) -> Vec<T> {
    t.to_cpu().expect("to_cpu").to_vec()
}

fn to_f64<T: Element>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// `got` equals `want` within `rel` (relative, at least absolute `rel`).
fn assert_close(what: &str, got: &[f64], want: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| (got[i] - want[i]).abs() > rel * want[i].abs().max(1.0))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} wrong, first at {}: got {}, want {}",
        bad.len(),
        got.len(),
        bad[0],
        got[bad[0]],
        want[bad[0]]
    );
}

// ---------------------------------------------------------------------------------------------
// No GPU needed
// ---------------------------------------------------------------------------------------------

/// Without libnccl every entry point is `NoLibrary`, naming the files looked for; with one
/// on the library path, its version is in the supported range.
#[test]
fn a_missing_nccl_library_is_a_typed_error() {
    match collective::version() {
        Err(NcclError::NoLibrary { tried }) => {
            assert!(!collective::available());
            assert!(tried.iter().any(|t| t == "libnccl.so"), "{tried:?}");
            let text = NcclError::NoLibrary { tried }.to_string();
            assert!(
                text.contains("LD_LIBRARY_PATH") && text.contains("nccl-lib.sh"),
                "{text}"
            );
            assert!(matches!(UniqueId::new(), Err(NcclError::NoLibrary { .. })));
        }
        Ok((major, minor, patch)) => {
            println!("NCCL {major}.{minor}.{patch} is on the library path");
            assert!(collective::available());
            assert_eq!(major, 2);
            assert!((10..=30).contains(&minor), "{minor}");
        }
        Err(other) => panic!("unexpected: {other}"),
    }
    // Refused before NCCL is asked, with or without it.
    match LocalGroup::new(&[]) {
        Err(Error::Nccl(NcclError::BadDevices { reason, .. })) => {
            assert!(reason.contains("no GPU"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_per_process_environment_is_read_as_torchrun_sets_it() {
    let env = RankEnv::from_vars(vars(&[
        ("RANK", "3"),
        ("WORLD_SIZE", "4"),
        ("LOCAL_RANK", "1"),
    ]))
    .unwrap();
    assert_eq!(
        env,
        RankEnv {
            rank: 3,
            world_size: 4,
            local_rank: 1
        }
    );
    // LOCAL_RANK defaults to RANK (one host).
    let env = RankEnv::from_vars(vars(&[("RANK", " 2 "), ("WORLD_SIZE", "3")])).unwrap();
    assert_eq!((env.rank, env.local_rank), (2, 2));
}

#[test]
fn a_bad_per_process_environment_names_the_variable() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, Option<&'a str>);
    let cases: &[Case<'_>] = &[
        (&[("WORLD_SIZE", "2")], "RANK", None),
        (&[("RANK", "0")], "WORLD_SIZE", None),
        (&[("RANK", "one"), ("WORLD_SIZE", "2")], "RANK", Some("one")),
        (&[("RANK", "-1"), ("WORLD_SIZE", "2")], "RANK", Some("-1")),
        (
            &[("RANK", "0"), ("WORLD_SIZE", "0")],
            "WORLD_SIZE",
            Some("0"),
        ),
        (&[("RANK", "2"), ("WORLD_SIZE", "2")], "RANK", Some("2")),
        (
            &[("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "x")],
            "LOCAL_RANK",
            Some("x"),
        ),
    ];
    for (pairs, var, value) in cases {
        match RankEnv::from_vars(vars(pairs)) {
            Err(e @ NcclError::BadEnv { .. }) => {
                let NcclError::BadEnv {
                    var: got_var,
                    value: got_value,
                    ..
                } = &e
                else {
                    unreachable!()
                };
                assert_eq!(
                    (*got_var, got_value.as_deref()),
                    (*var, *value),
                    "{pairs:?}"
                );
                let text = e.to_string();
                assert!(text.contains(var), "{text}");
                if value.is_none() {
                    assert!(text.contains("is not set"), "{text}");
                }
            }
            other => panic!("{pairs:?}: {other:?}"),
        }
    }
}

#[test]
fn a_world_of_several_ranks_needs_an_id_source() {
    let env = RankEnv::from_vars(vars(&[("RANK", "1"), ("WORLD_SIZE", "2")])).unwrap();
    match env.unique_id_from_vars(vars(&[])) {
        Err(NcclError::BadEnv { var, reason, .. }) => {
            assert_eq!(var, ID_FILE_VAR);
            assert!(reason.contains(ID_VAR), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    match env.unique_id_from_vars(vars(&[(ID_FILE_VAR, "  ")])) {
        Err(NcclError::BadEnv { var, .. }) => assert_eq!(var, ID_FILE_VAR),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_id_from_a_hex_variable_is_parsed_on_every_rank() {
    let id = UniqueId::from_bytes(std::array::from_fn(|i| (i * 37 % 251) as u8));
    for rank in ["0", "1"] {
        let env = RankEnv::from_vars(vars(&[("RANK", rank), ("WORLD_SIZE", "2")])).unwrap();
        let got = env
            .unique_id_from_vars(vars(&[(ID_VAR, &id.to_hex())]))
            .unwrap();
        assert_eq!(got, id);
        assert_eq!(got.as_bytes(), id.as_bytes());
    }
    let env = RankEnv::from_vars(vars(&[("RANK", "1"), ("WORLD_SIZE", "2")])).unwrap();
    match env.unique_id_from_vars(vars(&[(ID_VAR, "zz")])) {
        Err(NcclError::BadId { source_name, .. }) => assert_eq!(source_name, ID_VAR),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rank_waiting_for_the_id_file_times_out_with_a_typed_error() {
    let dir = scratch("timeout");
    let path = dir.join("never-written.id");
    let env = RankEnv::from_vars(vars(&[("RANK", "1"), ("WORLD_SIZE", "2")])).unwrap();
    let start = Instant::now();
    let got = env.unique_id_from_vars(vars(&[
        (ID_FILE_VAR, path.to_str().unwrap()),
        (ID_TIMEOUT_VAR, "0.3"),
    ]));
    let waited = start.elapsed();
    match got {
        Err(e @ NcclError::IdTimeout { .. }) => {
            let NcclError::IdTimeout { path: p, waited_ms } = &e else {
                unreachable!()
            };
            assert_eq!(p, path.to_str().unwrap());
            assert!(*waited_ms >= 300, "{waited_ms}");
            assert!(e.to_string().contains(ID_TIMEOUT_VAR), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(5));
    // A timeout that is not a number of seconds.
    for bad in ["soon", "-1", "1e300"] {
        match env.unique_id_from_vars(vars(&[
            (ID_FILE_VAR, path.to_str().unwrap()),
            (ID_TIMEOUT_VAR, bad),
        ])) {
            Err(NcclError::BadEnv { var, .. }) => assert_eq!(var, ID_TIMEOUT_VAR),
            other => panic!("{bad}: {other:?}"),
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Rank 0's atomic write and another rank's polling, in two threads: the poller sees the
/// whole id, and no temporary file is left.
#[test]
fn the_id_file_is_written_atomically_and_polled() {
    let dir = scratch("poll");
    let path = dir.join("nccl.id");
    let id = UniqueId::from_bytes(std::array::from_fn(|i| 255 - i as u8));
    let reader = {
        let path = path.clone();
        std::thread::spawn(move || UniqueId::wait_for_file(&path, Duration::from_secs(10)))
    };
    std::thread::sleep(Duration::from_millis(150));
    id.write_file(&path).unwrap();
    assert_eq!(reader.join().unwrap().unwrap(), id);
    assert_eq!(UniqueId::read_file(&path).unwrap(), id);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("nccl.id")]);
    // Overwritten atomically by a later run.
    let id2 = UniqueId::from_bytes([9; 128]);
    id2.write_file(&path).unwrap();
    assert_eq!(UniqueId::read_file(&path).unwrap(), id2);
    // Garbage in the file names the file.
    std::fs::write(&path, "not an id").unwrap();
    match UniqueId::read_file(&path) {
        Err(NcclError::BadId { source_name, .. }) => {
            assert_eq!(source_name, path.display().to_string())
        }
        other => panic!("{other:?}"),
    }
    // A missing folder is an I/O error naming the path.
    let nowhere = dir.join("missing").join("nccl.id");
    match id.write_file(&nowhere) {
        Err(NcclError::IdFile { path: p, .. }) => assert_eq!(p, nowhere.display().to_string()),
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Under `torchrun --standalone` (run id and port set, no id variable), ranks meet through a
/// file named after both, in a folder of the temporary folder private to this user
/// (`typestate-tensor-nccl-<euid>`, not the shared folder where another user could plant it).
#[test]
fn torchrun_standalone_ranks_meet_through_a_file_named_after_the_run() {
    let run = format!("run{}", std::process::id());
    let probe = std::env::temp_dir().join(format!("typestate-tensor-euid-probe-{run}"));
    std::fs::write(&probe, b"").unwrap();
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&probe).unwrap());
    std::fs::remove_file(&probe).unwrap();
    let dir = std::env::temp_dir().join(format!("typestate-tensor-nccl-{uid}"));
    let path = dir.join(format!("{run}-29500.id"));
    let _ = std::fs::remove_file(&path);
    let env = RankEnv::from_vars(vars(&[("RANK", "1"), ("WORLD_SIZE", "2")])).unwrap();
    let torchrun = [
        ("TORCHELASTIC_RUN_ID", run.as_str()),
        ("MASTER_PORT", "29500"),
        (ID_TIMEOUT_VAR, "0.05"),
    ];
    match env.unique_id_from_vars(vars(&torchrun)) {
        Err(NcclError::IdTimeout { path: p, .. }) => assert_eq!(p, path.display().to_string()),
        other => panic!("{other:?}"),
    }
    let id = UniqueId::from_bytes([42; 128]);
    // As rank 0 does first: the private folder.
    let mut builder = std::fs::DirBuilder::new();
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    let _ = builder.create(&dir);
    id.write_file(&path).unwrap();
    assert_eq!(env.unique_id_from_vars(vars(&torchrun)).unwrap(), id);
    let _ = std::fs::remove_file(&path);
}

// ---------------------------------------------------------------------------------------------
// One GPU: world size 1
// ---------------------------------------------------------------------------------------------

/// Every collective on a world of one, for one element type, in place and out of place:
/// all-reduce (every op), broadcast, all-gather and reduce-scatter are the identity.
fn world_of_one<T: NcclElement>(group: &mut LocalGroup, gpu: &Gpu, seed: u64) -> Result<()> {
    let n = 1000 + seed as usize;
    let data: Vec<T> = random(seed, n);
    let input = Tensor::from_vec(&[n], data.clone())?.to_gpu(gpu)?;
    for op in [
        ReduceOp::Sum,
        ReduceOp::Avg,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Prod,
    ] {
        let mut bufs = vec![input.try_clone()?];
        group.all_reduce_in_place(&mut bufs, op)?;
        assert_eq!(
            host(&bufs[0]),
            data,
            "{} all_reduce_in_place {op:?}",
            T::NAME
        );
        let mut out = vec![Tensor::<T, Gpu>::zeros_on(&[n], gpu)?];
        group.all_reduce(&[input.view()], &mut out, op)?;
        assert_eq!(host(&out[0]), data, "{} all_reduce {op:?}", T::NAME);
        let mut out = vec![Tensor::<T, Gpu>::zeros_on(&[n], gpu)?];
        group.reduce_scatter(&[input.view()], &mut out, op)?;
        assert_eq!(host(&out[0]), data, "{} reduce_scatter {op:?}", T::NAME);
    }
    let mut out = vec![Tensor::<T, Gpu>::zeros_on(&[n], gpu)?];
    group.broadcast(&[input.view()], &mut out, 0)?;
    assert_eq!(host(&out[0]), data, "{} broadcast", T::NAME);
    let mut out = vec![Tensor::<T, Gpu>::zeros_on(&[n], gpu)?];
    group.all_gather(&[input.view()], &mut out)?;
    assert_eq!(host(&out[0]), data, "{} all_gather", T::NAME);
    let mut bufs = vec![input.try_clone()?];
    group.broadcast_in_place(&mut bufs, 0)?;
    group.all_gather_in_place(&mut bufs)?;
    group.reduce_scatter_in_place(&mut bufs, ReduceOp::Sum)?;
    assert_eq!(host(&bufs[0]), data, "{} in place", T::NAME);
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_world_of_one_gpu_leaves_every_element_type_unchanged() -> Result<()> {
    let Some(gpu) = gpu_or_skip("a_world_of_one_gpu_leaves_every_element_type_unchanged") else {
        return Ok(());
    };
    let mut group = LocalGroup::new(std::slice::from_ref(&gpu))?;
    assert_eq!(group.world_size(), 1);
    assert_eq!(group.gpu(0).map(Gpu::ordinal), Some(0));
    world_of_one::<f32>(&mut group, &gpu, 1)?;
    world_of_one::<f64>(&mut group, &gpu, 2)?;
    world_of_one::<f16>(&mut group, &gpu, 3)?;
    world_of_one::<bf16>(&mut group, &gpu, 4)?;
    world_of_one::<i32>(&mut group, &gpu, 5)?;
    world_of_one::<i64>(&mut group, &gpu, 6)?;
    world_of_one::<u8>(&mut group, &gpu, 7)?;
    // A contiguous view into a larger tensor: only its elements are written.
    let data: Vec<f32> = random(8, 64);
    let big = Tensor::from_vec(&[8, 8], data.clone())?.to_gpu(&gpu)?;
    let mut out = Tensor::<f32, Gpu>::zeros_on(&[8, 8], &gpu)?;
    {
        let rows = out.view_mut().narrow(0, 2, 3)?;
        group.all_reduce(&[big.view().narrow(0, 5, 3)?], &mut [rows], ReduceOp::Sum)?;
    }
    let got = host(&out);
    for (i, v) in got.iter().enumerate() {
        let want = if (16..40).contains(&i) {
            data[i + 24]
        } else {
            0.0
        };
        assert_eq!(*v, want, "element {i}");
    }
    group.check_async_errors()?;
    group.destroy()?;
    gpu.check_err()?;
    Ok(())
}

/// The per-process path as rank 0 of 1: the environment read as torchrun sets it, the id
/// written to a file by rank 0, the communicator made from both.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn the_per_process_start_works_as_rank_0_of_1() -> Result<()> {
    let Some(gpu) = gpu_or_skip("the_per_process_start_works_as_rank_0_of_1") else {
        return Ok(());
    };
    let dir = scratch("rank0of1");
    let path = dir.join("nccl.id");
    let env = RankEnv::from_vars(vars(&[
        ("RANK", "0"),
        ("WORLD_SIZE", "1"),
        ("LOCAL_RANK", "0"),
    ]))?;
    let id = env.unique_id_from_vars(vars(&[(ID_FILE_VAR, path.to_str().unwrap())]))?;
    assert_eq!(UniqueId::read_file(&path)?, id, "rank 0 wrote the id");
    let mut comm = Communicator::init_rank(&gpu, env.rank, env.world_size, &id)?;
    assert_eq!(
        (comm.rank(), comm.world_size(), comm.gpu().ordinal()),
        (0, 1, 0)
    );
    // A second rank of the same communicator in this process is refused before NCCL.
    match Communicator::init_rank(&gpu, 0, 1, &id) {
        Err(Error::Nccl(NcclError::RankAlreadyInProcess { .. })) => {}
        other => panic!("{other:?}"),
    }
    let data: Vec<f32> = random(11, 4096);
    let mut t = Tensor::from_vec(&[64, 64], data.clone())?.to_gpu(&gpu)?;
    comm.all_reduce_in_place(&mut t, ReduceOp::Sum)?;
    comm.broadcast_in_place(&mut t, 0)?;
    assert_eq!(host(&t), data);
    let mut out = Tensor::<f32, Gpu>::zeros_on(&[4096], &gpu)?;
    comm.all_gather(&t, &mut out)?;
    assert_eq!(host(&out), data);
    comm.check_async_error()?;
    comm.destroy()?;
    let _ = std::fs::remove_dir_all(dir);
    gpu.check_err()?;
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn collectives_refuse_what_nccl_cannot_do_before_queueing_anything() -> Result<()> {
    let Some(gpu) = gpu_or_skip("collectives_refuse_what_nccl_cannot_do_before_queueing_anything")
    else {
        return Ok(());
    };
    let mut group = LocalGroup::new(std::slice::from_ref(&gpu))?;
    let data: Vec<f32> = random(21, 48);
    let t = Tensor::from_vec(&[6, 8], data.clone())?.to_gpu(&gpu)?;
    // A strided view: typed error naming `contiguous()`.
    let mut out = vec![Tensor::<f32, Gpu>::zeros_on(&[8, 6], &gpu)?];
    match group.all_reduce(&[t.t()], &mut out, ReduceOp::Sum) {
        Err(Error::Nccl(e @ NcclError::NotContiguous { .. })) => {
            assert!(e.to_string().contains("contiguous()"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    // Counts that do not fit.
    let mut short = vec![Tensor::<f32, Gpu>::zeros_on(&[47], &gpu)?];
    match group.all_reduce(&[t.view()], &mut short, ReduceOp::Sum) {
        Err(Error::Nccl(NcclError::CountMismatch {
            expected: 48,
            got: 47,
            ..
        })) => {}
        other => panic!("{other:?}"),
    }
    // A root past the world.
    let mut bufs = vec![t.try_clone()?];
    match group.broadcast_in_place(&mut bufs, 1) {
        Err(Error::Nccl(NcclError::RankOutOfRange {
            rank: 1,
            world_size: 1,
            ..
        })) => {}
        other => panic!("{other:?}"),
    }
    // One buffer per rank.
    let mut two = vec![t.try_clone()?, t.try_clone()?];
    match group.all_reduce_in_place(&mut two, ReduceOp::Sum) {
        Err(Error::Nccl(NcclError::WrongBufferCount {
            got: 2,
            world_size: 1,
            ..
        })) => {}
        other => panic!("{other:?}"),
    }
    // A stream of the wrong length list.
    assert!(matches!(
        group.set_streams(Some(vec![])),
        Err(Error::Nccl(NcclError::WrongBufferCount { .. }))
    ));
    // Nothing was written.
    assert_eq!(host(&bufs[0]), data);
    assert_eq!(host(&out[0]), vec![0.0; 48]);
    gpu.check_err()?;
    Ok(())
}

/// A collective on a side stream reads what the default stream wrote (behind a 40 ms
/// sleep) and later work on the default stream reads what it wrote: the buffers order both.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_collective_on_another_stream_is_ordered_by_the_buffers() -> Result<()> {
    let Some(gpu) = gpu_or_skip("a_collective_on_another_stream_is_ordered_by_the_buffers") else {
        return Ok(());
    };
    let mut group = LocalGroup::new(std::slice::from_ref(&gpu))?;
    let side = gpu.new_stream()?;
    group.set_streams(Some(vec![side.clone()]))?;
    assert_eq!(group.stream(0), Some(&side));
    let n = 1 << 22;
    let ones = Tensor::full_on(&[n], 1.0f32, &gpu)?;
    let mut input = Tensor::<f32, Gpu>::zeros_on(&[n], &gpu)?;
    let mut out = vec![Tensor::<f32, Gpu>::zeros_on(&[n], &gpu)?];
    for round in 1..=3 {
        // Held back on the default stream, then written there.
        gpu.default_stream().sleep(Duration::from_millis(40))?;
        input.add_(&ones)?;
        // On `side`: must wait for the write above.
        group.all_reduce(&[input.view()], &mut out, ReduceOp::Sum)?;
        // On the default stream: must wait for the collective's write.
        let doubled = out[0].add(&out[0])?;
        let got = host(&doubled);
        assert!(
            got.iter().all(|&v| v == 2.0 * round as f32),
            "round {round}: {} stale elements",
            got.iter().filter(|&&v| v != 2.0 * round as f32).count()
        );
    }
    group.set_streams(None)?;
    assert_eq!(group.stream(0), None);
    gpu.check_err()?;
    Ok(())
}

/// Blob diffs and data: the collective needs them current on the GPU (`Synced` or
/// `HeadAtGpu`) and leaves them `HeadAtGpu`; out of place they are only read.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn blob_diffs_and_data_through_a_world_of_one() -> Result<()> {
    let Some(gpu) = gpu_or_skip("blob_diffs_and_data_through_a_world_of_one") else {
        return Ok(());
    };
    let mut group = LocalGroup::new(std::slice::from_ref(&gpu))?;
    let diff: Vec<f32> = random(31, 24);
    let mut blob = Blob::<f32, Uninitialized>::with_gpu(&gpu, &[4, 6])?
        .into_cpu_data_mut()?
        .into_cpu_diff_mut()?;
    blob.cpu_data_mut().fill(10.0);
    blob.cpu_diff_mut().copy_from_slice(&diff);
    // Both sides Synced: current on the GPU and the CPU.
    let blob: Blob<f32, Synced, Synced> = blob.into_gpu_data()?.into_gpu_diff()?;
    let blobs = group.all_reduce_diffs(vec![blob], ReduceOp::Sum)?;
    let blob: Blob<f32, Synced, HeadAtGpu> = blobs.into_iter().next().unwrap();
    assert_eq!(blob.diff_head(), Head::HeadAtGpu);
    assert_eq!(blob.data_head(), Head::Synced);
    // Out of place: the diff is read into a tensor.
    let mut out = Tensor::<f32, Gpu>::zeros_on(&[24], &gpu)?;
    let id = UniqueId::new()?;
    let mut comm = Communicator::init_rank(&gpu, 0, 1, &id)?;
    blob.all_reduce_diff_into(&mut comm, ReduceOp::Max, &mut out)?;
    assert_eq!(host(&out), diff);
    // In place through the per-process communicator, then Caffe's update.
    let blob = blob.all_reduce_diff(&mut comm, ReduceOp::Avg)?;
    let blob = blob.broadcast_data(&mut comm, 0)?;
    let blob: Blob<f32, HeadAtGpu, HeadAtGpu> = blob;
    let blob = blob.update()?.into_cpu_data()?;
    let want: Vec<f32> = diff.iter().map(|d| 10.0 - d).collect();
    assert_eq!(blob.cpu_data(), &want[..]);
    drop(comm);
    gpu.check_err()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Two GPUs
// ---------------------------------------------------------------------------------------------

/// One tensor per rank and the host copies of their elements.
type PerRank<T> = (Vec<Tensor<T, Gpu>>, Vec<Vec<T>>);

/// One random tensor per rank, and its host copy.
fn per_rank<T: Element>(gpus: &[Gpu], n: usize, seed: u64) -> Result<PerRank<T>> {
    let mut tensors = Vec::new();
    let mut hosts = Vec::new();
    for (r, gpu) in gpus.iter().enumerate() {
        let data: Vec<T> = random(seed + r as u64 * 1000, n);
        tensors.push(Tensor::from_vec(&[n], data.clone())?.to_gpu(gpu)?);
        hosts.push(data);
    }
    Ok((tensors, hosts))
}

/// The host reference of a reduction over ranks, element by element, in f64.
fn reference(hosts: &[Vec<f64>], op: ReduceOp) -> Vec<f64> {
    (0..hosts[0].len())
        .map(|i| {
            let col = hosts.iter().map(|h| h[i]);
            match op {
                ReduceOp::Sum => col.sum(),
                ReduceOp::Avg => col.sum::<f64>() / hosts.len() as f64,
                ReduceOp::Max => col.fold(f64::MIN, f64::max),
                ReduceOp::Min => col.fold(f64::MAX, f64::min),
                ReduceOp::Prod => col.product(),
            }
        })
        .collect()
}

/// Sum, average (floating point only: NCCL's integer average is its own rounding), max and
/// min of random data against the host, in place and out of place.
fn all_reduce_against_host<T: NcclElement>(
    group: &mut LocalGroup,
    gpus: &[Gpu],
    rel: f64,
    seed: u64,
) -> Result<()> {
    let n = (1 << 18) + 37;
    let float = matches!(T::DTYPE, DType::F32 | DType::F64 | DType::F16 | DType::BF16);
    let ops: &[ReduceOp] = if float {
        &[ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min]
    } else {
        &[ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min]
    };
    for (k, &op) in ops.iter().enumerate() {
        let (mut tensors, hosts) = per_rank::<T>(gpus, n, seed + k as u64)?;
        let hosts: Vec<Vec<f64>> = hosts.iter().map(|h| to_f64(h)).collect();
        let want = reference(&hosts, op);
        // Out of place.
        let mut outs = gpus
            .iter()
            .map(|g| Tensor::<T, Gpu>::zeros_on(&[n], g))
            .collect::<Result<Vec<_>>>()?;
        group.all_reduce(&tensors, &mut outs, op)?;
        // In place.
        group.all_reduce_in_place(&mut tensors, op)?;
        let first = host(&tensors[0]);
        for r in 0..gpus.len() {
            let what = format!("{} {op:?} rank {r}", T::NAME);
            assert_close(
                &format!("{what} in place"),
                &to_f64(&host(&tensors[r])),
                &want,
                rel,
            );
            assert_close(
                &format!("{what} out of place"),
                &to_f64(&host(&outs[r])),
                &want,
                rel,
            );
            // Every rank gets the same bits.
            assert!(host(&tensors[r]) == first, "{what}: ranks differ");
        }
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "multi-gpu-tests"),
    ignore = "needs 2 GPUs: cargo test --features multi-gpu-tests"
)]
fn all_reduce_sum_avg_max_min_match_the_host_on_two_gpus() -> Result<()> {
    let Some(gpus) = two_gpus_or_skip("all_reduce_sum_avg_max_min_match_the_host_on_two_gpus")
    else {
        return Ok(());
    };
    let mut group = LocalGroup::new(&gpus)?;
    assert_eq!(group.world_size(), 2);
    all_reduce_against_host::<f32>(&mut group, &gpus, 1e-6, 100)?;
    all_reduce_against_host::<f64>(&mut group, &gpus, 1e-12, 200)?;
    all_reduce_against_host::<i32>(&mut group, &gpus, 0.0, 300)?;
    all_reduce_against_host::<i64>(&mut group, &gpus, 0.0, 400)?;
    all_reduce_against_host::<bf16>(&mut group, &gpus, 1e-2, 500)?;
    all_reduce_against_host::<f16>(&mut group, &gpus, 2e-3, 600)?;
    group.check_async_errors()?;
    for g in &gpus {
        g.check_err()?;
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "multi-gpu-tests"),
    ignore = "needs 2 GPUs: cargo test --features multi-gpu-tests"
)]
fn all_gather_reduce_scatter_and_broadcast_layouts_on_two_gpus() -> Result<()> {
    let Some(gpus) =
        two_gpus_or_skip("all_gather_reduce_scatter_and_broadcast_layouts_on_two_gpus")
    else {
        return Ok(());
    };
    let mut group = LocalGroup::new(&gpus)?;
    let n = 50_000;
    // All-gather: rank r's input lands at chunk r of every output.
    let (inputs, hosts) = per_rank::<f32>(&gpus, n, 7)?;
    let gathered: Vec<f32> = hosts.concat();
    let mut outs = gpus
        .iter()
        .map(|g| Tensor::<f32, Gpu>::zeros_on(&[2, n], g))
        .collect::<Result<Vec<_>>>()?;
    group.all_gather(&inputs, &mut outs)?;
    for (r, out) in outs.iter().enumerate() {
        assert!(host(out) == gathered, "all_gather rank {r}");
    }
    // In place: each rank's buffer holds its input at chunk r.
    let mut bufs = Vec::new();
    for (r, g) in gpus.iter().enumerate() {
        let mut b = vec![-1.0f32; 2 * n];
        b[r * n..(r + 1) * n].copy_from_slice(&hosts[r]);
        bufs.push(Tensor::from_vec(&[2 * n], b)?.to_gpu(g)?);
    }
    group.all_gather_in_place(&mut bufs)?;
    for (r, b) in bufs.iter().enumerate() {
        assert!(host(b) == gathered, "all_gather_in_place rank {r}");
    }
    // Reduce-scatter: rank r gets chunk r of the sum.
    let (inputs, hosts) = per_rank::<f32>(&gpus, 2 * n, 8)?;
    let sums = reference(
        &hosts.iter().map(|h| to_f64(h)).collect::<Vec<_>>(),
        ReduceOp::Sum,
    );
    let mut outs = gpus
        .iter()
        .map(|g| Tensor::<f32, Gpu>::zeros_on(&[n], g))
        .collect::<Result<Vec<_>>>()?;
    group.reduce_scatter(&inputs, &mut outs, ReduceOp::Sum)?;
    for (r, out) in outs.iter().enumerate() {
        assert_close(
            &format!("reduce_scatter rank {r}"),
            &to_f64(&host(out)),
            &sums[r * n..(r + 1) * n],
            1e-6,
        );
    }
    let mut bufs = inputs;
    group.reduce_scatter_in_place(&mut bufs, ReduceOp::Max)?;
    let maxes = reference(
        &hosts.iter().map(|h| to_f64(h)).collect::<Vec<_>>(),
        ReduceOp::Max,
    );
    for (r, b) in bufs.iter().enumerate() {
        let got = to_f64(&host(b)[r * n..(r + 1) * n]);
        assert_close(
            &format!("reduce_scatter_in_place rank {r}"),
            &got,
            &maxes[r * n..(r + 1) * n],
            0.0,
        );
    }
    // Broadcast from rank 1, in place and out of place.
    let (mut bufs, hosts) = per_rank::<i32>(&gpus, n, 9)?;
    let mut outs = gpus
        .iter()
        .map(|g| Tensor::<i32, Gpu>::zeros_on(&[n], g))
        .collect::<Result<Vec<_>>>()?;
    group.broadcast(&bufs, &mut outs, 1)?;
    group.broadcast_in_place(&mut bufs, 1)?;
    for r in 0..2 {
        assert!(host(&outs[r]) == hosts[1], "broadcast rank {r}");
        assert!(host(&bufs[r]) == hosts[1], "broadcast_in_place rank {r}");
    }
    for g in &gpus {
        g.check_err()?;
    }
    Ok(())
}

/// Caffe's multi-GPU step in small: each replica's diff from its own data, averaged, then
/// `update()`: the replicas stay bitwise equal and match the host.
#[test]
#[cfg_attr(
    not(feature = "multi-gpu-tests"),
    ignore = "needs 2 GPUs: cargo test --features multi-gpu-tests"
)]
fn blob_diffs_averaged_on_two_gpus_keep_the_replicas_bitwise_equal() -> Result<()> {
    let Some(gpus) =
        two_gpus_or_skip("blob_diffs_averaged_on_two_gpus_keep_the_replicas_bitwise_equal")
    else {
        return Ok(());
    };
    let mut group = LocalGroup::new(&gpus)?;
    let n = 3 * 7 * 1001;
    let weights: Vec<f32> = random(40, n);
    let mut blobs = Vec::new();
    let mut diffs = Vec::new();
    for (r, gpu) in gpus.iter().enumerate() {
        let diff: Vec<f32> = random(41 + r as u64, n);
        let mut b = Blob::<f32, Uninitialized>::with_gpu(gpu, &[3, 7, 1001])?
            .into_cpu_data_mut()?
            .into_cpu_diff_mut()?;
        // Rank 1 starts from other weights: the broadcast makes them rank 0's.
        b.cpu_data_mut()
            .copy_from_slice(if r == 0 { &weights } else { &diff });
        b.cpu_diff_mut().copy_from_slice(&diff);
        blobs.push(b.into_gpu_data_mut()?.into_gpu_diff_mut()?);
        diffs.push(to_f64(&diff));
    }
    let blobs = group.broadcast_data(blobs, 0)?;
    let mean = reference(&diffs, ReduceOp::Avg);
    let mut blobs = group.all_reduce_diffs(blobs, ReduceOp::Avg)?;
    for _ in 0..3 {
        blobs = blobs
            .into_iter()
            .map(Blob::update)
            .collect::<std::result::Result<Vec<_>, _>>()?;
    }
    let finals = blobs
        .into_iter()
        .map(|b| Ok(b.into_cpu_data()?.cpu_data().to_vec()))
        .collect::<Result<Vec<Vec<f32>>>>()?;
    assert!(
        finals[0]
            .iter()
            .zip(&finals[1])
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "replicas differ"
    );
    let want: Vec<f64> = (0..n)
        .map(|i| f64::from(weights[i]) - 3.0 * mean[i])
        .collect();
    assert_close("updated weights", &to_f64(&finals[0]), &want, 1e-5);
    for g in &gpus {
        g.check_err()?;
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "multi-gpu-tests"),
    ignore = "needs 2 GPUs: cargo test --features multi-gpu-tests"
)]
fn two_gpu_groups_refuse_unequal_counts_and_buffers_on_the_wrong_gpu() -> Result<()> {
    let Some(gpus) =
        two_gpus_or_skip("two_gpu_groups_refuse_unequal_counts_and_buffers_on_the_wrong_gpu")
    else {
        return Ok(());
    };
    let mut group = LocalGroup::new(&gpus)?;
    let a = Tensor::full_on(&[100], 1.0f32, &gpus[0])?;
    let b = Tensor::full_on(&[101], 2.0f32, &gpus[1])?;
    let mut bufs = vec![a.try_clone()?, b.try_clone()?];
    match group.all_reduce_in_place(&mut bufs, ReduceOp::Sum) {
        Err(Error::Nccl(NcclError::CountMismatch {
            expected: 100,
            got: 101,
            what,
            ..
        })) => assert!(what.contains("rank 1"), "{what}"),
        other => panic!("{other:?}"),
    }
    // Both on GPU 0: rank 1's buffer is on the wrong GPU.
    let mut bufs = vec![a.try_clone()?, a.try_clone()?];
    match group.all_reduce_in_place(&mut bufs, ReduceOp::Sum) {
        Err(Error::Gpu(GpuError::DeviceMismatch { lhs: 1, rhs: 0, .. })) => {}
        other => panic!("{other:?}"),
    }
    // A stream of the wrong GPU.
    let s0 = gpus[0].new_stream()?;
    assert!(matches!(
        group.set_streams(Some(vec![s0.clone(), s0])),
        Err(Error::Gpu(GpuError::DeviceMismatch { .. }))
    ));
    // A GPU given twice.
    assert!(matches!(
        LocalGroup::new(&[gpus[0].clone(), gpus[0].clone()]),
        Err(Error::Nccl(NcclError::BadDevices { .. }))
    ));
    // Nothing was written.
    assert_eq!(host(&bufs[0]), vec![1.0; 100]);
    Ok(())
}
