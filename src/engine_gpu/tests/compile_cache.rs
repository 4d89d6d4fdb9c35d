//! Kernel compilation caches: the disk format and its rejections, the stable hashes, the
//! cache folder settings, the in-process cache under racing threads (with a fake compiler),
//! and, where NVRTC or a GPU is present, real compiles, loads and launches (including the
//! CUDA `IntDivider` / `OffsetCalculator` fed with the Rust byte images).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use crate::engine_gpu::compile::arch::Target;
use crate::engine_gpu::compile::disk_cache::{
    decode, encode, entry_key, resolve_dir, Bypass, DiskCache, Distrust, Lookup, Origin, Reject,
    FORMAT_VERSION, HEADER_LEN,
};
use crate::engine_gpu::compile::image::KernelImage;
use crate::engine_gpu::compile::{nvrtc, Arch, Fnv128, KernelCache, KernelKey, NvrtcOptions};
use proptest::prelude::*;
use typestate_tensor::element::DType;
use typestate_tensor::error::GpuError;

/// A fresh folder under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "tt-compile-cache-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        Self(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn key(op: &'static str) -> KernelKey {
    KernelKey {
        op: op.into(),
        entry: "k".into(),
        dtypes: vec![DType::F32],
        rank: 2,
        index_bits: 32,
        vector_width: 1,
        arch: Arch::new(9, 0),
        options: NvrtcOptions::default(),
        source_hash: KernelKey::hash_source(op),
    }
}

