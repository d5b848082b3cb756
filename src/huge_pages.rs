//! Transparent huge pages, off for the server process.
//!
//! mimalloc asks the kernel for transparent huge pages on its memory (`MADV_HUGEPAGE`),
//! and frees memory it has not used for a while back to the kernel. Each first touch
//! of such memory then faults in a whole 2 MiB page, zeroed, and, with the kernel's
//! usual `defrag = madvise`, compacted first if no free 2 MiB page is at hand. A server
//! that allocates as it serves (sled's log buffers, request and task state) paid for
//! that in its slowest answers: measured side by side, the p99 of a W1 send at 16 and
//! 64 clients was 1.4 to 7 times as high with huge pages as without, at about the same
//! rate (docs/performance.md). `PR_SET_THP_DISABLE` turns them off for this process alone
//! (the machine's other programs keep the kernel's setting), for every fault from the
//! call on.

/// Turns transparent huge pages off for this process. A Linux kernel that cannot (one
/// before 3.15) leaves them on, with a warning; elsewhere this does nothing.
pub fn turn_off_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    match rustix::thread::disable_transparent_huge_pages(true) {
        Ok(()) => tracing::debug!("transparent huge pages are off for this process"),
        Err(error) => tracing::warn!(%error, "could not turn transparent huge pages off"),
    }
}
