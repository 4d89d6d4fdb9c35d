//! Caller labels for recorded allocator events: [`with_alloc_label`] and [`AllocLabel`].
//!
//! A label is a short name for the work a thread is doing ("adam step", "forward"); every
//! event the thread causes while the label is set carries it, so a plot or PyTorch's viewer
//! says which part of the program held the memory. Labels nest: inside "epoch 3" a label
//! "adam step" reads "epoch 3 / adam step".
//!
//! Reading the label costs a thread-local access and is done only while recording is on.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

thread_local! {
    /// The current thread's label, already joined with the labels around it.
    static LABEL: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// The label of the current thread, if any (`None` also while the thread is being torn
/// down).
pub(crate) fn current_label() -> Option<Arc<str>> {
    LABEL
        .try_with(|l| l.try_borrow().ok().and_then(|l| l.clone()))
        .ok()
        .flatten()
}

/// Sets the current thread's allocation label until dropped (then the previous one is back).
///
/// Not `Send`: the label belongs to the thread that set it.
///
/// ```
/// use typestate_tensor::storage::history::{AllocLabel, current_alloc_label};
///
/// let outer = AllocLabel::enter("epoch 3");
/// {
///     let _inner = AllocLabel::enter("adam step");
///     assert_eq!(current_alloc_label().as_deref(), Some("epoch 3 / adam step"));
/// }
/// assert_eq!(current_alloc_label().as_deref(), Some("epoch 3"));
/// drop(outer);
/// assert_eq!(current_alloc_label(), None);
/// ```
#[must_use = "the label is unset when this guard is dropped"]
#[derive(Debug)]
pub struct AllocLabel {
    previous: Option<Arc<str>>,
    _not_send: PhantomData<*const ()>,
}

impl AllocLabel {
    /// Sets `label` (joined to the current one, if any, with `" / "`).
    pub fn enter(label: &str) -> AllocLabel {
        let previous = LABEL
            .try_with(|l| {
                let mut l = l.try_borrow_mut().ok()?;
                let joined: Arc<str> = match l.as_deref() {
                    Some(outer) => format!("{outer} / {label}").into(),
                    None => label.into(),
                };
                l.replace(joined)
            })
            .ok()
            .flatten();
        AllocLabel {
            previous,
            _not_send: PhantomData,
        }
    }
}

impl Drop for AllocLabel {
    fn drop(&mut self) {
        let previous = self.previous.take();
        // Never panics: a thread being torn down or a borrowed cell leaves the label as is.
        let _ = LABEL.try_with(|l| {
            if let Ok(mut l) = l.try_borrow_mut() {
                *l = previous;
            }
        });
    }
}

/// Runs `f` with the current thread's allocation label set to `label` (nested in the
/// current one): every allocator event recorded meanwhile carries it.
///
/// ```
/// use typestate_tensor::storage::history::{current_alloc_label, with_alloc_label};
///
/// let seen = with_alloc_label("adam step", current_alloc_label);
/// assert_eq!(seen.as_deref(), Some("adam step"));
/// ```
pub fn with_alloc_label<R>(label: &str, f: impl FnOnce() -> R) -> R {
    let _guard = AllocLabel::enter(label);
    f()
}

/// The current thread's allocation label (nested labels joined with `" / "`), if any.
pub fn current_alloc_label() -> Option<Arc<str>> {
    current_label()
}
