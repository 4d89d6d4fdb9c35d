//! Fused expressions with a row stage (issue 28's reduction nodes): `x.lazy().softmax(-1) *
//! &w`, `(x * s).layer_norm(eps) * &w + &b`, `x - x.mean_keepdim(-1)` run as one kernel
//! (`ts_row_stage` in `kernels/normalize.cuh`), a warp or a block per row of the reduced dim.
//! The generated part evaluates the stage's argument from the leaves (`load`), and, given
//! the stage's value, the rest of the expression into every output (`store`); the row's
//! argument values stay in registers between the statistics and the store.
//!
//! Every operand's layout is taken over the output shape (leaves broadcast to it), the
//! reduced dim is its column stride and the other dims its row offset, found once per row
//! by an [`OffsetCalculator`] over those dims.

use std::fmt::Write as _;

use crate::element::DType;
use crate::engine_gpu::compile::{Arch, Fnv128, KernelKey};
use crate::engine_gpu::kernel::args::{KernelArgs, LaunchArgs};
use crate::engine_gpu::kernel::cache::{KernelFront, OPTIONS};
use crate::engine_gpu::kernel::launch::launch_kernel;
use crate::engine_gpu::kernel::rows::{form, NORMALIZE_CUH, THREADS};
use crate::engine_gpu::kernel::source::{write_headers, KernelSource};
use crate::engine_gpu::offset_calculator::OffsetCalculator;
use crate::error::{Error, GpuError, LayoutError};
use crate::layout::Layout;
use crate::runtime::Stream;
use crate::tensor::expr::program::{Instr, Program, RowKind};

use super::source::{
    check_ops, compute, scalar_arg, storage, write_functors, write_values, FusedBody,
};

const OP: &str = "fused row stage";

/// Most blocks of one launch; rows beyond are covered by the grid-stride loop.
const MAX_GRID: usize = 1 << 20;

/// The row kernels loaded so far, by device and spec.
static KERNELS: KernelFront<RowsSpec> = KernelFront::new();

/// What decides a row kernel's code: the key of its module.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RowsSpec {
    /// [`Program::signature`] (the stage's kind and dim included).
    pub signature: String,
    /// Outputs, then leaves: the operands of the row calculator.
    pub operands: u8,
    /// Outputs (the first `outputs` operands).
    pub outputs: u8,
    /// Dims of the row calculator (the output's dims but the reduced one, merged).
    pub row_dims: u8,
    /// Elements per vector load and store (1: strided element accesses).
    pub vec: u8,
    /// With `vec > 1`, the operands constant along the row (bit `k`: operand `k`, read once
    /// per vector); every other operand is contiguous along it.
    pub broadcast: u16,
    /// Vectors a thread holds (0: re-evaluated per pass).
    pub chunks: u8,
    /// A warp per row (else a block).
    pub warp: bool,
}

impl RowsSpec {
    /// The entry point's name, e.g. `ts_rows_3f2a..._o1_l2_d1_v4_b0_c8_w`.
    pub fn entry_name(&self) -> String {
        let hash = Fnv128::hash(self.signature.as_bytes()) as u64;
        format!(
            "ts_rows_{hash:016x}_o{}_l{}_d{}_v{}_b{:x}_c{}_{}",
            self.outputs,
            self.operands - self.outputs,
            self.row_dims,
            self.vec,
            self.broadcast,
            self.chunks,
            if self.warp { "w" } else { "b" }
        )
    }

    /// Whether operand `k` is read once per vector (constant along the row).
    fn constant(&self, k: usize) -> bool {
        self.vec > 1 && self.broadcast >> k & 1 == 1
    }
}

/// A row kernel to compile: its spec and the program text.
pub(crate) struct RowsKernel<'a, 'p> {
    spec: &'a RowsSpec,
    body: FusedBody<'p>,
}

impl KernelSource for RowsKernel<'_, '_> {
    fn block(&self) -> u32 {
        THREADS
    }

    /// The entry point launches in full stream order (no `ts_pdl_enter()`).
    fn waits_for_predecessor(&self) -> bool {
        false
    }

    /// Every op's name and expression, re-checked against the op table's rules.
    fn check(&self) -> Result<(), GpuError> {
        check_ops(self.body.instrs)
    }

