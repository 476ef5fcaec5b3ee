//! Output columns for the decoder: zeroed vectors whose pages the kernel backs with huge
//! pages where it can (Linux, transparent huge pages in `madvise` mode, as numpy asks for
//! its own large arrays). A 10M-ID decode writes 320 MB of fresh memory; in 4 KiB pages
//! the page faults cost more than the decode itself.

/// Columns smaller than this are left to the allocator as they are.
#[cfg(target_os = "linux")]
const HUGE_FROM: usize = 4 << 20;

/// `n` zeroed `u64`s, not yet touched (the allocator's calloc maps fresh pages).
pub(crate) fn zeroed_u64(n: usize) -> Vec<u64> {
    let v = vec![0u64; n];
    advise_huge(v.as_ptr().cast(), v.len() * 8);
    v
}

/// `n` zeroed `u32`s, not yet touched.
pub(crate) fn zeroed_u32(n: usize) -> Vec<u32> {
    let v = vec![0u32; n];
    advise_huge(v.as_ptr().cast(), v.len() * 4);
    v
}

/// Asks for huge pages over the whole pages inside `[start, start + len)`; advice only:
/// the contents stay as they are, and a refusal changes nothing.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn advise_huge(start: *const u8, len: usize) {
    if len < HUGE_FROM {
        return;
    }
    let page = 4096;
    let first = (start as usize).next_multiple_of(page);
    let end = (start as usize + len) & !(page - 1);
    if end <= first {
        return;
    }
    // SAFETY: the range is page-aligned and lies inside one live allocation we own;
    // MADV_HUGEPAGE changes how its pages are backed, never their contents or mapping.
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_start: *const u8, _len: usize) {}
