//! Memory facts: this process's resident set, and how much memory a new model may take.

/// Resident set size of this process, in bytes (Linux: /proc/self/statm).
pub fn process_rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let resident_pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(resident_pages * page_size())
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096)
}

/// Memory a new allocation can use without swapping: the kernel's MemAvailable, further limited
/// by the cgroup's limit when running in a container. `None` where neither is known.
pub fn available_memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let mem_available = meminfo
        .as_deref()
        .and_then(|m| meminfo_field(m, "MemAvailable:"));
    let cgroup = cgroup_headroom();
    match (mem_available, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

fn meminfo_field(meminfo: &str, field: &str) -> Option<u64> {
    meminfo
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Limit minus usage of this process's memory cgroup (v2, then v1).
fn cgroup_headroom() -> Option<u64> {
    if let (Some(max), Some(current)) = (
        read_u64("/sys/fs/cgroup/memory.max"),
        read_u64("/sys/fs/cgroup/memory.current"),
    ) {
        return Some(max.saturating_sub(current));
    }
    let limit = read_u64("/sys/fs/cgroup/memory/memory.limit_in_bytes")?;
    let usage = read_u64("/sys/fs/cgroup/memory/memory.usage_in_bytes")?;
    // v1 reports "no limit" as a huge number.
    if limit >= (1 << 60) {
        return None;
    }
    Some(limit.saturating_sub(usage))
}

/// Returns freed heap memory to the OS. glibc keeps large freed blocks in its arenas; after a
/// model is unloaded that would show as memory still held by Burrow.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_machines_memory() {
        let rss = process_rss_bytes().expect("rss on linux");
        assert!(rss > 1 << 20, "a test process uses more than 1 MiB: {rss}");
        let avail = available_memory_bytes().expect("meminfo on linux");
        assert!(avail > 0);
    }

    #[test]
    fn parses_meminfo() {
        let m =
            "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   22000000 kB\n";
        assert_eq!(meminfo_field(m, "MemAvailable:"), Some(22_000_000 * 1024));
        assert_eq!(meminfo_field(m, "Nope:"), None);
    }
}