    fn write_source(&self, s: &mut String) {
        write_headers(s, NORMALIZE_CUH);
        write_tail(s, self.spec, &self.body);
    }

    fn compile_key(&self, arch: Arch, source: &str) -> KernelKey {
        KernelKey {
            op: "fused_rows".into(),
            entry: self.spec.entry_name().into(),
            dtypes: self.body.leaves.to_vec(),
            rank: usize::from(self.spec.row_dims),
            index_bits: 64,
            vector_width: 1,
            arch,
            options: OPTIONS,
            source_hash: KernelKey::hash_source(source),
        }
    }
}

/// The row stage of `instrs`: its value, argument and kind.
fn stage(instrs: &[Instr]) -> Option<(usize, usize, RowKind)> {
    instrs.iter().enumerate().find_map(|(k, i)| match i {
        Instr::Row { arg, kind, .. } => Some((k, *arg, *kind)),
        _ => None,
    })
}

/// The values `roots` depend on, not looking through a row stage (its value is an input of
/// the store).
fn needed(instrs: &[Instr], roots: &[usize]) -> Vec<bool> {
    let mut keep = vec![false; instrs.len()];
    for &r in roots {
        keep[r] = true;
    }
    for k in (0..instrs.len()).rev() {
        if !keep[k] {
            continue;
        }
        match &instrs[k] {
            Instr::Op { args, .. } => args.iter().for_each(|&(a, _)| keep[a] = true),
            Instr::Cast { arg, .. } => keep[*arg] = true,
            _ => {}
        }
    }
    keep
}

/// The leaves a kept instruction reads.
fn leaves_read(body: &FusedBody<'_>, keep: &[bool]) -> Vec<usize> {
    let mut read = Vec::new();
    for (k, i) in body.instrs.iter().enumerate() {
        if let Instr::Leaf { leaf } = i {
            if keep[k] && !read.contains(leaf) {
                read.push(*leaf);
            }
        }
    }
    read
}

/// Before the per-element loop: each vector (`w{l}`) or per-row constant (`x{l}`) leaf of
/// `leaves` at columns `j ..`.
fn write_vector_loads(s: &mut String, spec: &RowsSpec, body: &FusedBody<'_>, leaves: &[usize]) {
    if spec.vec == 1 {
        return;
    }
    let n_out = usize::from(spec.outputs);
    for &l in leaves {
        let (st, ct, o) = (storage(body.leaves[l]), compute(body.leaves[l]), n_out + l);
        if spec.constant(o) {
            let _ = writeln!(
                s,
                "    const {ct} x{l} = ts_conv<{ct}>::from(l{l}[off[{o}]]);"
            );
        } else {
            let _ = writeln!(
                s,
                "    const ts_nvec<{st}, {v}> w{l} = *reinterpret_cast<const ts_nvec<{st}, {v}>*>(l{l} + off[{o}] + j);",
                v = spec.vec
            );
        }
    }
}

/// Inside the per-element loop (element `j + i`): `x{l}` of each leaf of `leaves` not read
/// before the loop.
fn write_element_loads(s: &mut String, spec: &RowsSpec, body: &FusedBody<'_>, leaves: &[usize]) {
    let n_out = usize::from(spec.outputs);
    for &l in leaves {
        let (ct, o) = (compute(body.leaves[l]), n_out + l);
        if spec.vec == 1 {
            let _ = writeln!(
                s,
                "    const {ct} x{l} = ts_conv<{ct}>::from(l{l}[off[{o}] + (j + i) * cs.s[{o}]]);"
            );
        } else if !spec.constant(o) {
            let _ = writeln!(s, "    const {ct} x{l} = ts_conv<{ct}>::from(w{l}.v[i]);");
        }
    }
}

