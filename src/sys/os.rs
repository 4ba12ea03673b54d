//! Operating-system calls the engine needs that have no safe std equivalent.

/// Sets the calling thread's nice value (Linux: per thread). Synthesis threads run a little
/// below the GPU backend's host threads, so that a GPU call's CPU share is not starved by
/// synthesis on a fully loaded host.
pub fn set_thread_nice(nice: i32) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls with no pointers; gettid names the calling thread.
        let rc = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, nice)
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = nice;
        Ok(())
    }
}

/// Whether process `pid` may still be running: false only where it is known to be gone (Linux:
/// no `/proc/<pid>`); true elsewhere, so that nothing of a live process is taken for stale.
pub fn process_may_run(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        true
    }
}

/// Takes an exclusive advisory lock on `file` (BSD `flock`) without waiting: true where taken
/// (held until the file is closed), false where another open file description holds one (a
/// writer in any process, whatever its PID namespace, on this host or, where the filesystem
/// passes locks on, another).
pub fn try_lock_exclusive(file: &std::fs::File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a valid open descriptor for the duration of the call; flock has no other
        // preconditions.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        true
    }
}

/// CPU time (user + system) this process has used so far, all threads together.
pub fn process_cpu_time() -> std::time::Duration {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole rusage into the buffer we own; on failure it is left
    // zeroed, which reads as no time.
    let ru = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr());
        ru.assume_init()
    };
    let tv = |t: libc::timeval| {
        std::time::Duration::new(
            t.tv_sec.max(0) as u64,
            (t.tv_usec.clamp(0, 999_999) as u32) * 1000,
        )
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Asks the kernel to back the spare capacity of `v` with transparent huge pages (where the
/// system allows it: `madvise` or `always` mode), before it is first written. A partition's
/// vectors are hundreds of MB, fresh from mmap each time; 2 MiB pages cut the page faults of
/// their first touch 512-fold. Advice only: nothing changes where the kernel declines.
pub fn advise_huge_pages<T>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < 2 * HUGE {
            return;
        }
        let start = v.as_mut_ptr() as usize;
        let lo = start.div_ceil(HUGE) * HUGE;
        let hi = (start + bytes) / HUGE * HUGE;
        if hi > lo {
            // SAFETY: the range lies inside the vector's own allocation, which stays alive
            // for the call; MADV_HUGEPAGE changes no contents, only how pages are backed.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = v;
    }
}
