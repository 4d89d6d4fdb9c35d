//! The run-time description of a fused expression: what an engine that generates code (the
//! GPU's) needs to know, built by walking the expression's typed tree once per evaluation.
//!
//! Values are numbered in the order they are built; every instruction reads only values
//! numbered before it, and an expression's result is the last value it built. Leaves are
//! numbered separately (in the order the tree reaches them) and keep their original layout;
//! the evaluator broadcasts them to the output shape.

use std::any::Any;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::ops::Deref;

use crate::element::{DType, Element};
use crate::layout::Layout;

use super::inline::InlineList;

pub use crate::tensor::backend::sealed::Program;

/// The most distinct tensors one fused kernel reads.
pub const MAX_LEAVES: usize = 8;
/// The most outputs one fused kernel writes.
pub const MAX_OUTPUTS: usize = 4;

/// A scalar constant of an expression, passed to a kernel as an argument (never part of the
/// generated code, so a new value does not recompile).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScalarValue {
    /// Its element type.
    pub dtype: DType,
    /// The value's bits in its element type, zero-extended (`f16` as its 16 bits, `bool` as
    /// 0 or 1), signed integers sign-extended to 64 bits, unsigned ones zero-extended.
    pub bits: u64,
}

impl ScalarValue {
    /// The scalar `v`.
    pub fn of<T: Element>(v: T) -> Self {
        let any: &dyn Any = &v;
        // `Element` is sealed to exactly these types, so one branch matches.
        let bits = if let Some(x) = any.downcast_ref::<f32>() {
            u64::from(x.to_bits())
        } else if let Some(x) = any.downcast_ref::<f64>() {
            x.to_bits()
        } else if let Some(x) = any.downcast_ref::<half::f16>() {
            u64::from(x.to_bits())
        } else if let Some(x) = any.downcast_ref::<half::bf16>() {
            u64::from(x.to_bits())
        } else if let Some(x) = any.downcast_ref::<i32>() {
            i64::from(*x) as u64
        } else if let Some(x) = any.downcast_ref::<i64>() {
            *x as u64
        } else if let Some(x) = any.downcast_ref::<u8>() {
            u64::from(*x)
        } else if let Some(x) = any.downcast_ref::<bool>() {
            u64::from(*x)
        } else if let Some(x) = any.downcast_ref::<i8>() {
            i64::from(*x) as u64
        } else if let Some(x) = any.downcast_ref::<i16>() {
            i64::from(*x) as u64
        } else if let Some(x) = any.downcast_ref::<u16>() {
            u64::from(*x)
        } else if let Some(x) = any.downcast_ref::<u32>() {
            u64::from(*x)
        } else if let Some(x) = any.downcast_ref::<u64>() {
            *x
        } else {
            0
        };
        ScalarValue {
            dtype: T::DTYPE,
            bits,
        }
    }
}

/// The arguments of an [`Instr::Op`]: value and element type of `a`, `b` and `c` (an op of
/// the table takes one to three), in place, so that building a program allocates nothing
/// per op. Reads as a slice.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ArgList {
    items: [(usize, DType); 3],
    len: u8,
}

impl ArgList {
    /// The arguments `args`.
    ///
    /// # Panics
    /// With more than three (no op of the table takes more).
    pub fn from_slice(args: &[(usize, DType)]) -> Self {
        assert!(args.len() <= 3, "an op takes at most three arguments");
        let mut items = [(0, DType::Bool); 3];
        items[..args.len()].copy_from_slice(args);
        ArgList {
            items,
            len: args.len() as u8,
        }
    }
}

impl Deref for ArgList {
    type Target = [(usize, DType)];

    fn deref(&self) -> &[(usize, DType)] {
        &self.items[..usize::from(self.len)]
    }
}