/// The generated functors, the row's loads and stores, and the entry point.
fn write_tail(s: &mut String, spec: &RowsSpec, body: &FusedBody<'_>) {
    let _ = writeln!(s, "// ---- generated: fused rows {} ----", spec.signature);
    write_functors(s, body);
    let Some((_, arg, kind)) = stage(body.instrs) else {
        // Launched only for a program with a stage (`launch`); NVRTC refuses this.
        s.push_str("ts_row_stage_missing\n");
        return;
    };
    let ops = usize::from(spec.operands);
    let acc = if body.types[arg] == DType::F64 {
        "double"
    } else {
        "float"
    };
    let calc = format!(
        "OffsetCalculator<{}, {ops}, unsigned long long, long long>",
        spec.row_dims.max(1)
    );
    let _ = writeln!(s, "struct ts_row_cs {{ long long s[{ops}]; }};");
    s.push_str("struct ts_row_io {\n");
    for (i, &r) in body.results.iter().enumerate() {
        let _ = writeln!(s, "  {}* __restrict__ o{i};", storage(body.types[r]));
    }
    for (l, &t) in body.leaves.iter().enumerate() {
        let _ = writeln!(s, "  const {}* __restrict__ l{l};", storage(t));
    }
    for (i, sc) in body.scalars.iter().enumerate() {
        let _ = writeln!(s, "  {} s{i};", compute(sc.dtype));
    }
    let _ = writeln!(s, "  {calc} rc;\n  ts_row_cs cs;\n  long long off[{ops}];");
    s.push_str(
        "  __device__ __forceinline__ void begin(unsigned long long row) { rc.get(row, off); }\n",
    );
    let v = spec.vec;
    // The stage's argument at columns j .. j + VEC.
    let _ = writeln!(
        s,
        "  __device__ __forceinline__ void load(long long j, {acc}* out) const {{"
    );
    let inner = needed(body.instrs, &[arg]);
    let leaves = leaves_read(body, &inner);
    write_vector_loads(s, spec, body, &leaves);
    let _ = writeln!(s, "#pragma unroll\n  for (int i = 0; i < {v}; ++i) {{");
    write_element_loads(s, spec, body, &leaves);
    write_values(s, body, Some(&inner), false);
    let _ = writeln!(s, "    out[i] = ts_conv<{acc}>::from(v{arg});\n  }}\n  }}");
    // The rest of the expression at those columns, given the stage's values, into the
    // outputs.
    let _ = writeln!(
        s,
        "  __device__ __forceinline__ void store(long long j, const {acc}* ys, const {acc}* xs) const {{"
    );
    let outer = needed(body.instrs, body.results);
    // A stage over a leaf (`x - x.mean_keepdim(-1)`, `x * x.softmax(-1)`): the store reads
    // that leaf from the registers that hold the argument (exact: the leaf's compute type is
    // the accumulator), not from memory again. Softmax's registers hold exponentials.
    let held = match body.instrs[arg] {
        Instr::Leaf { leaf } if kind != RowKind::Softmax => Some(leaf),
        _ => None,
    };
    let mut leaves = leaves_read(body, &outer);
    leaves.retain(|&l| Some(l) != held);
    write_vector_loads(s, spec, body, &leaves);
    if v > 1 {
        for (i, &r) in body.results.iter().enumerate() {
            let _ = writeln!(s, "    ts_nvec<{}, {v}> q{i};", storage(body.types[r]));
        }
    }
    let _ = writeln!(s, "#pragma unroll\n  for (int i = 0; i < {v}; ++i) {{");
    let _ = writeln!(s, "    const {acc} y = ys[i];");
    if let Some(l) = held.filter(|&l| {
        outer
            .iter()
            .zip(body.instrs)
            .any(|(&k, i)| k && *i == Instr::Leaf { leaf: l })
    }) {
        let _ = writeln!(s, "    const {acc} x{l} = xs[i];");
    }
    write_element_loads(s, spec, body, &leaves);
    let stored = write_values(s, body, Some(&outer), true);
    for (i, &r) in body.results.iter().enumerate() {
        let value = if stored[r] {
            format!("r{r}")
        } else {
            format!("ts_conv<{}>::from(v{r})", storage(body.types[r]))
        };
        if v > 1 {
            let _ = writeln!(s, "    q{i}.v[i] = {value};");
        } else {
            let _ = writeln!(s, "    o{i}[off[{i}] + (j + i) * cs.s[{i}]] = {value};");
        }
    }
    s.push_str("  }\n");
    if v > 1 {
        for (i, &r) in body.results.iter().enumerate() {
            let _ = writeln!(
                s,
                "    *reinterpret_cast<ts_nvec<{st}, {v}>*>(o{i} + off[{i}] + j) = q{i};",
                st = storage(body.types[r])
            );
        }
    }
    s.push_str("  }\n};\n");
    // The entry point: outputs, leaves, scalars, the row calculator, the column strides,
    // rows, n, the stage's parameter.
    let mut params = Vec::new();
    let mut init = String::new();
    for (i, &r) in body.results.iter().enumerate() {
        params.push(format!("{}* o{i}", storage(body.types[r])));
        let _ = writeln!(init, "  io.o{i} = o{i};");
    }
    for (l, &t) in body.leaves.iter().enumerate() {
        params.push(format!("const {}* l{l}", storage(t)));
        let _ = writeln!(init, "  io.l{l} = l{l};");
    }
    for (i, sc) in body.scalars.iter().enumerate() {
        params.push(format!("{} s{i}", compute(sc.dtype)));
        let _ = writeln!(init, "  io.s{i} = s{i};");
    }
    params.push(format!("{calc} rc"));
    params.push("ts_row_cs cs".into());
    params.push("unsigned long long rows".into());
    params.push("long long n".into());
    params.push("double param".into());
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void __launch_bounds__(TS_NORM_THREADS) {}(\n    {}) {{\n  ts_row_io io;\n{init}  io.rc = rc;\n  io.cs = cs;\n  ts_row_stage<{}, {acc}, {}, {}, {}>(io, rows, n, param);\n}}",
        spec.entry_name(),
        params.join(",\n    "),
        kind as u8,
        spec.vec,
        spec.chunks,
        spec.warp
    );
}

