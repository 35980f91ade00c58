//! The real backend's executor: a task body is driven to completion on the thread that owns it.
//!
//! Every [`schedlab_workload::Context`] call of the real backend is the blocking system call
//! itself, so a body's future never suspends: one poll runs it to the end. A body that does
//! suspend awaited something that is not a context call, which is a bug in the workload.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// Run `future` to completion on this thread with a single poll.
///
/// # Panics
/// If the future returns `Pending`, i.e. awaited something other than a real-backend context call.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(out) => out,
        Poll::Pending => {
            panic!("a task body awaited something that is not a schedlab context call")
        }
    }
}
