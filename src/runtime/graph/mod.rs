//! CUDA graphs: record a sequence of ops once, replay it with one launch
//! ([`Gpu::capture`], [`Graph`]); PyTorch's `torch.cuda.graph` with its private memory pool.
//!
//! ```no_run
//! use typestate_tensor::gpu::Gpu;
//! use typestate_tensor::tensor::Tensor;
//!
//! let gpu = Gpu::new(0)?;
//! let mut x = Tensor::from_vec(&[1024], vec![1.0f32; 1024])?.to_gpu(&gpu)?;
//! // Records `exp(x) * x + x` (temporaries included), runs it once, and keeps it.
//! let mut graph = gpu.capture(&mut x, |x| {
//!     let e = x.exp()?;
//!     let y = e.mul(&x)?;
//!     Ok(y.add(&x)?)
//! })?;
//! let first = graph.outputs().to_cpu()?;
//! // Refill the input in place, replay, read the output again.
//! graph.bound_mut().fill_(2.0)?;
//! graph.replay()?;
//! let second = graph.outputs().to_cpu()?;
//! # let _ = (first, second);
//! # Ok::<(), typestate_tensor::Error>(())
//! ```
//!
//! How it works (docs/GRAPHS.md has the long form):
//! - **Stream.** The legacy default stream cannot be captured, so each capture gets a new
//!   stream, never captured on again (so no handle to it obtained earlier can slip work
//!   into a later capture). While the closure runs, on the capturing thread and only there,
//!   [`Gpu::default_stream`] is that stream, so every op (eager or fused) queues on it and is
//!   recorded; the graph replays on it. Captures use thread-local mode: other threads are
//!   neither recorded nor restricted, except that work on the capture stream itself, or on a
//!   buffer the capture allocated, is refused with [`GpuError::CaptureInProgress`] while the
//!   capture is open.
//! - **Memory.** Buffers allocated by the capturing thread during the capture come from a
//!   pool private to the graph ([`pool::GraphPool`]): temporaries freed inside the closure are
//!   reused within the capture, nothing of the pool is handed to anyone else, and its memory
//!   returns to the driver only when the graph and every output are gone (after the last
//!   replay has finished). Each [`GpuStorage`](crate::gpu::GpuStorage) remembers the pool it came from.
//! - **What the graph may touch.** Only bound buffers and buffers of its pool: a capture that
//!   reaches any other buffer, another stream, a host copy, a synchronisation or event work
//!   fails with [`GpuError::NotCapturable`] before anything is queued; the capture is ended
//!   and discarded and the stream stays usable. A buffer of the pool still alive outside the
//!   outputs when the closure returns fails the capture with [`GpuError::CaptureEscape`].
//! - **Stream order.** Before the capture and before every replay, each bound buffer and
//!   output is ordered on the capture stream (`access_write`, or `access_read` for buffers
//!   bound read-only), exactly as a launch orders its operands: a replay follows pending work
//!   on them on any stream, and later work on any stream, host reads included, follows it.
//! - **First run.** A capture records without running, so [`Gpu::capture`] launches the graph
//!   once before returning: the outputs hold the results for the current inputs, as the
//!   eager code would have left them, and never uninitialised memory.
//! - **`mem::forget`.** Forgetting a [`Graph`] leaks its executable graph and pool; its
//!   borrows end, but nothing can replay it any more, so no memory is ever written again.

pub(crate) mod active;
pub(crate) mod bind;
pub(crate) mod pool;
pub(crate) mod state;

use std::fmt;
use std::sync::Arc;

pub use bind::{Bound, BoundView, Outputs};

use self::active::{Active, BoundRange};
use self::bind::pool_id;
use self::bind::sealed::{BoundBuffers, OutputBuffers, Slot};
use self::pool::GraphPool;
use crate::error::{Error, GpuError};
use crate::runtime::device::Gpu;
use crate::runtime::driver::{self, CapturedGraph, GraphExec};
use crate::runtime::stream::Stream;
use crate::storage::allocator::AllocatorStats;

