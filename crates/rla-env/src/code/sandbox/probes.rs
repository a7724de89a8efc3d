//! What the sandbox asks of the kernel, probed once (seccomp, Landlock's ABI, the namespaces a
//! run can unshare), and the descriptors a run must not inherit.

#[cfg(target_os = "linux")]
use std::os::unix::process::CommandExt;
#[cfg(target_os = "linux")]
use std::process::{Command, Stdio};

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub(super) fn probe_seccomp() -> bool {
    super::seccomp::probe()
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub(super) fn probe_seccomp() -> bool {
    false // the filter is written for Linux's x86-64 and aarch64 system calls
}

/// Marks every descriptor above 2 close-on-exec (between fork and exec, raw system calls only),
/// so that none the caller left open (`exec 7<>secret`) reaches the program: Landlock checks
/// `open()`, not descriptors a process inherits. `close_range` where the kernel has
/// `CLOSE_RANGE_CLOEXEC` (Linux 5.11), else one `fcntl` per descriptor up to the descriptor limit
/// (at most 2^20). What the harness needs until exec (the pipe through which a failed exec
/// reports back) is close-on-exec already.
pub(super) fn cloexec_above_stderr() {
    #[cfg(target_os = "linux")]
    {
        let r = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if r == 0 {
            return;
        }
    }
    let max = match unsafe { libc::sysconf(libc::_SC_OPEN_MAX) } {
        n if n > 0 => n.min(1 << 20) as libc::c_int,
        _ => 1 << 16,
    };
    for fd in 3..max {
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn landlock_abi() -> Option<i32> {
    None // Landlock is Linux's
}

#[cfg(not(target_os = "linux"))]
pub(super) fn probe_unshare(_root: bool, _net: bool, _pid: bool) -> bool {
    false // namespaces are Linux's
}

#[cfg(target_os = "linux")]
pub(super) fn landlock_abi() -> Option<i32> {
    // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    (v > 0).then_some(v as i32)
}

#[cfg(target_os = "linux")]
pub(super) fn namespace_flags(root: bool, net: bool, pid: bool) -> nix::sched::CloneFlags {
    use nix::sched::CloneFlags;
    let mut flags = CloneFlags::empty();
    if !root && (net || pid) {
        flags |= CloneFlags::CLONE_NEWUSER;
    }
    if net {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if pid {
        flags |= CloneFlags::CLONE_NEWPID;
    }
    flags
}

#[cfg(target_os = "linux")]
pub(super) fn probe_unshare(root: bool, net: bool, pid: bool) -> bool {
    // A throwaway child tries the same unshare the runs will do.
    let mut c = Command::new("/bin/true");
    let flags = namespace_flags(root, net, pid);
    unsafe {
        c.pre_exec(move || nix::sched::unshare(flags).map_err(std::io::Error::from));
    }
    c.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}
