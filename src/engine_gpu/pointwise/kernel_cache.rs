//! Pointwise kernels by [`KernelSpec`]: a small front over the crate's
//! [`KernelCache`].
//!
//! The front exists for the launch path's host time: a [`KernelSpec`] is `Copy` and hashes a
//! few words, where a [`KernelKey`] owns strings and a vector and includes a hash of the whole
//! source. A hit costs one uncontended lock and one small hash. A miss builds the key and the
//! source and asks the compile layer, which compiles and loads each kernel once per process
//! even when threads race; two threads missing the same spec at once both ask it, get the same
//! function, and insert equal entries, so the front needs no once-per-key machinery of its own.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction};

use crate::engine_gpu::compile::{device_arch, target_for, KernelCache, KernelKey, NvrtcOptions};
use crate::error::GpuError;
use crate::runtime::driver;

use super::plan::{Form, IndexWidth};
use super::source::KernelSpec;

/// NVRTC options of every pointwise kernel. `--fmad=false`: the CPU engine rounds every
/// multiply and every add, and a contracted `x * y + z` would differ in the last bit (ops
/// that want a fused multiply-add call `fma` explicitly).
pub const OPTIONS: NvrtcOptions = NvrtcOptions {
    fast_math: false,
    extra: &["--fmad=false"],
};

/// A loaded pointwise kernel and what its launches need to know about it.
#[derive(Debug)]
pub struct LoadedKernel {
    /// The entry point.
    pub function: Arc<CudaFunction>,
    /// Blocks of [`KernelSpec::block`] threads resident on the whole device at once (occupancy per
    /// multiprocessor times multiprocessors): the grid cap of the grid-stride loops.
    pub max_blocks: u32,
    /// Whether the image was compiled for `sm_90` or later, so its entry point waits for
    /// the previous kernel on its stream (`ts_pdl_enter`) and every launch of it is a
    /// programmatic dependent ([`super::pdl`]).
    pub pdl: bool,
}

type Front = Mutex<HashMap<(usize, KernelSpec), Arc<LoadedKernel>, BuildHasherDefault<WordHasher>>>;

/// A multiply-rotate hasher over machine words (the Firefox / rustc "Fx" hash): the front's
/// keys are a few small integers and one short name, which SipHash would take several times
/// longer to hash. Not DoS-resistant, which keys chosen by this crate do not need.
#[derive(Default)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

fn front() -> &'static Front {
    static FRONT: OnceLock<Front> = OnceLock::new();
    FRONT.get_or_init(Default::default)
}

/// The kernel of `spec` loaded in `ctx`, compiled on first use.
///
/// # Errors
/// [`GpuError::UntrustedOp`] when the op's name or expression fails
/// [`check_op_source`](crate::ops::op::check_op_source); the compile layer's errors
/// ([`GpuError::NoNvrtc`], [`GpuError::Compile`] with the log, [`GpuError::Driver`]); a
/// failure is not cached.
pub fn kernel(ctx: &Arc<CudaContext>, spec: &KernelSpec) -> Result<Arc<LoadedKernel>, GpuError> {
    let slot = (ctx.ordinal(), *spec);
    // The map holds only complete entries, so a panic elsewhere cannot leave it inconsistent.
    if let Some(hit) = front()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&slot)
    {
        return Ok(hit.clone());
    }
    let loaded = Arc::new(load(ctx, spec)?);
    let mut map = front().lock().unwrap_or_else(PoisonError::into_inner);
    Ok(map.entry(slot).or_insert(loaded).clone())
}

fn load(ctx: &Arc<CudaContext>, spec: &KernelSpec) -> Result<LoadedKernel, GpuError> {
    // The op traits are sealed, so this only re-checks the table; on the miss path, it costs
    // the hot path nothing.
    crate::ops::op::check_op_source(spec.op, spec.expr)?;
    let source = spec.source();
    let key = kernel_key(spec, device_arch(ctx)?, &source);
    let function = KernelCache::global().function(ctx, &key, || source)?;
    LoadedKernel::new(ctx, function, spec.block())
}