impl<'a> IntoIterator for &'a ArgList {
    type Item = &'a (usize, DType);
    type IntoIter = std::slice::Iter<'a, (usize, DType)>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::fmt::Debug for ArgList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One step of a fused expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Instr {
    /// Leaf `leaf`'s element.
    Leaf {
        /// Index into [`Program::leaves`].
        leaf: usize,
    },
    /// Scalar `slot`.
    Scalar {
        /// Index into [`Program::scalars`].
        slot: usize,
    },
    /// An op of the table applied to earlier values.
    Op {
        /// The op's kernel name.
        name: &'static str,
        /// The op's CUDA expression in `a`, `b`, `c`, `p0`, `p1`.
        cuda: &'static str,
        /// The value and element type of each argument (`a`, `b`, `c`).
        args: ArgList,
        /// The scalar slots bound to `p0` and `p1` (ops without scalars have none).
        params: Option<[usize; 2]>,
        /// The result's element type (the op's output): the value is rounded to it, as an
        /// eager op's stored result is.
        out: DType,
    },
    /// Output `output`'s value at the element being written, before it is written (an
    /// in-place update, [`super::update`]): read through the output's own layout, so by the
    /// thread that writes the element, before it writes it.
    Current {
        /// The output read, an index into the outputs.
        output: usize,
    },
    /// A row stage (issue 28's reduction nodes): `kind` over the row of value `arg` along the
    /// output's dim `rank - 1 - dim_from_end`, whose value at each element broadcasts back
    /// to the row (the normalised element, or the row's statistic). Of the engines only the
    /// GPU's sees one, in a program with exactly one and no current value (the evaluator
    /// materialises every other row stage first, `row.rs`), and runs the program as one row
    /// kernel: the instructions `arg` depends on load the row, the others store it.
    Row {
        /// The value whose rows are reduced.
        arg: usize,
        /// What is computed.
        kind: RowKind,
        /// The reduced dim, counted from the output's last (0: the last dim).
        dim_from_end: usize,
        /// The row's length: the output's size along the reduced dim.
        len: usize,
        /// `eps` of the norms, the correction of `Var` / `Std`; a kernel argument.
        param: f64,
    },
    /// A conversion of an earlier value to another element type (C cast rules).
    Cast {
        /// The value converted.
        arg: usize,
        /// Its type.
        from: DType,
        /// The type converted to.
        to: DType,
    },
}

/// What a row stage ([`Instr::Row`]) gives each element of its row. The codes are
/// `kernels/normalize.cuh`'s `TS_ROW_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// `exp(x − max) / Σ exp(x − max)`.
    Softmax = 0,
    /// `x − max − log Σ exp(x − max)`.
    LogSoftmax = 1,
    /// `(x − mean) / sqrt(var + eps)`, the variance biased.
    LayerNorm = 2,
    /// `x / sqrt(mean(x²) + eps)`.
    RmsNorm = 3,
    /// The row's `log Σ exp(x)` (PyTorch's rule for infinite maxima).
    LogSumExp = 4,
    /// The row's variance, `Σ (x − mean)² / max(0, n − correction)`.
    Var = 5,
    /// The square root of `Var`.
    Std = 6,
    /// The row's mean.
    Mean = 7,
}

impl RowKind {
    /// Its name, as the eager method's.
    pub fn name(self) -> &'static str {
        match self {
            RowKind::Softmax => "softmax",
            RowKind::LogSoftmax => "log_softmax",
            RowKind::LayerNorm => "layer_norm",
            RowKind::RmsNorm => "rms_norm",
            RowKind::LogSumExp => "logsumexp",
            RowKind::Var => "var",
            RowKind::Std => "std",
            RowKind::Mean => "mean",
        }
    }
}

/// A leaf of a program: an operand read from memory, through an engine's handle `H`.
pub struct ProgramLeaf<'s, H> {
    /// Its element type.
    pub dtype: DType,
    /// Its layout, not yet broadcast.
    pub layout: &'s Layout,
    /// The engine's handle to its storage.
    pub handle: H,
}

/// A fused expression (or several, one per output) as instructions over leaves and scalars.
///
/// Built on every evaluation, so it allocates nothing in the steady state: the leaves are
/// kept in place (up to [`MAX_LEAVES`], which is all a kernel takes), and the other lists
/// reuse buffers a dropped program of the same thread gave back.
///
/// Generic over the engine's leaf handle `H`, not the engine, so that the engine contract
/// (`tensor/backend.rs`), which hands a program to an engine, can name it: engines write
/// [`Program<'s, D>`](Program), the program whose leaves hold `D`'s handles.
pub struct ProgramOf<'s, H> {
    /// The leaves, in the order the trees reach them (a view reached twice is one leaf).
    pub leaves: InlineList<ProgramLeaf<'s, H>, MAX_LEAVES>,
    /// The scalars, in the order the trees reach them.
    pub scalars: Vec<ScalarValue>,
    /// The instructions; value `k` is the result of `instrs[k]`.
    pub instrs: Vec<Instr>,
    /// The value each output takes, in output order.
    pub results: Vec<usize>,
    /// The outputs whose current value the program reads ([`Instr::Current`]), each once,
    /// in the order first read, with the element type it is read as. A GPU kernel reads
    /// them as extra inputs after the leaves, at the output's own address and layout.
    pub currents: Vec<(usize, DType)>,
    /// Per value, its element type.
    types: Vec<DType>,
    /// The storage identity of each leaf (`(address, len)` key from the engine, with the
    /// layout), to load a view reached twice once.
    leaf_keys: Vec<(u64, usize)>,
}