/// A captured CUDA graph, ready to replay: the executable graph, the tensors bound to it
/// (`B`, borrowed for the graph's life) and the outputs its closure allocated (`O`, owned).
///
/// Made by [`Gpu::capture`]. Between replays, refill the bound tensors through
/// [`bound_mut`](Graph::bound_mut) (in place: the graph reads and writes their memory), call
/// [`replay`](Graph::replay), and read [`outputs`](Graph::outputs).
///
/// Invariants:
/// - `exec` reads and writes only the memory of the bound tensors (borrowed by `bound`, so
///   alive and not replaced while this value lives) and of `pool` (kept alive by `pool` and
///   never handed to anyone else: only the capture allocated from it). The outputs are
///   buffers of `pool`, owned here.
/// - Every element `exec` reads was written before, in stream order: by the eager work
///   before a replay (bound tensors are initialised by their own invariant), or by an
///   earlier node of the same launch (the pool's buffers: the capture refused any read of a
///   buffer it had not made or been given).
pub struct Graph<B: Bound, O: Outputs> {
    exec: GraphExec,
    bound: B,
    outputs: O,
    stream: Stream,
    pool: Arc<GraphPool>,
}

impl<B: Bound, O: Outputs> Graph<B, O> {
    /// Runs the graph once more on its stream, with the bound tensors' current contents
    /// (returns once queued).
    ///
    /// The launch is ordered after all pending work on the bound tensors and outputs, on any
    /// stream, and later work on them (any stream, host reads) is ordered after it. Refused
    /// inside a capture on this thread ([`GpuError::NotCapturable`]).
    pub fn replay(&mut self) -> Result<(), Error> {
        const OP: &str = "Graph::replay";
        state::check_host_sync(
            OP,
            self.stream.capture_owner(),
            "replaying a graph inside a capture is not supported",
        )?;
        order_all(OP, &mut self.bound, &mut self.outputs, &self.stream)?;
        // SAFETY: the graph's nodes reach only the bound tensors' memory and the pool's
        // (invariant), both alive: the borrows in `bound` and the `pool` handle outlive this
        // call, and the pool is freed only after synchronising, once nothing holds it (so
        // after this launch has run). Every bound tensor and output was ordered on
        // `self.stream` just above, so the launch follows all pending work on them and later
        // work follows it; the pool's temporaries are used by this graph alone, and
        // launches on one stream run in order. Initialisation: see the invariant.
        unsafe { self.exec.launch(self.stream.cuda()) }?;
        Ok(())
    }

    /// Views of the bound tensors, to refill them between replays (writable views for
    /// tensors bound as `&mut`, which cannot swap the storage the graph uses).
    pub fn bound_mut(&mut self) -> <B as BoundView<'_>>::View {
        self.bound.view()
    }

    /// The outputs, as of the last replay once the work queued so far has run (reads on any
    /// stream are ordered after it).
    pub fn outputs(&self) -> &O {
        &self.outputs
    }

    /// The statistics of the graph's private pool: what the capture allocated (outputs and
    /// temporaries, freed ones reused within the capture) and reserved from the driver. All
    /// of it goes back to the driver when the graph and its outputs are gone.
    pub fn pool_stats(&self) -> AllocatorStats {
        self.pool.allocator().stats()
    }

    /// The stream the graph was captured and replays on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Destroys the executable graph and gives back the bound borrows and the outputs (their
    /// memory stays in the graph's private pool, freed when the last of them drops).
    pub fn into_parts(self) -> (B, O) {
        let Graph {
            exec,
            bound,
            outputs,
            stream: _,
            pool: _,
        } = self;
        // A launch still running completes before the driver releases the graph.
        drop(exec);
        (bound, outputs)
    }
}

impl<B: Bound, O: Outputs> fmt::Debug for Graph<B, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("stream", &self.stream)
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