impl LoadedKernel {
    /// `function`, launched with `block` threads per block, with its resident-block cap.
    ///
    /// # Errors
    /// The occupancy and attribute queries' [`GpuError::Driver`].
    pub(crate) fn new(
        ctx: &Arc<CudaContext>,
        function: Arc<CudaFunction>,
        block: u32,
    ) -> Result<Self, GpuError> {
        let per_sm = driver::max_active_blocks_per_multiprocessor(&function, block)?;
        let sms = driver::device_attribute(
            ctx,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )?;
        // The image's target is this NVRTC's choice for the device (the key of every cache
        // layer includes it), so this names the architecture the code was compiled for.
        let target = target_for(device_arch(ctx)?, "pdl")?;
        Ok(LoadedKernel {
            function,
            max_blocks: per_sm
                .max(1)
                .saturating_mul(u32::try_from(sms).unwrap_or(1).max(1)),
            pdl: super::pdl::arch_has_griddepcontrol(target.arch_name()),
        })
    }
}

/// The compile layer's key for `spec` on a device of `arch`, whose source is `source`.
pub fn kernel_key(
    spec: &KernelSpec,
    arch: crate::engine_gpu::compile::Arch,
    source: &str,
) -> KernelKey {
    let vector_width = match spec.form {
        Form::Contiguous { vec } | Form::StridedVec { vec, .. } | Form::Tiled { vec, .. } => {
            u32::from(vec)
        }
        Form::Strided { .. } => 1,
    };
    KernelKey {
        op: spec.op.into(),
        entry: spec.entry_name().into(),
        dtypes: std::iter::once(spec.out.dtype)
            .chain(spec.used_inputs().iter().map(|o| o.dtype))
            .collect(),
        rank: spec.form.rank(),
        index_bits: match spec.index {
            IndexWidth::Bits32 => 32,
            IndexWidth::Bits64 => 64,
        },
        vector_width,
        arch,
        options: OPTIONS,
        // The whole source: it includes the op's expression, which no other field names.
        source_hash: KernelKey::hash_source(source),
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;
    use crate::engine_gpu::pointwise::source::Operand;

    fn spec(op: &'static str, expr: &'static str, form: Form) -> KernelSpec {
        let f = Operand::of::<f32>();
        KernelSpec {
            op,
            expr,
            out: f,
            inputs: [f; 3],
            n_inputs: 2,
            scalar: f,
            form,
            index: IndexWidth::Bits32,
        }
    }

    #[test]
    fn front_keys_hash_cheaply_and_compare_fully() {
        let build = BuildHasherDefault::<WordHasher>::default();
        let add = spec("add", "ts_add(a, b)", Form::Contiguous { vec: 4 });
        // Equal keys hash equal, also when built from separately formatted names.
        let same = spec(
            Box::leak(String::from("add").into_boxed_str()),
            "ts_add(a, b)",
            Form::Contiguous { vec: 4 },
        );
        assert_eq!(add, same);
        assert_eq!(
            build.hash_one((0usize, add)),
            build.hash_one((0usize, same))
        );
        // The expression is not hashed but is compared.
        let other_expr = spec("add", "ts_sub(a, b)", Form::Contiguous { vec: 4 });
        assert_eq!(build.hash_one(add), build.hash_one(other_expr));
        assert_ne!(add, other_expr);
        // Forms, widths, devices and types separate keys.
        let strided = spec("add", "ts_add(a, b)", Form::Strided { rank: 2 });
        assert_ne!(build.hash_one(add), build.hash_one(strided));
        assert_ne!(build.hash_one((0usize, add)), build.hash_one((1usize, add)));
        let mut f16_add = add;
        f16_add.out = Operand::of::<half::f16>();
        assert_ne!(add, f16_add);
        assert_ne!(build.hash_one(add), build.hash_one(f16_add));
    }

    #[test]
    fn compile_keys_name_the_rank_width_and_source() {
        let arch = crate::engine_gpu::compile::Arch::new(9, 0);
        let s = spec(
            "add",
            "ts_add(a, b)",
            Form::StridedVec {
                rank: 3,
                vec: 4,
                bcast: 1,
            },
        );
        let key = kernel_key(&s, arch, &s.source());
        assert_eq!(key.rank, 3);
        assert_eq!(key.vector_width, 4);
        assert_eq!(key.index_bits, 32);
        assert_eq!(key.entry, s.entry_name());
        assert_eq!(
            key.dtypes,
            vec![
                crate::element::DType::F32,
                crate::element::DType::F32,
                crate::element::DType::F32
            ]
        );
        let other = spec("add", "ts_sub(a, b)", s.form);
        assert_ne!(
            key.source_hash,
            kernel_key(&other, arch, &other.source()).source_hash
        );
    }
}