/// The heap buffers of a program's lists, emptied, for the next program of the thread.
#[derive(Default)]
struct Buffers {
    scalars: Vec<ScalarValue>,
    instrs: Vec<Instr>,
    results: Vec<usize>,
    currents: Vec<(usize, DType)>,
    types: Vec<DType>,
    leaf_keys: Vec<(u64, usize)>,
}

/// Buffers kept per thread: enough for a program and one built while it is alive.
const POOLED: usize = 4;

thread_local! {
    static POOL: RefCell<Vec<Buffers>> = const { RefCell::new(Vec::new()) };
}

impl<H> Default for ProgramOf<'_, H> {
    fn default() -> Self {
        let b = POOL
            .try_with(|p| p.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_default();
        ProgramOf {
            leaves: InlineList::new(),
            scalars: b.scalars,
            instrs: b.instrs,
            results: b.results,
            currents: b.currents,
            types: b.types,
            leaf_keys: b.leaf_keys,
        }
    }
}

impl<H> Drop for ProgramOf<'_, H> {
    fn drop(&mut self) {
        let mut b = Buffers {
            scalars: std::mem::take(&mut self.scalars),
            instrs: std::mem::take(&mut self.instrs),
            results: std::mem::take(&mut self.results),
            currents: std::mem::take(&mut self.currents),
            types: std::mem::take(&mut self.types),
            leaf_keys: std::mem::take(&mut self.leaf_keys),
        };
        b.scalars.clear();
        b.instrs.clear();
        b.results.clear();
        b.currents.clear();
        b.types.clear();
        b.leaf_keys.clear();
        // At thread exit the pool may be gone already: the buffers are then just freed.
        let _ = POOL.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                if p.len() < POOLED {
                    p.push(b);
                }
            }
        });
    }
}

impl<'s, H> ProgramOf<'s, H> {
    fn push(&mut self, instr: Instr, dtype: DType) -> usize {
        self.instrs.push(instr);
        self.types.push(dtype);
        self.instrs.len() - 1
    }

    /// The element type of value `v`.
    pub fn dtype(&self, v: usize) -> DType {
        self.types[v]
    }

    /// Every value's element type, in value order.
    pub fn types(&self) -> &[DType] {
        &self.types
    }

    /// A leaf of element type `T` reading storage `key` (the engine's
    /// [`leaf_key`](crate::tensor::backend::sealed::FusedBackend::leaf_key)) through
    /// `layout`; `handle` makes the engine's handle to it, called only for a leaf not reached
    /// before (the same storage and layout reached again is loaded once). The evaluators
    /// call it through `leaf`, which takes a view (`node.rs`).
    pub fn leaf_of<T: Element>(
        &mut self,
        layout: &'s Layout,
        key: (u64, usize),
        handle: impl FnOnce() -> H,
    ) -> usize {
        let found = self
            .leaves
            .iter()
            .zip(&self.leaf_keys)
            .position(|(l, k)| *k == key && l.dtype == T::DTYPE && l.layout == layout);
        let leaf = match found {
            Some(i) => i,
            None => {
                self.leaves.push(ProgramLeaf {
                    dtype: T::DTYPE,
                    layout,
                    handle: handle(),
                });
                self.leaf_keys.push(key);
                self.leaves.len() - 1
            }
        };
        self.push(Instr::Leaf { leaf }, T::DTYPE)
    }

    /// Output `output`'s current value, read as `dtype` (checked against the output by the
    /// evaluator before any engine runs).
    pub fn current(&mut self, output: usize, dtype: DType) -> usize {
        if !self.currents.iter().any(|&(o, _)| o == output) {
            self.currents.push((output, dtype));
        }
        self.push(Instr::Current { output }, dtype)
    }

    /// The instructions with every [`Instr::Current`] read as a leaf: current value `j`
    /// (`currents[j]`) becomes leaf `leaves.len() + j`. This is how a kernel generator that
    /// knows only leaves reads outputs in place: it gets the outputs read as extra inputs,
    /// in `currents` order, after the leaves.
    pub fn instrs_with_currents_as_leaves(&self) -> Vec<Instr> {
        let n = self.leaves.len();
        self.instrs
            .iter()
            .map(|i| match i {
                Instr::Current { output } => Instr::Leaf {
                    leaf: n + self
                        .currents
                        .iter()
                        .position(|&(o, _)| o == *output)
                        .unwrap_or(0),
                },
                other => other.clone(),
            })
            .collect()
    }

