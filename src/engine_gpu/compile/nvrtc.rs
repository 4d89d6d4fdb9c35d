//! Every NVRTC call of the crate (the only `unsafe` of the compile layer).
//!
//! cudarc loads libnvrtc lazily and panics when it is missing, so every entry point here
//! probes for the library first and returns [`GpuError::NoNvrtc`] instead.

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

use cudarc::nvrtc::{result, sys};

use super::arch::Target;
use super::image::KernelImage;
use crate::error::GpuError;

/// Options a kernel is compiled with, beyond the architecture and `-std=c++17` that every
/// compile gets. Part of a [`super::KernelKey`], so it is `Copy` and made of static parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NvrtcOptions {
    /// `--use_fast_math` (approximate transcendental functions, flush to zero). Off by
    /// default: results are checked against a CPU reference.
    pub fast_math: bool,
    /// Further NVRTC options, e.g. `-DVEC=4`.
    pub extra: &'static [&'static str],
}

impl NvrtcOptions {
    /// The full option list NVRTC receives for `target`.
    pub fn args(&self, target: Target) -> Vec<String> {
        let mut args = vec![
            format!("--gpu-architecture={}", target.arch_name()),
            "-std=c++17".to_owned(),
        ];
        if self.fast_math {
            args.push("--use_fast_math".to_owned());
        }
        args.extend(self.extra.iter().map(|&s| s.to_owned()));
        args
    }
}

/// Whether libnvrtc can be loaded (probed once per process).
pub fn available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries to dlopen the candidate library names and
    // closes them again; it touches no NVRTC state.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

fn require() -> Result<(), GpuError> {
    if available() {
        Ok(())
    } else {
        Err(GpuError::NoNvrtc)
    }
}

fn failed(kernel: &str, options: &[String], call: &str, err: result::NvrtcError) -> GpuError {
    GpuError::Compile {
        kernel: kernel.to_owned(),
        options: options.to_vec(),
        log: format!("{call} failed: {err:?}"),
    }
}

/// NVRTC's version, `(major, minor)` (asked once per process).
///
/// # Errors
/// [`GpuError::NoNvrtc`] without libnvrtc; [`GpuError::Compile`] if the call fails.
pub fn version() -> Result<(u32, u32), GpuError> {
    static VERSION: OnceLock<Result<(u32, u32), GpuError>> = OnceLock::new();
    VERSION.get_or_init(query_version).clone()
}

fn query_version() -> Result<(u32, u32), GpuError> {
    require()?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: the library is present (checked above); both pointers are to live locals.
    let status = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    status
        .result()
        .map_err(|e| failed("<version>", &[], "nvrtcVersion", e))?;
    Ok((
        u32::try_from(major).unwrap_or(0),
        u32::try_from(minor).unwrap_or(0),
    ))
}

/// The architecture numbers (`10 * major + minor`) this NVRTC can compile for (asked once
/// per process).
///
/// # Errors
/// [`GpuError::NoNvrtc`] without libnvrtc; [`GpuError::Compile`] if a call fails.
pub fn supported_archs() -> Result<Vec<u32>, GpuError> {
    static ARCHS: OnceLock<Result<Vec<u32>, GpuError>> = OnceLock::new();
    ARCHS.get_or_init(query_archs).clone()
}

fn query_archs() -> Result<Vec<u32>, GpuError> {
    require()?;
    let mut count: c_int = 0;
    // SAFETY: the library is present; `count` is a live local.
    let status = unsafe { sys::nvrtcGetNumSupportedArchs(&mut count) };
    status
        .result()
        .map_err(|e| failed("<archs>", &[], "nvrtcGetNumSupportedArchs", e))?;
    let mut archs: Vec<c_int> = vec![0; usize::try_from(count).unwrap_or(0)];
    if !archs.is_empty() {
        // SAFETY: `archs` has room for the `count` entries NVRTC writes.
        let status = unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) };
        status
            .result()
            .map_err(|e| failed("<archs>", &[], "nvrtcGetSupportedArchs", e))?;
    }
    Ok(archs
        .into_iter()
        .filter_map(|a| u32::try_from(a).ok())
        .collect())
}

/// An NVRTC program, destroyed on drop.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from `create_program` and is destroyed exactly once, here.
        // A failure leaks the program, which is all that can be done in `drop`.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

impl Program {
    fn log(&self) -> String {
        // SAFETY: the program is live (owned by `self`).
        match unsafe { result::get_program_log(self.0) } {
            Ok(chars) => c_chars_to_string(&chars),
            Err(e) => format!("(no log: nvrtcGetProgramLog failed: {e:?})"),
        }
    }

    fn cubin(&self) -> Result<Vec<u8>, result::NvrtcError> {
        let mut size = 0usize;
        // SAFETY: the program is live and compiled; `size` is a live local.
        unsafe { sys::nvrtcGetCUBINSize(self.0, &mut size) }.result()?;
        let mut bytes = vec![0u8; size];
        // SAFETY: `bytes` has the `size` bytes NVRTC writes.
        unsafe { sys::nvrtcGetCUBIN(self.0, bytes.as_mut_ptr().cast::<c_char>()) }.result()?;
        Ok(bytes)
    }

    fn ptx(&self) -> Result<Vec<u8>, result::NvrtcError> {
        // SAFETY: the program is live and compiled.
        let chars = unsafe { result::get_ptx(self.0) }?;
        Ok(c_chars_to_string(&chars).into_bytes())
    }
}

/// NVRTC's NUL-terminated character buffers as a `String` (up to the first NUL).
fn c_chars_to_string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Compiles `source` for `target` with `options`; `kernel` names the program in errors.
///
/// # Errors
/// - [`GpuError::NoNvrtc`] without libnvrtc.
/// - [`GpuError::Compile`] with NVRTC's full log when compilation fails, or with the failing
///   call when NVRTC itself fails (or the source or an option contains a NUL byte).
pub fn compile(
    kernel: &str,
    source: &str,
    target: Target,
    options: &NvrtcOptions,
) -> Result<KernelImage, GpuError> {
    require()?;
    let args = options.args(target);
    let nul = |what: &str| GpuError::Compile {
        kernel: kernel.to_owned(),
        options: args.clone(),
        log: format!("the {what} contains a NUL byte"),
    };
    let c_source = CString::new(source).map_err(|_| nul("source"))?;
    let c_name = CString::new(format!("{kernel}.cu")).map_err(|_| nul("kernel name"))?;
    if args.iter().any(|a| a.contains('\0')) {
        return Err(nul("option list"));
    }
    let program = result::create_program(&c_source, Some(&c_name))
        .map(Program)
        .map_err(|e| failed(kernel, &args, "nvrtcCreateProgram", e))?;
    // SAFETY: the program is live; every option is free of NUL bytes (checked above), so
    // cudarc's `CString::new(..).unwrap()` on them cannot panic.
    if let Err(e) = unsafe { result::compile_program(program.0, &args) } {
        let log = program.log();
        return Err(GpuError::Compile {
            kernel: kernel.to_owned(),
            options: args,
            log: if log.trim().is_empty() {
                format!("nvrtcCompileProgram failed: {e:?}")
            } else {
                log
            },
        });
    }
    let bytes = match target {
        Target::Cubin(_) => program.cubin(),
        Target::Ptx(_) => program.ptx(),
    }
    .map_err(|e| failed(kernel, &args, "nvrtcGetCUBIN/nvrtcGetPTX", e))?;
    Ok(KernelImage::new(target, bytes))
}