/// The operands of one row launch, outputs first, as `launch` (`super::launch`) checked them:
/// every layout over the output shape and within its storage, the outputs writable and not
/// overlapping any leaf, stream order done.
pub(crate) struct RowOperands<'a> {
    /// Each operand's layout over the output shape.
    pub(crate) layouts: &'a [Layout],
    /// Each operand's storage address.
    pub(crate) ptrs: &'a [u64],
    /// Each operand's element type.
    pub(crate) dtypes: &'a [DType],
    /// Outputs (the first operands).
    pub(crate) n_out: usize,
}

fn overflow(what: &'static str) -> Error {
    LayoutError::SizeOverflow {
        op: OP,
        shape: vec![],
        what,
    }
    .into()
}

/// The row dims of every operand: the output's dims but the reduced one, size-1 dims
/// dropped, neighbours merged where every operand steps through both as through one.
fn row_dims(layouts: &[Layout], reduced: usize) -> (Vec<usize>, Vec<Vec<isize>>) {
    let shape = layouts[0].shape();
    let mut sizes: Vec<usize> = Vec::new();
    let mut strides: Vec<Vec<isize>> = vec![Vec::new(); layouts.len()];
    for (d, &size) in shape.iter().enumerate() {
        if d == reduced || size == 1 {
            continue;
        }
        let merges = !sizes.is_empty()
            && layouts.iter().zip(&strides).all(|(l, s)| {
                s.last()
                    .is_some_and(|&outer| outer == l.strides()[d] * size as isize)
            });
        if merges {
            let last = sizes.len() - 1;
            sizes[last] *= size;
            for (l, s) in layouts.iter().zip(strides.iter_mut()) {
                s[last] = l.strides()[d];
            }
        } else {
            sizes.push(size);
            for (l, s) in layouts.iter().zip(strides.iter_mut()) {
                s.push(l.strides()[d]);
            }
        }
    }
    (sizes, strides)
}

/// The row calculator's type bytes for `N` operands.
fn calculator<const N: usize>(
    sizes: &[usize],
    strides: &[Vec<isize>],
) -> Result<Vec<u8>, LayoutError> {
    let c = OffsetCalculator::<u64, N>::new(sizes, std::array::from_fn(|k| &strides[k][..]))?;
    Ok(c.kernel_param_bytes())
}

