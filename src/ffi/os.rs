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
