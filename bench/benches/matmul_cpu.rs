//! CPU matrix multiply (issue 27) against ndarray's `dot`, single-threaded, in one run.
//!
//! Cases (`f32` and `f64` unless said):
//! - `square/N`: `[N, N]·[N, N]`, N in 64, 256, 512, 1024;
//! - `lhs_t/512`: `a.t()·b` with `a` stored `[512, 512]` row-major (a column-major operand);
//! - `tall/4096x256x256`: `[4096, 256]·[256, 256]` (a linear layer over a batch).
//!
//! Contestants, each on the same data:
//! - `ndarray_dot`: `a.dot(&b)` (ndarray calls matrixmultiply, one thread);
//! - `mm_1t`: matrixmultiply's `sgemm` / `dgemm` called directly (one thread);
//! - `gemm_1t`: the `gemm` crate (candle's), `Parallelism::None`;
//! - `gemm_mt`: the `gemm` crate, `Parallelism::Rayon(0)` (every core);
//! - `ours_1t` / `ours_mt`: `Tensor::matmul` (the `gemm` crate underneath) with the engine's
//!   thread count set to 1 / left at its default (every core).
//!
//! Every contestant but `ndarray_dot` writes into a preallocated output (`dot` allocates, which
//! is noise at these sizes). Throughput is reported in FLOP (2·m·n·k).
//! Run: `cargo bench -p typestate-tensor-bench --bench matmul_cpu -- --warm-up-time 1 --measurement-time 3`.

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use criterion::measurement::WallTime;
use criterion::BenchmarkGroup;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::{Array2, ArrayView2, LinalgScalar};
use typestate_tensor::tensor::matmul::MatmulBackend;
use typestate_tensor::{Cpu, Numeric, Tensor};

fn data<T: From<f32>>(n: usize, seed: u32) -> Vec<T> {
    (0..n)
        .map(|i| {
            let v = ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32;
            T::from(v / 250.0 - 2.0)
        })
        .collect()
}

/// The element types benched: ndarray's scalar, `gemm`'s and matrixmultiply's entry points.
trait Elem: LinalgScalar + From<f32> + Send + Sync + 'static {
    const NAME: &'static str;
    /// # Safety
    /// As `matrixmultiply::sgemm` (pointers valid for the strided `m×k`, `k×n`, `m×n`).
    #[allow(clippy::too_many_arguments)]
    unsafe fn mm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        c: *mut Self,
        rsc: isize,
        csc: isize,
    );
}

impl Elem for f32 {
    const NAME: &'static str = "f32";
    unsafe fn mm(
        m: usize,
        k: usize,
        n: usize,
        a: *const f32,
        rsa: isize,
        csa: isize,
        b: *const f32,
        rsb: isize,
        csb: isize,
        c: *mut f32,
        rsc: isize,
        csc: isize,
    ) {
        // SAFETY: forwarded from the caller.
        unsafe { matrixmultiply::sgemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, rsc, csc) }
    }
}

impl Elem for f64 {
    const NAME: &'static str = "f64";
    unsafe fn mm(
        m: usize,
        k: usize,
        n: usize,
        a: *const f64,
        rsa: isize,
        csa: isize,
        b: *const f64,
        rsb: isize,
        csb: isize,
        c: *mut f64,
        rsc: isize,
        csc: isize,
    ) {
        // SAFETY: forwarded from the caller.
        unsafe { matrixmultiply::dgemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, rsc, csc) }
    }
}

/// `c = a·b` through the `gemm` crate, strides as ndarray reports them.
fn gemm_into<T: Elem>(
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    c: &mut Array2<T>,
    par: gemm::Parallelism,
) {
    let (m, k) = a.dim();
    let n = b.dim().1;
    let (sa, sb, sc) = (a.strides(), b.strides(), c.strides().to_vec());
    // SAFETY: the three views are valid for their shapes and strides; `c` is exclusively
    // borrowed and does not alias `a` or `b`; `T` is f32 or f64, which `gemm` takes.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            sc[1],
            sc[0],
            false,
            a.as_ptr(),
            sa[1],
            sa[0],
            b.as_ptr(),
            sb[1],
            sb[0],
            T::zero(),
            T::one(),
            false,
            false,
            false,
            par,
        )
    }
}