/// Whether the row kernel may move 16-byte vectors: every output contiguous along the row,
/// every leaf contiguous or constant along it, each contiguous operand's row starts aligned
/// to 16 bytes and the row a whole number of vectors of its widest element. Returns that,
/// the widest element's size (the vector holds `16 / widest` elements) and the constant
/// leaves (bit `k` for operand `k`).
fn vector_form(
    ops: &RowOperands<'_>,
    reduced: usize,
    row_strides: &[Vec<isize>],
    firsts: &[u64],
) -> (bool, usize, u16) {
    let n = ops.layouts[0].shape()[reduced];
    let mut widest = 1;
    let mut broadcast = 0u16;
    for (k, l) in ops.layouts.iter().enumerate() {
        match l.strides()[reduced] {
            1 => widest = widest.max(ops.dtypes[k].size_in_bytes()),
            0 if k >= ops.n_out && k < 16 => broadcast |= 1 << k,
            _ => return (false, widest, 0),
        }
    }
    let vec = 16 / widest;
    let aligned = ops.layouts.iter().enumerate().all(|(k, l)| {
        let size = ops.dtypes[k].size_in_bytes();
        l.strides()[reduced] == 0
            || (firsts[k].is_multiple_of((vec * size) as u64)
                && row_strides[k]
                    .iter()
                    .all(|&s| s.rem_euclid(vec as isize) == 0))
    });
    (
        vec > 1 && n.is_multiple_of(vec) && aligned,
        widest,
        broadcast,
    )
}

/// Runs `program`, which has one row stage and no current value, over `ops` on `stream`.
///
/// # Errors
/// [`LayoutError`]s for a stage whose dim or length does not match the outputs (the
/// evaluator fuses only those that do) or offsets past the index types; [`GpuError`]s for
/// compilation and launch.
pub(crate) fn launch(
    stream: &Stream,
    program: &Program<'_, crate::runtime::Gpu>,
    ops: RowOperands<'_>,
) -> Result<(), Error> {
    let Some((
        _,
        Instr::Row {
            dim_from_end,
            len,
            param,
            ..
        },
    )) = program.row_stage()
    else {
        return Err(overflow("a row launch without a row stage"));
    };
    let shape = ops.layouts[0].shape();
    let mismatch = || LayoutError::ShapeMismatch {
        op: OP,
        expected: vec![*len],
        got: shape.to_vec(),
    };
    let reduced = shape
        .len()
        .checked_sub(1 + dim_from_end)
        .ok_or_else(mismatch)?;
    if shape[reduced] != *len || !program.currents.is_empty() {
        return Err(mismatch().into());
    }
    let n = *len;
    let numel: usize = shape.iter().product();
    if numel == 0 {
        return Ok(());
    }
    let rows = numel / n;
    let (sizes, strides) = row_dims(ops.layouts, reduced);
    let count = ops.layouts.len();
    let calc = match count {
        1 => calculator::<1>(&sizes, &strides),
        2 => calculator::<2>(&sizes, &strides),
        3 => calculator::<3>(&sizes, &strides),
        4 => calculator::<4>(&sizes, &strides),
        5 => calculator::<5>(&sizes, &strides),
        6 => calculator::<6>(&sizes, &strides),
        7 => calculator::<7>(&sizes, &strides),
        8 => calculator::<8>(&sizes, &strides),
        9 => calculator::<9>(&sizes, &strides),
        10 => calculator::<10>(&sizes, &strides),
        11 => calculator::<11>(&sizes, &strides),
        _ => calculator::<12>(&sizes, &strides),
    }?;
    let mut firsts = Vec::with_capacity(count);
    for (k, layout) in ops.layouts.iter().enumerate() {
        let size = ops.dtypes[k].size_in_bytes() as u64;
        let first = (layout.offset() as u64)
            .checked_mul(size)
            .and_then(|b| b.checked_add(ops.ptrs[k]))
            .ok_or_else(|| overflow("device address"))?;
        firsts.push(first);
    }
    let (vector, widest, broadcast) = vector_form(&ops, reduced, &strides, &firsts);
    let (vec, chunks, warp) = form(n, widest, vector);
    let spec = RowsSpec {
        signature: program.signature(),
        operands: count as u8,
        outputs: ops.n_out as u8,
        row_dims: sizes.len().max(1) as u8,
        vec,
        broadcast: if vec > 1 { broadcast } else { 0 },
        chunks,
        warp,
    };
    let leaves: Vec<DType> = program.leaves.iter().map(|l| l.dtype).collect();
    let source = RowsKernel {
        spec: &spec,
        body: FusedBody {
            leaves: &leaves,
            scalars: &program.scalars,
            instrs: &program.instrs,
            results: &program.results,
            types: program.types(),
        },
    };
    let kernel = KERNELS.kernel(stream.cuda().context(), &spec, &source)?;
    let mut args = KernelArgs::default();
    for first in &firsts {
        args.push(&first.to_le_bytes());
    }
    for v in &program.scalars {
        args.push(&scalar_arg(v));
    }
    args.push(&calc);
    let columns: Vec<u8> = ops
        .layouts
        .iter()
        .flat_map(|l| (l.strides()[reduced] as i64).to_le_bytes())
        .collect();
    args.push(&columns);
    args.push(&(rows as u64).to_le_bytes());
    let n = i64::try_from(n).map_err(|_| overflow("a row past i64"))?;
    args.push(&n.to_le_bytes());
    args.push(&param.to_le_bytes());
    let mut args = LaunchArgs::new(args);
    let rows_per_block = if warp { (THREADS / 32) as usize } else { 1 };
    let grid = rows.div_ceil(rows_per_block).clamp(1, MAX_GRID) as u32;
    // SAFETY: the parameters are the entry point's (`write_tail`), in order and of the
    // declared sizes: each pointer addresses its operand's first element (the layout's
    // offset), the calculator is the byte image of the declared `OffsetCalculator` type and
    // the column strides one `long long` per operand. Operand `k` is accessed only at
    // `first_k + rowoff_k(r) + j * cs_k` for `r < rows`, `j < n`: exactly the element
    // offsets of its layout over the output shape (the row calculator holds that layout's
    // strides over the other dims, `row_dims`, and `cs_k` its stride over the reduced dim),
    // which the caller checked within the operand's storage (leaves broadcast to the
    // output shape, which only repeats elements). In the vector form (`vector_form`) a
    // contiguous operand (`cs_k == 1`) is read or written as `VEC` elements `j .. j + VEC`
    // with `j` a multiple of `VEC` and `n` one too, so within the row, at an address aligned
    // to the vector's size (its first element and every row offset are); a constant one
    // (`cs_k == 0`) is read at column 0. Outputs are written at their own
    // elements, each by the one thread that owns column `j` of row `r`, once; they are
    // writable layouts (no two elements share memory), not read, and overlap no leaf
    // (`LeafOverlapsOutput`), and no current value is read (checked above). Stream order
    // was established by the caller on `stream`, whose context loaded the kernel. Blocks
    // of `THREADS` threads (the `__launch_bounds__`); the grid at most 2^20.
    unsafe {
        launch_kernel(
            stream.cuda(),
            &kernel,
            (grid, 1, 1),
            (THREADS, 1, 1),
            &mut args,
        )
    }
}