/// A pseudo-random payload (not all zeros), seeded.
fn payload(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

// ---- stable hashes -------------------------------------------------------------------------

#[test]
fn fnv128_matches_the_published_test_vectors() {
    assert_eq!(Fnv128::hash(b""), 0x6c62272e07bb014262b821756295c58d);
    assert_eq!(Fnv128::hash(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
    assert_eq!(Fnv128::hash(b"foobar"), 0x343e1662793c64bf6f0d3597ba446f18);
    // Incremental writes equal one write.
    assert_eq!(
        Fnv128::new().write(b"foo").write(b"bar").finish(),
        Fnv128::hash(b"foobar")
    );
}

#[test]
fn entry_key_is_pinned() {
    // Computed by an independent implementation of the documented scheme.
    let src = r#"extern "C" __global__ void k(float* x) { x[0] = 1.0f; }"#;
    let options = [
        "--gpu-architecture=sm_90".to_owned(),
        "-std=c++17".to_owned(),
    ];
    let k = entry_key(src, &options, (13, 0), Target::Cubin("sm_90"));
    assert_eq!(k, 0xb0b741410d9caa0c01b34a056bb6bcb8);
    let path = DiskCache::at("/c").entry_path(k).unwrap();
    assert_eq!(
        path,
        Path::new("/c/b0b741410d9caa0c01b34a056bb6bcb8.kernel")
    );
}

#[test]
fn entry_key_changes_with_every_input() {
    let opts = |o: &[&str]| o.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let base = entry_key("src", &opts(&["-a", "-b"]), (13, 0), Target::Cubin("sm_90"));
    let variants = [
        entry_key(
            "src ",
            &opts(&["-a", "-b"]),
            (13, 0),
            Target::Cubin("sm_90"),
        ),
        entry_key("src", &opts(&["-a"]), (13, 0), Target::Cubin("sm_90")),
        entry_key("src", &opts(&["-a-b"]), (13, 0), Target::Cubin("sm_90")),
        entry_key(
            "src",
            &opts(&["-a", "-b", ""]),
            (13, 0),
            Target::Cubin("sm_90"),
        ),
        entry_key("src", &opts(&["-a", "-b"]), (13, 1), Target::Cubin("sm_90")),
        entry_key("src", &opts(&["-a", "-b"]), (12, 0), Target::Cubin("sm_90")),
        entry_key("src", &opts(&["-a", "-b"]), (13, 0), Target::Cubin("sm_80")),
        entry_key(
            "src",
            &opts(&["-a", "-b"]),
            (13, 0),
            Target::Ptx("compute_90"),
        ),
    ];
    for (i, v) in variants.iter().enumerate() {
        assert_ne!(*v, base, "variant {i}");
    }
}

// ---- disk format ---------------------------------------------------------------------------

fn cubin(seed: u64, len: usize) -> KernelImage {
    KernelImage::new(Target::Cubin("sm_90"), payload(seed, len))
}

proptest! {
    #[test]
    fn format_round_trips(seed in any::<u64>(), len in 0usize..5000, key in any::<u128>(), ptx in any::<bool>()) {
        let image = if ptx {
            KernelImage::new(Target::Ptx("compute_86"), payload(seed, len))
        } else {
            KernelImage::new(Target::Cubin("sm_120"), payload(seed, len))
        };
        let bytes = encode(key, &image);
        prop_assert_eq!(bytes.len(), HEADER_LEN + len);
        prop_assert_eq!(decode(key, &bytes), Ok(image));
    }

    #[test]
    fn any_flipped_byte_is_rejected(seed in any::<u64>(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let bytes = encode(7, &cubin(seed, 300));
        let mut bad = bytes.clone();
        let i = at.index(bad.len());
        bad[i] ^= 1 << bit;
        prop_assert!(decode(7, &bad).is_err(), "flip at {} accepted", i);
    }

    #[test]
    fn any_truncation_is_rejected(seed in any::<u64>(), cut in any::<prop::sample::Index>()) {
        let bytes = encode(7, &cubin(seed, 300));
        let len = cut.index(bytes.len());
        prop_assert_eq!(decode(7, &bytes[..len]), Err(Reject::Truncated));
    }
}

#[test]
fn each_kind_of_damage_has_its_reason() {
    let image = cubin(1, 1000);
    let good = encode(42, &image);
    assert_eq!(decode(42, &good), Ok(image.clone()));

    assert_eq!(decode(42, &good[..HEADER_LEN - 1]), Err(Reject::Truncated));
    assert_eq!(decode(42, &good[..good.len() - 1]), Err(Reject::Truncated));
    assert_eq!(
        decode(42, &[good.clone(), vec![0]].concat()),
        Err(Reject::TrailingBytes)
    );

    let mut bad = good.clone();
    bad[0] = b'X';
    assert_eq!(decode(42, &bad), Err(Reject::BadMagic));

    let mut bad = good.clone();
    bad[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    assert_eq!(decode(42, &bad), Err(Reject::StaleVersion));

    assert_eq!(decode(43, &good), Err(Reject::WrongKey));

    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0x80;
    assert_eq!(decode(42, &bad), Err(Reject::BadChecksum));

    // A header field changed and the checksum recomputed to match: the kind is unknown.
    let mut bad = good.clone();
    bad[12..16].copy_from_slice(&9u32.to_le_bytes());
    let sum = Fnv128::new()
        .write(&bad[8..48])
        .write(&bad[HEADER_LEN..])
        .finish();
    bad[48..64].copy_from_slice(&sum.to_le_bytes());
    assert_eq!(decode(42, &bad), Err(Reject::UnknownTarget));
}

#[test]
fn header_fields_are_where_the_docs_say() {
    let image = KernelImage::new(Target::Ptx("compute_89"), b".version 8.0".to_vec());
    let bytes = encode(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10, &image);
    assert_eq!(&bytes[0..8], b"TTKERNEL");
    assert_eq!(bytes[8..12], FORMAT_VERSION.to_le_bytes());
    assert_eq!(bytes[12..16], 2u32.to_le_bytes()); // PTX
    assert_eq!(bytes[16..20], 89u32.to_le_bytes());
    assert_eq!(bytes[20..24], [0; 4]);
    assert_eq!(
        bytes[24..40],
        0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10u128.to_le_bytes()
    );
    assert_eq!(bytes[40..48], 12u64.to_le_bytes());
    assert_eq!(&bytes[64..], b".version 8.0");
}

// ---- disk cache behaviour ------------------------------------------------------------------

fn compile_counting(
    calls: &AtomicUsize,
    image: KernelImage,
) -> impl FnOnce() -> Result<KernelImage, GpuError> + '_ {
    move || {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(image)
    }
}

#[test]
fn disk_cache_stores_then_hits() {
    let dir = TempDir::new("hits");
    let cache = DiskCache::at(dir.path());
    let calls = AtomicUsize::new(0);
    let image = cubin(2, 777);

    let (got, origin) = cache
        .get_or_compile(5, compile_counting(&calls, image.clone()))
        .unwrap();
    assert_eq!(got, image);
    assert_eq!(
        origin,
        Origin::Compiled {
            replaced: None,
            stored: true
        }
    );
    assert!(cache.entry_path(5).unwrap().is_file());

    let (got, origin) = cache
        .get_or_compile(5, compile_counting(&calls, cubin(3, 1)))
        .unwrap();
    assert_eq!((got, origin), (image, Origin::Disk));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn damaged_entries_are_recompiled_and_overwritten() {
    let dir = TempDir::new("damage");
    let cache = DiskCache::at(dir.path());
    let image = cubin(4, 500);
    cache.store(9, &image).unwrap();
    let path = cache.entry_path(9).unwrap();
    let good = std::fs::read(&path).unwrap();

    let mut flipped = good.clone();
    flipped[HEADER_LEN + 10] ^= 1;
    let other_key = encode(10, &image);
    let damages: [(Vec<u8>, Reject); 4] = [
        (flipped, Reject::BadChecksum),
        (good[..good.len() / 2].to_vec(), Reject::Truncated),
        (
            b"not a kernel cache entry at all, but long enough to hold a header....".to_vec(),
            Reject::BadMagic,
        ),
        (other_key, Reject::WrongKey),
    ];
    for (bytes, reason) in damages {
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(cache.load(9), Lookup::Rejected(reason));
        let calls = AtomicUsize::new(0);
        let (got, origin) = cache
            .get_or_compile(9, compile_counting(&calls, image.clone()))
            .unwrap();
        assert_eq!(got, image);
        assert_eq!(
            origin,
            Origin::Compiled {
                replaced: Some(reason),
                stored: true
            }
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            good,
            "entry rewritten after {reason:?}"
        );
    }
}

#[test]
fn io_errors_degrade_to_compiling() {
    let dir = TempDir::new("io");
    std::fs::create_dir_all(dir.path()).unwrap();
    // The cache "folder" is a regular file: every read and write fails.
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let cache = DiskCache::at(&file);
    let calls = AtomicUsize::new(0);
    for _ in 0..2 {
        let (got, origin) = cache
            .get_or_compile(1, compile_counting(&calls, cubin(5, 64)))
            .unwrap();
        assert_eq!(got, cubin(5, 64));
        assert_eq!(
            origin,
            Origin::Compiled {
                replaced: None,
                stored: false
            }
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(cache.store(1, &cubin(5, 64)).is_err());
}

// ---- stale temporary files ---------------------------------------------------------------

/// The name `DiskCache::store` gives a temporary file of `pid`.
fn temp_name(key: u128, pid: u32, n: u64) -> String {
    format!(".{key:032x}.{pid}.{n}.tmp")
}

/// Creates the file `dir/name`, last modified `idle` ago.
fn file_idle(dir: &Path, name: &str, idle: std::time::Duration) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, b"partial entry").unwrap();
    let when = std::time::SystemTime::now() - idle;
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(when)
        .unwrap();
    path
}

/// The pid of a process that has exited (and been reaped).
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A live process other than this one, killed on drop.
struct LiveChild(std::process::Child);

impl LiveChild {
    fn spawn() -> Self {
        Self(
            std::process::Command::new("sleep")
                .arg("600")
                .spawn()
                .unwrap(),
        )
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for LiveChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A folder the cache trusts (created `0700` by a store), with no temporary file in it.
fn trusted_dir(tag: &str) -> (TempDir, DiskCache) {
    let dir = TempDir::new(tag);
    let cache = DiskCache::at(dir.path());
    cache.store(1, &cubin(1, 64)).unwrap();
    (dir, cache)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[cfg(target_os = "linux")]
#[test]
fn stale_temp_files_are_removed_and_live_ones_kept() {
    use crate::engine_gpu::compile::disk_cache::{DEAD_WRITER_GRACE, STALE_TMP_AGE};
    use std::time::Duration;
    let (dir, cache) = trusted_dir("sweep");
    let d = dir.path();
    let live = LiveChild::spawn();
    let dead = dead_pid();
    let own = std::process::id();
    let minute = DEAD_WRITER_GRACE + Duration::from_secs(5);
    let hours = STALE_TMP_AGE + Duration::from_secs(60);

    let removed = [
        file_idle(d, &temp_name(7, dead, 0), minute), // writer gone, past the grace
        file_idle(d, &temp_name(7, live.pid(), 1), hours), // writer alive, but idle an hour
        file_idle(d, &temp_name(8, own, 2), hours),   // ours, from long ago
    ];
    let kept = [
        file_idle(d, &temp_name(9, dead, 3), Duration::ZERO), // writer gone, within the grace
        file_idle(d, &temp_name(9, live.pid(), 4), minute),   // a live writer's file
        file_idle(d, &temp_name(9, own, 5), minute),          // ours
        // Not temporary files of the cache, however old.
        file_idle(d, &format!("{:032x}.kernel", 3), hours),
        file_idle(d, &format!("{}.bak", temp_name(9, dead, 6)), hours),
        file_idle(d, &format!(".{:031x}.{dead}.7.tmp", 9), hours),
        file_idle(d, &format!(".{:032x}.x{dead}.8.tmp", 9), hours),
        file_idle(d, ".notes.tmp", hours),
    ];
    // A folder and a symlink with a temporary file's name are not removed either.
    std::fs::create_dir(d.join(temp_name(10, dead, 9))).unwrap();
    std::os::unix::fs::symlink(&kept[0], d.join(temp_name(11, dead, 10))).unwrap();

    assert_eq!(cache.sweep_stale_temps(), removed.len());
    for path in &removed {
        assert!(!path.exists(), "{} should be removed", path.display());
    }
    for path in &kept {
        assert!(path.exists(), "{} should be kept", path.display());
    }
    assert!(d.join(temp_name(10, dead, 9)).is_dir());
    assert!(d.join(temp_name(11, dead, 10)).is_symlink());
    // The entry is untouched and still loads.
    assert!(matches!(cache.load(1), Lookup::Hit(_)));
    assert_eq!(cache.sweep_stale_temps(), 0);
}

#[cfg(unix)]
#[test]
fn the_first_lookup_in_a_folder_sweeps_it_once() {
    use crate::engine_gpu::compile::disk_cache::STALE_TMP_AGE;
    use std::os::unix::fs::DirBuilderExt;
    let dir = TempDir::new("first-use");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir.path())
        .unwrap();
    let old = STALE_TMP_AGE + std::time::Duration::from_secs(60);
    let stale = file_idle(dir.path(), &temp_name(1, std::process::id(), 0), old);
    let cache = DiskCache::at(dir.path());
    assert_eq!(cache.load(1), Lookup::Miss);
    assert!(!stale.exists(), "swept on first use");
    // Once per process and folder: a later lookup (from a clone or a new handle) does not
    // scan again; an explicit sweep does.
    let stale = file_idle(dir.path(), &temp_name(2, std::process::id(), 1), old);
    assert_eq!(DiskCache::at(dir.path()).load(2), Lookup::Miss);
    assert!(stale.exists());
    assert_eq!(cache.sweep_stale_temps(), 1);
    assert!(!stale.exists());
}

#[cfg(unix)]
#[test]
fn an_untrusted_folder_is_not_swept() {
    use crate::engine_gpu::compile::disk_cache::STALE_TMP_AGE;
    use std::os::unix::fs::PermissionsExt;
    let (dir, cache) = trusted_dir("untrusted-sweep");
    let old = STALE_TMP_AGE + std::time::Duration::from_secs(60);
    let stale = file_idle(dir.path(), &temp_name(1, std::process::id(), 0), old);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(cache.sweep_stale_temps(), 0);
    assert!(stale.exists());
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(cache.sweep_stale_temps(), 1);
}

/// Sweeps racing stores and each other: every store succeeds (no temporary file in flight is
/// removed), a live process's fresh temporary files survive, and each stale file is removed
/// by exactly one sweeper.
#[cfg(target_os = "linux")]
#[test]
fn concurrent_sweeps_and_stores_remove_only_stale_files() {
    use crate::engine_gpu::compile::disk_cache::{DEAD_WRITER_GRACE, STALE_TMP_AGE};
    let (dir, cache) = trusted_dir("sweep-race");
    let d = dir.path().to_owned();
    let live = LiveChild::spawn();
    let dead = dead_pid();
    let past_grace = DEAD_WRITER_GRACE + std::time::Duration::from_secs(5);
    let old = STALE_TMP_AGE + std::time::Duration::from_secs(60);
    let stale: Vec<PathBuf> = (0..200)
        .map(|i| {
            let (pid, idle) = if i % 2 == 0 {
                (dead, past_grace)
            } else {
                (live.pid(), old)
            };
            file_idle(&d, &temp_name(i, pid, i as u64), idle)
        })
        .collect();
    let live_files: Vec<PathBuf> = (0..50)
        .map(|i| file_idle(&d, &temp_name(i, live.pid(), 1000 + i as u64), past_grace))
        .collect();

    let sweepers = 3;
    let writers = 3;
    let barrier = Arc::new(Barrier::new(sweepers + writers));
    let removed = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for _ in 0..sweepers {
        let (cache, barrier, removed) = (cache.clone(), barrier.clone(), removed.clone());
        handles.push(std::thread::spawn(move || {
            barrier.wait();
            for _ in 0..20 {
                removed.fetch_add(cache.sweep_stale_temps(), Ordering::SeqCst);
            }
        }));
    }
    for w in 0..writers {
        let (d, barrier) = (d.clone(), barrier.clone());
        handles.push(std::thread::spawn(move || {
            // A new handle per writer, as another part of the program would have.
            let cache = DiskCache::at(&d);
            barrier.wait();
            for i in 0..40u64 {
                let key = u128::from(100 + w as u64 * 1000 + i);
                cache.store(key, &cubin(i, 256)).expect("no store fails");
                assert!(matches!(cache.load(key), Lookup::Hit(_)));
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(removed.load(Ordering::SeqCst), stale.len());
    assert!(stale.iter().all(|p| !p.exists()));
    assert!(live_files.iter().all(|p| p.exists()));
    let leftovers: Vec<_> = names_in(&d)
        .into_iter()
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert_eq!(leftovers.len(), live_files.len(), "{leftovers:?}");
}

#[test]
fn compile_errors_pass_through_and_store_nothing() {
    let dir = TempDir::new("err");
    let cache = DiskCache::at(dir.path());
    let err = cache
        .get_or_compile(3, || {
            Err(GpuError::Compile {
                kernel: "k".into(),
                options: vec![],
                log: "boom".into(),
            })
        })
        .unwrap_err();
    assert!(matches!(err, GpuError::Compile { ref log, .. } if log == "boom"));
    assert_eq!(cache.load(3), Lookup::Miss);
}

#[test]
fn disabled_cache_always_compiles() {
    let cache = DiskCache::disabled();
    assert_eq!(cache.dir(), None);
    let calls = AtomicUsize::new(0);
    for _ in 0..3 {
        let (_, origin) = cache
            .get_or_compile(1, compile_counting(&calls, cubin(6, 8)))
            .unwrap();
        assert_eq!(
            origin,
            Origin::Compiled {
                replaced: None,
                stored: false
            }
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

// ---- trust: nothing another user could write is loaded -------------------------------------

#[cfg(unix)]
mod trust {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn files_in(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    /// A cache whose folder was made and filled with entry `key` while trusted.
    fn filled(tag: &str, key: u128, image: &KernelImage) -> (TempDir, DiskCache) {
        let dir = TempDir::new(tag);
        let cache = DiskCache::at(dir.path());
        cache.store(key, image).unwrap();
        assert_eq!(cache.load(key), Lookup::Hit(image.clone()));
        (dir, cache)
    }

    #[test]
    fn created_folders_are_0700_and_entries_0600() {
        let (dir, cache) = filled("private", 1, &cubin(1, 100));
        assert_eq!(mode(dir.path()) & 0o077, 0, "{:o}", mode(dir.path()));
        assert_eq!(mode(&cache.entry_path(1).unwrap()), 0o600);
        // Parents the crate creates are private too.
        let nested = DiskCache::at(dir.path().join("a/b"));
        nested.store(2, &cubin(2, 10)).unwrap();
        assert_eq!(mode(&dir.path().join("a")) & 0o077, 0);
        assert_eq!(cache.warning(), None);
        assert_eq!(cache.bypasses(), 0);
    }

    #[test]
    fn a_correct_entry_is_used() {
        let image = cubin(3, 400);
        let (_dir, cache) = filled("correct", 3, &image);
        let calls = AtomicUsize::new(0);
        let got = cache
            .get_or_compile(3, compile_counting(&calls, cubin(4, 1)))
            .unwrap();
        assert_eq!(got, (image, Origin::Disk));
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_group_writable_folder_is_bypassed_and_reported_once() {
        let image = cubin(5, 300);
        let (dir, cache) = filled("groupw", 5, &image);
        chmod(dir.path(), 0o770);
        let want = Bypass {
            path: dir.path().to_owned(),
            reason: Distrust::Writable { mode: 0o770 },
        };
        // The valid entry inside is not read: another user could have planted it.
        assert_eq!(cache.load(5), Lookup::Bypassed(want.clone()));
        let calls = AtomicUsize::new(0);
        for key in [5, 6] {
            let (got, origin) = cache
                .get_or_compile(key, compile_counting(&calls, cubin(7, 50)))
                .unwrap();
            assert_eq!(got, cubin(7, 50));
            let compiled = Origin::Compiled {
                replaced: None,
                stored: false,
            };
            assert_eq!(origin, compiled);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        // Nothing was written there either.
        assert_eq!(files_in(dir.path()), 1);
        let err = cache.store(8, &image).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(
            err.to_string().contains("writable by group or others"),
            "{err}"
        );
        // One warning, the first; every bypass counted.
        assert_eq!(cache.warning(), Some(want));
        assert_eq!(cache.bypasses(), 4);
        // Fixed permissions: trusted again.
        chmod(dir.path(), 0o700);
        assert_eq!(cache.load(5), Lookup::Hit(image));
    }

    #[test]
    fn a_foreign_owned_folder_is_bypassed() {
        let dir = TempDir::new("foreign");
        std::fs::create_dir_all(dir.path()).unwrap();
        chmod(dir.path(), 0o700);
        let me = std::fs::metadata(dir.path()).unwrap().uid();
        // As root, give the folder away; otherwise `/` is root's.
        let folder = if me == 0 {
            std::os::unix::fs::chown(dir.path(), Some(65534), None).unwrap();
            dir.path().to_owned()
        } else {
            PathBuf::from("/")
        };
        let owner = std::fs::metadata(&folder).unwrap().uid();
        let cache = DiskCache::at(&folder);
        assert_eq!(
            cache.load(1),
            Lookup::Bypassed(Bypass {
                path: folder,
                reason: Distrust::ForeignOwner { owner, euid: me },
            })
        );
    }

    #[test]
    fn a_symlinked_folder_is_bypassed() {
        let (dir, _) = filled("linkdir", 1, &cubin(1, 10));
        let link = PathBuf::from(format!("{}-link", dir.path().display()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        let cache = DiskCache::at(&link);
        let got = cache.load(1);
        let _ = std::fs::remove_file(&link);
        assert_eq!(
            got,
            Lookup::Bypassed(Bypass {
                path: link,
                reason: Distrust::NotPlain
            })
        );
    }

    #[test]
    fn untrusted_or_tampered_entries_are_rejected_and_recompiled() {
        let image = cubin(9, 600);
        let (dir, cache) = filled("entries", 9, &image);
        let path = cache.entry_path(9).unwrap();
        let good = std::fs::read(&path).unwrap();

        // A writable entry, a symlink to a valid entry, and a tampered entry owned by us.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, &good).unwrap();
        let mut tampered = good.clone();
        tampered[HEADER_LEN + 1] ^= 0x80;
        type Plant = Box<dyn Fn(&Path)>;
        let cases: Vec<(Plant, Reject)> = vec![
            (
                Box::new(|p| chmod(p, 0o666)),
                Reject::Untrusted(Distrust::Writable { mode: 0o666 }),
            ),
            (
                Box::new(move |p| {
                    std::fs::remove_file(p).unwrap();
                    std::os::unix::fs::symlink(&elsewhere, p).unwrap();
                }),
                Reject::Untrusted(Distrust::NotPlain),
            ),
            (
                Box::new(move |p| std::fs::write(p, &tampered).unwrap()),
                Reject::BadChecksum,
            ),
        ];
        for (plant, reason) in cases {
            plant(&path);
            assert_eq!(cache.load(9), Lookup::Rejected(reason));
            let calls = AtomicUsize::new(0);
            let (got, origin) = cache
                .get_or_compile(9, compile_counting(&calls, image.clone()))
                .unwrap();
            assert_eq!(got, image);
            let replaced = Origin::Compiled {
                replaced: Some(reason),
                stored: true,
            };
            assert_eq!(origin, replaced);
            assert_eq!(calls.load(Ordering::SeqCst), 1);
            // Replaced by a private, valid entry that is then used.
            assert_eq!(mode(&path), 0o600, "{reason:?}");
            assert_eq!(std::fs::read(&path).unwrap(), good, "{reason:?}");
            assert_eq!(cache.load(9), Lookup::Hit(image.clone()));
        }
        assert_eq!(cache.warning(), None, "entries are rejected, not bypassed");
    }

    #[test]
    fn kernel_cache_reports_the_bypass() {
        let dir = TempDir::new("stats");
        std::fs::create_dir_all(dir.path()).unwrap();
        chmod(dir.path(), 0o757);
        let cache = KernelCache::new(DiskCache::at(dir.path()));
        assert_eq!(cache.disk_warning(), None);
        assert!(matches!(cache.disk().load(1), Lookup::Bypassed(_)));
        assert_eq!(cache.stats().disk_bypasses, 1);
        let warning = cache.disk_warning().unwrap();
        assert_eq!(warning.reason, Distrust::Writable { mode: 0o757 });
        assert!(warning.to_string().contains("bypassed"), "{warning}");
    }
}

#[test]
fn cache_folder_settings() {
    let os = |s: &'static str| Some(OsStr::new(s));
    let kernels = |base: &str| Some(Path::new(base).join("typestate-tensor/kernels"));
    // Off switches.
    assert_eq!(resolve_dir(os("off"), os("/x"), os("/h")), None);
    assert_eq!(resolve_dir(os("0"), os("/x"), os("/h")), None);
    // Any other value is the folder itself.
    assert_eq!(
        resolve_dir(os("/tmp/k"), os("/x"), os("/h")),
        Some(PathBuf::from("/tmp/k"))
    );
    assert_eq!(
        resolve_dir(os("rel/dir"), None, None),
        Some(PathBuf::from("rel/dir"))
    );
    // Unset or empty: XDG_CACHE_HOME (absolute only), else HOME/.cache, else none.
    assert_eq!(resolve_dir(None, os("/x"), os("/h")), kernels("/x"));
    assert_eq!(resolve_dir(os(""), os("/x"), os("/h")), kernels("/x"));
    assert_eq!(
        resolve_dir(None, os("relative"), os("/h")),
        kernels("/h/.cache")
    );
    assert_eq!(resolve_dir(None, os(""), os("/h")), kernels("/h/.cache"));
    assert_eq!(resolve_dir(None, None, os("/h")), kernels("/h/.cache"));
    assert_eq!(resolve_dir(None, None, None), None);
    assert_eq!(resolve_dir(None, None, os("")), None);
}

// ---- in-process cache ----------------------------------------------------------------------

#[test]
fn racing_threads_compile_each_key_once() {
    let cache = KernelCache::new(DiskCache::disabled());
    let calls = AtomicUsize::new(0);
    let threads = 8;
    let names = ["a", "b", "c", "d"];
    let barrier = Barrier::new(threads);
    let results: Vec<(&str, Arc<KernelImage>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (cache, calls, barrier) = (&cache, &calls, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    // Every thread asks for all four keys, starting at a different one.
                    (0..names.len())
                        .map(|i| {
                            let name = names[(i + t) % names.len()];
                            let image = cache
                                .image_with(&key(name), || {
                                    calls.fetch_add(1, Ordering::SeqCst);
                                    // Hold the build open so the other threads pile up.
                                    std::thread::sleep(std::time::Duration::from_millis(20));
                                    Ok(cubin(u64::from(name.as_bytes()[0]), 100))
                                })
                                .unwrap();
                            (name, image)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(calls.load(Ordering::SeqCst), names.len());
    assert_eq!(cache.stats().images_built, names.len() as u64);
    assert_eq!(cache.image_entries(), names.len());
    // All threads got the one Arc built for each key, holding that key's image.
    for name in names {
        let same: Vec<_> = results.iter().filter(|(n, _)| *n == name).collect();
        assert_eq!(same.len(), threads);
        for (_, image) in &same {
            assert!(Arc::ptr_eq(image, &same[0].1), "key {name}");
        }
        assert_eq!(*same[0].1, cubin(u64::from(name.as_bytes()[0]), 100));
    }
}

#[test]
fn failed_and_panicking_builds_are_retried() {
    let cache = KernelCache::new(DiskCache::disabled());
    let k = key("retry");
    let err = cache
        .image_with(&k, || {
            Err(GpuError::Compile {
                kernel: "k".into(),
                options: vec![],
                log: "first try fails".into(),
            })
        })
        .unwrap_err();
    assert!(matches!(err, GpuError::Compile { .. }));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = cache.image_with(&k, || panic!("build panics"));
    }));
    assert!(panicked.is_err());
    let image = cache.image_with(&k, || Ok(cubin(8, 16))).unwrap();
    assert_eq!(*image, cubin(8, 16));
    // Now cached: a failing build is not even called.
    let again = cache.image_with(&k, || unreachable!("cached")).unwrap();
    assert!(Arc::ptr_eq(&image, &again));
    assert_eq!(cache.stats().images_built, 1);
}

#[test]
fn target_choice() {
    let supported = [75, 80, 86, 87, 89, 90, 100, 120];
    assert_eq!(
        Target::choose(Arch::new(9, 0), &supported),
        Some(Target::Cubin("sm_90"))
    );
    assert_eq!(
        Target::choose(Arch::new(8, 6), &supported),
        Some(Target::Cubin("sm_86"))
    );
    // Newer than this NVRTC knows: PTX of the newest older architecture.
    assert_eq!(
        Target::choose(Arch::new(12, 1), &supported),
        Some(Target::Ptx("compute_120"))
    );
    assert_eq!(
        Target::choose(Arch::new(10, 3), &supported),
        Some(Target::Ptx("compute_100"))
    );
    // Older than every supported architecture: nothing.
    assert_eq!(Target::choose(Arch::new(7, 0), &supported), None);
    assert_eq!(Arch::new(9, 0).real_name(), Some("sm_90"));
    assert_eq!(Arch::from_number(121), Arch::new(12, 1));
    let args = NvrtcOptions::default().args(Target::Cubin("sm_90"));
    assert_eq!(args, ["--gpu-architecture=sm_90", "-std=c++17"]);
    let fast = NvrtcOptions {
        fast_math: true,
        extra: &["-DVEC=4"],
    }
    .args(Target::Ptx("compute_80"));
    assert_eq!(
        fast,
        [
            "--gpu-architecture=compute_80",
            "-std=c++17",
            "--use_fast_math",
            "-DVEC=4"
        ]
    );
}

// ---- with NVRTC (skipped without it) -------------------------------------------------------

fn nvrtc_or_skip(test: &str) -> bool {
    if nvrtc::available() {
        true
    } else {
        println!("skipping {test}: NVRTC (libnvrtc) not found");
        false
    }
}

/// Kernels over the crate's CUDA headers, instantiated for both index widths.
fn layout_kernels_source() -> String {
    use crate::engine_gpu::int_divider::INT_DIVIDER_CUH;
    use crate::engine_gpu::offset_calculator::OFFSET_CALCULATOR_CUH;
    format!(
        "{INT_DIVIDER_CUH}\n{OFFSET_CALCULATOR_CUH}\n{}",
        r#"
template <typename index_t>
__device__ void divmods(const IntDivider<index_t>* divs, const index_t* ns, index_t* out, unsigned int count) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    DivMod<index_t> qr = divs[i].divmod(ns[i]);
    out[2 * i] = qr.div;
    out[2 * i + 1] = qr.mod;
  }
}
extern "C" __global__ void divmod32(const IntDivider<unsigned int>* d, const unsigned int* n, unsigned int* o, unsigned int c) { divmods(d, n, o, c); }
extern "C" __global__ void divmod64(const IntDivider<unsigned long long>* d, const unsigned long long* n, unsigned long long* o, unsigned int c) { divmods(d, n, o, c); }

template <int NDIMS, int NARGS, typename index_t, typename offset_t>
__device__ void offsets(const OffsetCalculator<NDIMS, NARGS, index_t, offset_t>& calc, index_t numel, long long* out) {
  for (index_t i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += gridDim.x * blockDim.x) {
    offset_t o[NARGS];
    calc.get(i, o);
    for (int a = 0; a < NARGS; ++a) out[(unsigned long long)i * NARGS + a] = o[a];
  }
}
extern "C" __global__ void offsets32(OffsetCalculator<3, 3, unsigned int, int> calc, unsigned int numel, long long* out) { offsets(calc, numel, out); }
extern "C" __global__ void offsets64(OffsetCalculator<4, 2, unsigned long long, long long> calc, unsigned long long numel, long long* out) { offsets(calc, numel, out); }
"#
    )
}

#[test]
fn headers_compile_under_nvrtc_without_includes() {
    if !nvrtc_or_skip("headers_compile_under_nvrtc_without_includes") {
        return;
    }
    let supported = nvrtc::supported_archs().unwrap();
    let newest = *supported.iter().max().unwrap();
    let cubin_target = Target::choose(Arch::from_number(newest), &supported).unwrap();
    let src = layout_kernels_source();
    let image = nvrtc::compile("layout", &src, cubin_target, &NvrtcOptions::default()).unwrap();
    assert!(image.is_cubin());
    assert_eq!(&image.bytes()[..4], b"\x7fELF");
    let ptx_name = Arch::from_number(newest).virtual_name().unwrap();
    let ptx = nvrtc::compile(
        "layout",
        &src,
        Target::Ptx(ptx_name),
        &NvrtcOptions::default(),
    )
    .unwrap();
    let text = std::str::from_utf8(ptx.bytes()).unwrap();
    for entry in ["divmod32", "divmod64", "offsets32", "offsets64"] {
        assert!(
            text.contains(&format!(".entry {entry}(")),
            "{entry} missing from PTX"
        );
    }
    // By-value parameter sizes match the Rust byte images (3 dims x (12 + 3*4), 4 x (24 + 2*8)).
    assert!(text.contains("offsets32_param_0[72]"), "{text}");
    assert!(text.contains("offsets64_param_0[160]"));
}

#[test]
fn compile_errors_carry_the_log_and_options() {
    if !nvrtc_or_skip("compile_errors_carry_the_log_and_options") {
        return;
    }
    let supported = nvrtc::supported_archs().unwrap();
    let target = Target::choose(
        Arch::from_number(*supported.iter().max().unwrap()),
        &supported,
    )
    .unwrap();
    let err = nvrtc::compile(
        "broken",
        "extern \"C\" __global__ void broken() { undeclared_name = 1; }",
        target,
        &NvrtcOptions::default(),
    )
    .unwrap_err();
    match err {
        GpuError::Compile {
            kernel,
            options,
            log,
        } => {
            assert_eq!(kernel, "broken");
            assert_eq!(options, NvrtcOptions::default().args(target));
            assert!(log.contains("undeclared_name"), "{log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn image_cache_goes_through_disk() {
    if !nvrtc_or_skip("image_cache_goes_through_disk") {
        return;
    }
    let dir = TempDir::new("nvrtc");
    let supported = nvrtc::supported_archs().unwrap();
    let mut k = key("tiny");
    k.arch = Arch::from_number(*supported.iter().max().unwrap());
    let src = || r#"extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }"#.to_owned();

    let first = KernelCache::new(DiskCache::at(dir.path()));
    let image = first.image(&k, src).unwrap();
    let again = first
        .image(&k, || unreachable!("cached in memory"))
        .unwrap();
    assert!(Arc::ptr_eq(&image, &again));
    assert_eq!(
        (first.stats().nvrtc_compiles, first.stats().disk_hits),
        (1, 0)
    );

    // A new process (a new cache) finds it on disk.
    let second = KernelCache::new(DiskCache::at(dir.path()));
    let from_disk = second.image(&k, src).unwrap();
    assert_eq!(*from_disk, *image);
    assert_eq!(
        (second.stats().nvrtc_compiles, second.stats().disk_hits),
        (0, 1)
    );
}

// ---- with a GPU (skipped without one) ------------------------------------------------------

fn gpu_or_skip(test: &str) -> Option<Arc<cudarc::driver::CudaContext>> {
    // SAFETY: only tries to dlopen libcuda; cudarc would panic on first use without it.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        println!("skipping {test}: no CUDA driver");
        return None;
    }
    if !nvrtc::available() {
        println!("skipping {test}: NVRTC (libnvrtc) not found");
        return None;
    }
    match cudarc::driver::CudaContext::new(0) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            println!("skipping {test}: no usable GPU ({e:?})");
            None
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn gpu_compile_load_launch() {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    let Some(ctx) = gpu_or_skip("gpu_compile_load_launch") else {
        return;
    };
    let stream = ctx.default_stream();
    let arch = crate::engine_gpu::compile::device_arch(&ctx).unwrap();
    let mut k = key("axpb");
    k.entry = "axpb".into();
    k.arch = arch;
    let src = r#"
extern "C" __global__ void axpb(float* out, const float* x, float a, float b, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __fmaf_rn(a, x[i], b);  // one rounding, as f32::mul_add
}"#;
    let cache = KernelCache::new(DiskCache::disabled());
    let f = cache.function(&ctx, &k, || src.to_owned()).unwrap();
    let f2 = cache.function(&ctx, &k, || unreachable!("cached")).unwrap();
    assert!(Arc::ptr_eq(&f, &f2));
    assert_eq!(cache.stats().module_loads, 1);

    let n = 1000u32;
    let x: Vec<f32> = payload(11, n as usize)
        .iter()
        .map(|&b| f32::from(b) / 7.0 - 9.0)
        .collect();
    let x_dev = stream.clone_htod(&x).unwrap();
    let mut out = stream.alloc_zeros::<f32>(n as usize).unwrap();
    let (a, b) = (1.5f32, -0.25f32);
    let mut launch = stream.launch_builder(&f);
    launch.arg(&mut out).arg(&x_dev).arg(&a).arg(&b).arg(&n);
    // SAFETY: the argument list matches the kernel's signature; `out` and `x` hold n floats
    // and the kernel guards i < n.
    unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }.unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    for (i, (&g, &xi)) in got.iter().zip(&x).enumerate() {
        assert_eq!(g, a.mul_add(xi, b), "element {i}");
    }
}

/// The CUDA `IntDivider` and `OffsetCalculator`, fed the Rust byte images (in device memory
/// for dividers, by value for calculators), give the Rust results.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn gpu_layouts_and_math_match_rust() {
    use crate::engine_gpu::int_divider::IntDivider;
    use crate::engine_gpu::offset_calculator::OffsetCalculator;
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    let Some(ctx) = gpu_or_skip("gpu_layouts_and_math_match_rust") else {
        return;
    };
    let stream = ctx.default_stream();
    let arch = crate::engine_gpu::compile::device_arch(&ctx).unwrap();
    let cache = KernelCache::new(DiskCache::disabled());
    let function = |entry: &'static str| {
        let mut k = key("layout");
        k.entry = entry.into();
        k.arch = arch;
        cache.function(&ctx, &k, layout_kernels_source).unwrap()
    };
    let rand = payload(99, 4096);
    let word = |i: usize| u64::from_le_bytes(rand[8 * i..8 * i + 8].try_into().unwrap());

    // 32-bit divmod: edge divisors x edge dividends, plus random pairs.
    let mut pairs32: Vec<(u32, u32)> = Vec::new();
    for d in [
        1u32,
        2,
        3,
        7,
        641,
        (1 << 31) - 1,
        1 << 31,
        (1 << 31) + 1,
        u32::MAX - 1,
        u32::MAX,
    ] {
        for n in [
            0,
            1,
            d - 1,
            d,
            d.wrapping_add(1),
            u32::MAX / d * d,
            u32::MAX - 1,
            u32::MAX,
        ] {
            pairs32.push((d, n));
        }
    }
    pairs32.extend((0..200).map(|i| {
        (
            ((word(i) >> (word(i) % 32)) as u32).max(1),
            word(i + 200) as u32,
        )
    }));
    // 64-bit divmod likewise.
    let mut pairs64: Vec<(u64, u64)> = Vec::new();
    for d in [
        1u64,
        2,
        3,
        7,
        u64::from(u32::MAX),
        1 << 32,
        (1 << 63) - 1,
        1 << 63,
        (1 << 63) + 1,
        u64::MAX,
    ] {
        for n in [
            0,
            1,
            d - 1,
            d,
            d.wrapping_add(1),
            u64::MAX / d * d,
            u64::MAX - 1,
            u64::MAX,
        ] {
            pairs64.push((d, n));
        }
    }
    pairs64.extend((0..200).map(|i| ((word(i) >> (word(i + 100) % 64)).max(1), word(i + 300))));

    macro_rules! check_divmod {
        ($pairs:expr, $t:ty, $entry:literal) => {{
            let pairs = $pairs;
            let count = u32::try_from(pairs.len()).unwrap();
            let divs: Vec<u8> = pairs
                .iter()
                .flat_map(|&(d, _)| IntDivider::<$t>::new(d).unwrap().kernel_param_bytes())
                .collect();
            let ns: Vec<$t> = pairs.iter().map(|&(_, n)| n).collect();
            let divs_dev = stream.clone_htod(&divs).unwrap();
            let ns_dev = stream.clone_htod(&ns).unwrap();
            let mut out = stream.alloc_zeros::<$t>(2 * pairs.len()).unwrap();
            let f = function($entry);
            let mut launch = stream.launch_builder(&f);
            launch.arg(&divs_dev).arg(&ns_dev).arg(&mut out).arg(&count);
            // SAFETY: arguments match the kernel; each buffer holds `count` entries (divs:
            // `count` IntDivider images, out: 2 * count) and the kernel guards i < count.
            unsafe { launch.launch(LaunchConfig::for_num_elems(count)) }.unwrap();
            let got = stream.clone_dtoh(&out).unwrap();
            for (i, &(d, n)) in pairs.iter().enumerate() {
                assert_eq!(
                    (got[2 * i], got[2 * i + 1]),
                    (n / d, n % d),
                    "{} divmod {}",
                    n,
                    d
                );
            }
        }};
    }
    check_divmod!(&pairs32, u32, "divmod32");
    check_divmod!(&pairs64, u64, "divmod64");

    // Offsets, the calculator passed by value as its byte image.
    let calc32 =
        OffsetCalculator::<u32, 3>::new(&[5, 7, 9], [&[63, 9, 1], &[-1, 0, 35], &[0, -200, 3]])
            .unwrap();
    let bytes = calc32.kernel_param_bytes();
    let param32: [u32; 18] =
        std::array::from_fn(|i| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap()));
    let calc64 = OffsetCalculator::<u64, 2>::new(
        &[3, 4, 5, 6],
        [&[-(1 << 40), 30, -6, 1], &[1, 0, 1 << 35, -7]],
    )
    .unwrap();
    let bytes = calc64.kernel_param_bytes();
    let param64: [u64; 20] =
        std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()));
    assert_eq!(
        (calc32.kernel_param_size(), calc64.kernel_param_size()),
        (72, 160)
    );

    let numel32 = calc32.numel();
    let mut out = stream.alloc_zeros::<i64>(numel32 as usize * 3).unwrap();
    let f = function("offsets32");
    let mut launch = stream.launch_builder(&f);
    launch.arg(&param32).arg(&numel32).arg(&mut out);
    // SAFETY: `param32` is the exact image of OffsetCalculator<3, 3, unsigned int, int>
    // (72 bytes, checked above); out holds numel * 3 values; the kernel loops i < numel.
    unsafe { launch.launch(LaunchConfig::for_num_elems(numel32)) }.unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    for i in 0..numel32 {
        let want = calc32.offsets(i).unwrap();
        assert_eq!(
            &got[3 * i as usize..3 * i as usize + 3],
            &want,
            "offsets32 at {i}"
        );
    }

    let numel64 = calc64.numel();
    let mut out = stream.alloc_zeros::<i64>(numel64 as usize * 2).unwrap();
    let f = function("offsets64");
    let mut launch = stream.launch_builder(&f);
    launch.arg(&param64).arg(&numel64).arg(&mut out);
    // SAFETY: `param64` is the exact image of OffsetCalculator<4, 2, unsigned long long,
    // long long> (160 bytes); out holds numel * 2 values; the kernel loops i < numel.
    unsafe { launch.launch(LaunchConfig::for_num_elems(u32::try_from(numel64).unwrap())) }.unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    for i in 0..numel64 {
        let want = calc64.offsets(i).unwrap();
        assert_eq!(
            &got[2 * i as usize..2 * i as usize + 2],
            &want,
            "offsets64 at {i}"
        );
    }
}

/// Two kernels alike in every named field (op, entry, types, rank, widths, target, options)
/// but built from different source text never share an image, in the process cache (its key
/// holds a hash of the whole source) nor on disk (the entry key hashes the source itself).
#[test]
fn keys_of_different_sources_never_share_an_image() {
    let cache = KernelCache::new(DiskCache::disabled());
    let same_fields = |source: &str| KernelKey {
        source_hash: KernelKey::hash_source(source),
        ..key("gt")
    };
    let real = same_fields("extern \"C\" __global__ void k() { /* a > b */ }");
    let planted = same_fields("extern \"C\" __global__ void k() { /* 7 */ }");
    assert_ne!(real, planted);
    let first = cache.image_with(&real, || Ok(cubin(1, 64))).unwrap();
    let mut built = false;
    let second = cache
        .image_with(&planted, || {
            built = true;
            Ok(cubin(2, 64))
        })
        .unwrap();
    assert!(built, "a key of other source reused a cached image");
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!(
        *cache.image_with(&real, || unreachable!("cached")).unwrap(),
        cubin(1, 64)
    );
    // The disk layer's key is computed from the source text itself.
    let target = Target::choose(Arch::new(9, 0), &[90]).unwrap();
    let options = vec!["--fmad=false".to_owned()];
    let disk = |source: &str| entry_key(source, &options, (13, 0), target);
    assert_ne!(disk("a > b"), disk("7"));
}
