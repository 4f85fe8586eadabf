//! SQLite's page cache from one preallocated buffer (SQLITE_CONFIG_PAGECACHE), an engine option of the noise
//! remedies (dbperf/host/remedies/pagecache_buffer.py): the pages SQLite caches live in one mapping made and touched
//! before the run, in 2 MB transparent huge pages when asked, instead of wherever malloc put each one. It must be
//! configured before SQLite initialises (before the first connection); the buffer lives as long as the process.

use std::ffi::{c_int, c_void};

use serde::Serialize;

use crate::engine::sqlite::Api;

const HUGE: usize = 2 << 20;
const PAGE: usize = 4096;

#[derive(Debug, Serialize, Clone, Copy, PartialEq)]
pub struct PageCacheFacts {
    /// Slots of the buffer and each slot's bytes (SQLite's page plus its header).
    pub slots: u32,
    pub slot_bytes: u32,
    /// Whether the buffer was madvised for huge pages, and how much of it the kernel backed with them (kB).
    pub huge: bool,
    pub huge_kb: Option<u64>,
    /// SQLITE_STATUS_PAGECACHE_USED's high-water mark (slots) and SQLITE_STATUS_PAGECACHE_OVERFLOW's (bytes that
    /// did not fit and went to malloc), at the end of the run.
    pub used_slots_high: Option<i64>,
    pub overflow_bytes_high: Option<i64>,
    #[serde(skip)]
    start: usize,
}

/// Maps, aligns, advises and touches the buffer, then hands it to SQLite; the facts of what was configured.
pub fn configure(api: &Api, slots: u32, huge: bool, page_size: u32) -> Result<PageCacheFacts, String> {
    let header = api.page_cache_header_bytes()?;
    let slot_bytes = (page_size as usize + header).div_ceil(8) * 8;
    let bytes = slot_bytes * slots as usize;
    let align = if huge { HUGE } else { PAGE };
    let mapped = bytes + align;
    // SAFETY: an anonymous private mapping; checked for MAP_FAILED below. Never unmapped: SQLite keeps using it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            mapped,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(format!("page cache buffer: mmap of {mapped} bytes failed: {}", std::io::Error::last_os_error()));
    }
    let start = (base as usize).div_ceil(align) * align;
    if huge {
        // SAFETY: the range lies within the mapping just made.
        if unsafe { libc::madvise(start as *mut c_void, bytes.div_ceil(HUGE) * HUGE, libc::MADV_HUGEPAGE) } != 0 {
            return Err(format!(
                "page cache buffer: madvise(MADV_HUGEPAGE) failed: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    for offset in (0..bytes).step_by(PAGE) {
        // SAFETY: within the mapping; a write faults the page in now rather than during the measured window.
        unsafe { std::ptr::write_volatile((start + offset) as *mut u8, 0) };
    }
    api.config_page_cache(start as *mut c_void, slot_bytes as c_int, slots as c_int)?;
    Ok(PageCacheFacts {
        slots,
        slot_bytes: slot_bytes as u32,
        huge,
        huge_kb: None,
        used_slots_high: None,
        overflow_bytes_high: None,
        start,
    })
}

impl PageCacheFacts {
    /// The facts at the end of the run: SQLite's high-water marks, and the huge pages backing the buffer.
    pub fn at_end(&self, api: &Api) -> PageCacheFacts {
        PageCacheFacts {
            used_slots_high: api.status_high(1),     // SQLITE_STATUS_PAGECACHE_USED
            overflow_bytes_high: api.status_high(2), // SQLITE_STATUS_PAGECACHE_OVERFLOW
            huge_kb: if self.huge { huge_kb_at(self.start) } else { None },
            ..*self
        }
    }
}

/// AnonHugePages of the mapping that holds `address` (/proc/self/smaps), in kB.
fn huge_kb_at(address: usize) -> Option<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((lo, hi)) = range.split_once('-') {
                if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                    inside = lo <= address && address < hi;
                    continue;
                }
            }
        }
        if inside && line.starts_with("AnonHugePages:") {
            return line.split_whitespace().nth(1).and_then(|v| v.parse().ok());
        }
    }
    None
}
