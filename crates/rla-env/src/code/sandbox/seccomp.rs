//! A seccomp filter that refuses `socket(AF_UNIX, …)` (`EACCES`). Pathname sockets such as
//! `/tmp/.X11-unix/X0` (an X server without authentication) lie outside the network namespace,
//! and Landlock does not check `connect()` on them; `socketpair` stays allowed (its two ends reach
//! nothing but each other). The filter also refuses `io_uring_setup` (io_uring makes sockets
//! without the `socket` system call), `pidfd_getfd` (another process's descriptors), and system
//! calls of any other ABI (32-bit x86 on x86-64, x32), whose numbers differ.
//!
//! Everything here that runs between fork and exec is raw system calls, without allocation.
//! Linux on x86-64 and aarch64 only (the filter names their ABIs); elsewhere
//! [`super::Isolation::unix_sockets_denied`] is false.

/// `AUDIT_ARCH_*` of this build's system-call ABI.
#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xC000_00B7;

/// System-call numbers at or above this are x32's (x86-64 only; none on aarch64).
const X32_BIT: u32 = 0x4000_0000;

const fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

const LOAD: u32 = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
const JEQ: u32 = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
const JGE: u32 = libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K;
const RET: u32 = libc::BPF_RET | libc::BPF_K;
const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (e as u32 & 0xffff)
}

// struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64 each)
const NR: u32 = 0;
const ARCH_AT: u32 = 4;
/// The low 32 bits of the first argument (both ABIs here are little-endian).
const ARG0_LOW: u32 = 16;

/// The filter's program.
const PROGRAM: [libc::sock_filter; 15] = [
    /* 0 */ stmt(LOAD, ARCH_AT),
    /* 1 */ jump(JEQ, ARCH, 1, 0),
    /* 2 */ stmt(RET, errno(libc::ENOSYS)), // another ABI
    /* 3 */ stmt(LOAD, NR),
    /* 4 */ jump(JGE, X32_BIT, 8, 0), // x32 → 13
    /* 5 */ jump(JEQ, libc::SYS_socket as u32, 3, 0), // → 9
    /* 6 */ jump(JEQ, libc::SYS_io_uring_setup as u32, 7, 0), // → 14
    /* 7 */ jump(JEQ, libc::SYS_pidfd_getfd as u32, 6, 0), // → 14
    /* 8 */ stmt(RET, ALLOW),
    // socket(domain, …)
    /* 9 */ stmt(LOAD, ARG0_LOW),
    /* 10 */ jump(JEQ, libc::AF_UNIX as u32, 0, 1),
    /* 11 */ stmt(RET, errno(libc::EACCES)),
    /* 12 */ stmt(RET, ALLOW),
    /* 13 */ stmt(RET, errno(libc::ENOSYS)),
    /* 14 */ stmt(RET, errno(libc::EPERM)),
];

/// Installs the filter on the calling thread (between fork and exec). Sets `no_new_privs`, which
/// an unprivileged process needs for a filter and which Landlock sets anyway.
pub fn install() -> std::io::Result<()> {
    let prog = libc::sock_fprog {
        len: PROGRAM.len() as u16,
        filter: PROGRAM.as_ptr() as *mut libc::sock_filter,
    };
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
        ) < 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether the filter can be installed here and refuses a unix socket: a throwaway child
/// installs it and tries one.
pub fn probe() -> bool {
    use std::os::unix::process::CommandExt;
    let mut c = std::process::Command::new("/bin/true");
    unsafe {
        c.pre_exec(|| {
            install()?;
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            if fd >= 0 {
                return Err(std::io::Error::other("a unix socket was made"));
            }
            Ok(())
        });
    }
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}