fn mm_into<T: Elem>(a: ArrayView2<'_, T>, b: ArrayView2<'_, T>, c: &mut Array2<T>) {
    let (m, k) = a.dim();
    let n = b.dim().1;
    let (sa, sb, sc) = (a.strides(), b.strides(), c.strides().to_vec());
    // SAFETY: as in `gemm_into`.
    unsafe {
        T::mm(
            m,
            k,
            n,
            a.as_ptr(),
            sa[0],
            sa[1],
            b.as_ptr(),
            sb[0],
            sb[1],
            c.as_mut_ptr(),
            sc[0],
            sc[1],
        )
    }
}

fn case<T: Elem + Numeric>(
    c: &mut Criterion,
    name: &str,
    (m, k, n): (usize, usize, usize),
    lhs_t: bool,
) where
    Cpu: MatmulBackend<T>,
{
    let a_store = if lhs_t {
        Array2::from_shape_vec((k, m), data::<T>(m * k, 1)).expect("shape")
    } else {
        Array2::from_shape_vec((m, k), data::<T>(m * k, 1)).expect("shape")
    };
    let a = if lhs_t { a_store.t() } else { a_store.view() };
    let b = Array2::from_shape_vec((k, n), data::<T>(k * n, 2)).expect("shape");
    let mut out = Array2::<T>::zeros((m, n));
    let mut g = c.benchmark_group(format!("{}/{name}", <T as Elem>::NAME));
    g.sample_size(10)
        .throughput(Throughput::Elements(2 * (m * n * k) as u64));
    g.bench_function(BenchmarkId::from_parameter("ndarray_dot"), |bch| {
        bch.iter(|| black_box(a.dot(&b)))
    });
    g.bench_function(BenchmarkId::from_parameter("mm_1t"), |bch| {
        bch.iter(|| mm_into(a, b.view(), black_box(&mut out)))
    });
    g.bench_function(BenchmarkId::from_parameter("gemm_1t"), |bch| {
        bch.iter(|| gemm_into(a, b.view(), black_box(&mut out), gemm::Parallelism::None))
    });
    g.bench_function(BenchmarkId::from_parameter("gemm_mt"), |bch| {
        bch.iter(|| {
            gemm_into(
                a,
                b.view(),
                black_box(&mut out),
                gemm::Parallelism::Rayon(0),
            )
        })
    });
    ours(&mut g, (m, k, n), lhs_t);
    g.finish();
}

/// `Tensor::matmul` on the same data and layout (the transposed case is a `.t()` view, not a
/// copy), allocating its result as `dot` does; `ours_1t` in a one-thread rayon pool.
fn ours<T: Elem + Numeric>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    (m, k, n): (usize, usize, usize),
    lhs_t: bool,
) where
    Cpu: MatmulBackend<T>,
{
    let a_store = if lhs_t {
        Tensor::from_vec(&[k, m], data::<T>(m * k, 1)).expect("shape")
    } else {
        Tensor::from_vec(&[m, k], data::<T>(m * k, 1)).expect("shape")
    };
    let a = if lhs_t { a_store.t() } else { a_store.view() };
    let b = Tensor::from_vec(&[k, n], data::<T>(k * n, 2)).expect("shape");
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a thread");
    // The whole timed loop inside the pool: one `install` per sample, not per call.
    g.bench_function(BenchmarkId::from_parameter("ours_1t"), |bch| {
        bch.iter_custom(|iters| {
            one.install(|| {
                let start = std::time::Instant::now();
                for _ in 0..iters {
                    black_box(a.matmul(&b).expect("shapes fit"));
                }
                start.elapsed()
            })
        })
    });
    g.bench_function(BenchmarkId::from_parameter("ours_mt"), |bch| {
        bch.iter(|| black_box(a.matmul(&b).expect("shapes fit")))
    });
}

fn bench(c: &mut Criterion) {
    for n in [64usize, 256, 512, 1024] {
        case::<f32>(c, &format!("square/{n}"), (n, n, n), false);
        case::<f64>(c, &format!("square/{n}"), (n, n, n), false);
    }
    case::<f32>(c, "lhs_t/512", (512, 512, 512), true);
    case::<f64>(c, "lhs_t/512", (512, 512, 512), true);
    case::<f32>(c, "tall/4096x256x256", (4096, 256, 256), false);
    case::<f64>(c, "tall/4096x256x256", (4096, 256, 256), false);
}

criterion_group!(benches, bench);
criterion_main!(benches);