/// The entry name and the complete source of the row kernel of `body` (tests: NVRTC).
#[cfg(test)]
pub(crate) fn source_of(
    body: FusedBody<'_>,
    n_out: usize,
    row_dims: u8,
    (vec, broadcast): (u8, u16),
    chunks: u8,
    warp: bool,
) -> (String, String) {
    let mut signature = format!("test:{n_out}:");
    for i in body.instrs {
        let _ = write!(signature, "{i:?};");
    }
    let spec = RowsSpec {
        signature,
        operands: (n_out + body.leaves.len()) as u8,
        outputs: n_out as u8,
        row_dims,
        vec,
        broadcast,
        chunks,
        warp,
    };
    let kernel = RowsKernel { spec: &spec, body };
    (spec.entry_name(), kernel.source())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_dims_merge_where_every_operand_does() {
        let out = Layout::contiguous(&[2, 3, 4, 5]).unwrap();
        // Reduce dim 2: dims 0 and 1 merge (stride 60 = 20 * 3); dim 3 does not.
        let (sizes, strides) = row_dims(std::slice::from_ref(&out), 2);
        assert_eq!(sizes, [6, 5]);
        assert_eq!(strides, [vec![20, 1]]);
        // A broadcast leaf (stride 0 over dim 1) keeps dims 0 and 1 apart.
        let leaf = Layout::contiguous(&[2, 1, 4, 5])
            .unwrap()
            .broadcast_to(&[2, 3, 4, 5])
            .unwrap();
        let (sizes, strides) = row_dims(&[out, leaf], 3);
        assert_eq!(sizes, [2, 3, 4]);
        assert_eq!(strides, [vec![60, 20, 5], vec![20, 0, 5]]);
    }
}
