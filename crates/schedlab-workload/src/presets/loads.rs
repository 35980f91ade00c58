//! The background loads interbench runs beside its benchmarked task — interbench.c's
//! `emulate_burn`, `emulate_write` and `emulate_read` — shared by every preset that measures
//! something beside a load (interbench, cyclictest). Each runs until `stop` says so.

use crate::context::{Context, IoKind, WorkloadError};
use std::time::Duration;

/// Bytes per read or write, as the original's `st_blksize` blocks.
pub(super) const IO_BLOCK: usize = 4096;
/// CPU burned between two looks at the clock by a burn load: longer than a 250 Hz tick, so that
/// reading the CPU clock (which makes the kernel account the thread at once) does not end its
/// slices sooner than a plain loop's, as the original's burn loop is.
pub(super) const BURN_CHUNK: Duration = Duration::from_millis(10);

/// `emulate_burn`: compute until `stop`.
pub(super) async fn burn<C: Context>(ctx: &C, stop: impl Fn() -> bool) {
    while !stop() {
        ctx.compute(BURN_CHUNK).await;
    }
}

/// `emulate_write`: write a file of `io_size` bytes block by block, then start over, until
/// `stop`; the file is truncated at the end.
pub(super) async fn write<C: Context>(
    ctx: &C,
    io_size: usize,
    stop: impl Fn() -> bool,
) -> Result<(), WorkloadError> {
    'outer: loop {
        for _ in 0..io_size / IO_BLOCK {
            ctx.io(IoKind::Write, IO_BLOCK).await?;
            if stop() {
                break 'outer;
            }
        }
        ctx.io(IoKind::Truncate, 0).await?;
    }
    ctx.io(IoKind::Truncate, 0).await
}

/// `emulate_read`: create a file of `io_size` bytes, then read it block by block, over and
/// over, until `stop`; the file is truncated at the end.
pub(super) async fn read<C: Context>(
    ctx: &C,
    io_size: usize,
    stop: impl Fn() -> bool,
) -> Result<(), WorkloadError> {
    let mut left = io_size;
    while left > 0 && !stop() {
        let n = left.min(1 << 20);
        ctx.io(IoKind::Write, n).await?;
        left -= n;
    }
    while !stop() {
        ctx.io(IoKind::Read, IO_BLOCK).await?;
    }
    ctx.io(IoKind::Truncate, 0).await
}