/// Orders every bound buffer and output on `stream` (a write for `&mut` and outputs, a read
/// for `&` bindings), as a launch orders its operands.
fn order_all<B: BoundBuffers, O: OutputBuffers>(
    op: &'static str,
    bound: &mut B,
    outputs: &mut O,
    stream: &Stream,
) -> Result<(), Error> {
    let mut slots = Vec::new();
    bound.slots(&mut slots);
    for slot in slots {
        match slot {
            Slot::Read(b) => b.order_read(op, stream)?,
            Slot::Write(b) => b.order_write(op, stream)?,
        }
    }
    let mut outs = Vec::new();
    outputs.buffers(&mut outs);
    for o in outs {
        o.order_write(op, stream)?;
    }
    Ok(())
}

/// Undoes an open capture on every path out of [`Gpu::capture`], a panic included: ends the
/// driver's capture (discarding the graph unless taken), clears this thread's state and the
/// stream's and GPU's marks.
struct CaptureGuard<'g> {
    gpu: &'g Gpu,
    stream: Stream,
    pool: Arc<GraphPool>,
    /// Whether the driver's capture is still open.
    capturing: bool,
    /// Whether this thread's capture state and the marks are cleared.
    closed: bool,
    /// Whether the graph ran once and the pool was released (otherwise the drop poisons it).
    succeeded: bool,
}

impl CaptureGuard<'_> {
    /// Ends the driver's capture and returns its graph.
    fn end(&mut self) -> Result<CapturedGraph, GpuError> {
        self.capturing = false;
        driver::end_capture(self.stream.cuda())
    }

    /// Clears this thread's capture state and the stream's and GPU's marks (once).
    fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            drop(active::close());
            self.stream.set_capture_owner(0);
            self.gpu.release_capture();
        }
    }

    /// The graph ran once: the pool's buffers hold computed values; release it.
    fn succeed(&mut self) {
        self.succeeded = true;
        self.pool.release_owner();
    }
}

impl Drop for CaptureGuard<'_> {
    fn drop(&mut self) {
        if self.capturing {
            // Discards whatever was recorded (an invalidated capture gives an error and no
            // graph; either way the stream leaves capture mode).
            let _ = self.end();
        }
        self.close();
        if !self.succeeded {
            self.pool.poison();
        }
    }
}