    /// A scalar argument.
    pub fn scalar<T: Element>(&mut self, v: T) -> usize {
        self.scalars.push(ScalarValue::of(v));
        let slot = self.scalars.len() - 1;
        self.push(Instr::Scalar { slot }, T::DTYPE)
    }

    /// An op over earlier values; `params` are its two scalars when it has any.
    pub fn op<P: Element>(
        &mut self,
        name: &'static str,
        cuda: &'static str,
        args: &[usize],
        params: Option<[P; 2]>,
        out: DType,
    ) -> usize {
        let mut typed = [(0, DType::Bool); 3];
        for (t, &a) in typed.iter_mut().zip(args) {
            *t = (a, self.types[a]);
        }
        let args = ArgList::from_slice(&typed[..args.len().min(3)]);
        // Scalars become kernel arguments only for ops whose expression reads them.
        let reads_params = cuda.contains("p0") || cuda.contains("p1");
        let params = params.filter(|_| reads_params).map(|[p0, p1]| {
            self.scalars.push(ScalarValue::of(p0));
            self.scalars.push(ScalarValue::of(p1));
            let n = self.scalars.len();
            [n - 2, n - 1]
        });
        self.push(
            Instr::Op {
                name,
                cuda,
                args,
                params,
                out,
            },
            out,
        )
    }

    /// A row stage over value `arg` ([`Instr::Row`]); its value has `arg`'s element type.
    pub fn row(
        &mut self,
        arg: usize,
        kind: RowKind,
        dim_from_end: usize,
        len: usize,
        param: f64,
    ) -> usize {
        let dtype = self.types[arg];
        self.push(
            Instr::Row {
                arg,
                kind,
                dim_from_end,
                len,
                param,
            },
            dtype,
        )
    }

    /// The row stage of the program and its value, if it has one.
    pub fn row_stage(&self) -> Option<(usize, &Instr)> {
        self.instrs
            .iter()
            .enumerate()
            .find(|(_, i)| matches!(i, Instr::Row { .. }))
    }

    /// A conversion of value `arg` to `to`.
    pub fn cast(&mut self, arg: usize, to: DType) -> usize {
        let from = self.types[arg];
        self.push(Instr::Cast { arg, from, to }, to)
    }

    /// A compact text naming the program's structure: instructions (each op by its name and
    /// its CUDA expression), element types and the outputs (no scalar values, no layouts).
    /// Equal signatures generate equal code for equal layout classes: the fused kernel caches
    /// key on it, so nothing the generated source depends on may be left out.
    pub fn signature(&self) -> String {
        let mut s = String::with_capacity(16 * self.instrs.len() + 16);
        for leaf in &self.leaves {
            let _ = write!(s, "L{};", leaf.dtype.name());
        }
        for sc in &self.scalars {
            let _ = write!(s, "S{};", sc.dtype.name());
        }
        for (o, t) in &self.currents {
            let _ = write!(s, "C{o}{};", t.name());
        }
        for i in &self.instrs {
            match i {
                Instr::Leaf { leaf } => {
                    let _ = write!(s, "l{leaf};");
                }
                Instr::Scalar { slot } => {
                    let _ = write!(s, "s{slot};");
                }
                Instr::Op {
                    name,
                    cuda,
                    args,
                    params,
                    ..
                } => {
                    // The op's CUDA text too, not only its name: the signature keys the
                    // compiled kernels, so it must name everything the source is made of.
                    let _ = write!(s, "{name}[{cuda}](");
                    for (a, t) in args {
                        let _ = write!(s, "{a}:{},", t.name());
                    }
                    if let Some([p, q]) = params {
                        let _ = write!(s, "p{p},{q}");
                    }
                    s.push_str(");");
                }
                Instr::Current { output } => {
                    let _ = write!(s, "o{output};");
                }
                Instr::Cast { arg, to, .. } => {
                    let _ = write!(s, "c{arg}>{};", to.name());
                }
                // The kind and the dim decide the code; the length and the parameter are
                // launch arguments.
                Instr::Row {
                    arg,
                    kind,
                    dim_from_end,
                    ..
                } => {
                    let _ = write!(s, "R{}({arg})@{dim_from_end};", kind.name());
                }
            }
        }
        s.push_str("=>");
        for r in &self.results {
            let _ = write!(s, "{r}:{},", self.types[*r].name());
        }
        s
    }
}