impl Gpu {
    /// Records the GPU work of `f` into a CUDA graph, runs it once, and returns the graph to
    /// replay (PyTorch's `torch.cuda.graph`).
    ///
    /// `bound` is the tensors the graph works on and the caller refills between replays: a
    /// `&mut Tensor<T, Gpu>` (read and written), a `&Tensor<T, Gpu>` (only read), or a tuple
    /// of them. `f` gets [views](BoundView) of them, runs ops (eager and fused, allocating
    /// temporaries as it likes) on this GPU's default stream, and returns the outputs, which
    /// the graph owns ([`Outputs`]). The graph borrows `bound` for its whole life, so a bound
    /// tensor cannot be freed, moved or replaced while it can replay (a compile error).
    ///
    /// Errors (the capture is ended and discarded, nothing recorded runs, the stream stays
    /// usable):
    /// - [`GpuError::NotCapturable`]: `f` copied to or from the host, synchronised, used
    ///   events or another stream, or used a tensor neither bound nor allocated inside it
    ///   (also: a capture already open on this thread);
    /// - [`GpuError::CaptureInProgress`]: another thread is capturing on this GPU handle;
    /// - [`GpuError::CaptureEscape`]: a tensor allocated inside `f` is alive outside the
    ///   outputs (sent away or stashed);
    /// - `f`'s own error, a bound tensor of another GPU ([`GpuError::DeviceMismatch`]), driver
    ///   errors.
    pub fn capture<B, O, F>(&self, mut bound: B, f: F) -> Result<Graph<B, O>, Error>
    where
        B: Bound,
        O: Outputs,
        F: for<'v> FnOnce(<B as BoundView<'v>>::View) -> Result<O, Error>,
    {
        const OP: &str = "Gpu::capture";
        if state::capturing_here() {
            return Err(GpuError::NotCapturable {
                op: OP,
                reason: "a capture is already open on this thread (captures do not nest)",
            }
            .into());
        }
        let me = state::token();
        if !self.claim_capture(me) {
            return Err(GpuError::CaptureInProgress { op: OP }.into());
        }
        // A new stream: nobody else holds it, so no other thread can queue work on it and
        // nothing but this capture can be recorded into it (docs/GRAPHS.md).
        let stream = match self.take_capture_stream() {
            Ok(stream) if !driver::is_capturing(stream.cuda()).unwrap_or(true) => stream,
            Ok(_) => {
                self.release_capture();
                return Err(GpuError::CaptureInProgress { op: OP }.into());
            }
            Err(e) => {
                self.release_capture();
                return Err(e.into());
            }
        };
        // From here on the guard releases the claim on every path.
        let pool = Arc::new(GraphPool::new(Arc::clone(self.context()), me));
        let mut guard = CaptureGuard {
            gpu: self,
            stream: stream.clone(),
            pool: Arc::clone(&pool),
            capturing: false,
            // `open` below has not run yet, but closing is harmless: `active::close` returns
            // nothing for a thread with no capture, and the marks are ours (claimed above).
            closed: false,
            succeeded: false,
        };

        // Order the capture stream after pending work on the bound tensors now, so that no
        // wait on another stream is needed inside the capture, and note their addresses.
        let mut ranges = Vec::new();
        {
            let mut slots = Vec::new();
            bound.slots(&mut slots);
            for slot in slots {
                let (gpu, addr, writable) = match &slot {
                    Slot::Read(b) => (b.gpu(), b.addr(), false),
                    Slot::Write(b) => (b.gpu(), b.addr(), true),
                };
                if gpu.ordinal() != self.ordinal() {
                    return Err(GpuError::DeviceMismatch {
                        op: OP,
                        lhs: self.ordinal(),
                        rhs: gpu.ordinal(),
                    }
                    .into());
                }
                match slot {
                    Slot::Read(b) => b.order_read(OP, &stream)?,
                    Slot::Write(b) => b.order_write(OP, &stream)?,
                }
                ranges.push(BoundRange { addr, writable });
            }
        }

        active::open(Active {
            stream: stream.id(),
            pool: Arc::clone(&pool),
            bound: ranges,
        })?;
        stream.set_capture_owner(me);
        driver::begin_capture(stream.cuda())?;
        guard.capturing = true;

        let result = f(bound.view());
        let recorded = guard.end();
        // Back to eager work on this thread. The pool stays owned by this thread until the
        // graph has run once (below), so nobody can read its buffers before that; on any
        // error return the guard poisons it.
        guard.close();
        let mut outputs = result?;
        let mut graph = recorded?;

        // Escape check: every live buffer of the pool must be one of the outputs.
        let mut outs = Vec::new();
        outputs.buffers(&mut outs);
        let id = pool_id(&pool);
        let owned = outs
            .iter()
            .filter(|o| o.addr() != 0 && o.in_pool(id))
            .count();
        drop(outs);
        let live = pool.allocator().stats().allocations.current;
        let exec = graph.instantiate()?;
        drop(graph);
        let mut graph = Graph {
            exec,
            bound,
            outputs,
            stream,
            pool,
        };
        // The first run: outputs (and any escaped buffer) hold computed values from now on.
        graph.replay()?;
        guard.succeed();
        if live != owned {
            // Run once so escaped buffers hold what the closure computed, then discard the
            // graph so that no replay overwrites them.
            drop(graph);
            return Err(GpuError::CaptureEscape {
                escaped: live.saturating_sub(owned),
            }
            .into());
        }
        Ok(graph)
    }
}

static_assertions::assert_impl_all!(Graph<(), ()>: Send, Sync);
