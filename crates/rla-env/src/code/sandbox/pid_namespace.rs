//! The program in its own PID namespace. After `unshare(CLONE_NEWPID)` the calling process
//! stays in the old namespace and its next child is the new one's PID 1 (init); when init exits,
//! the kernel kills every other process in the namespace, so nothing the program started can
//! outlive it or hold its pipes open. Three processes:
//!
//! - the *keeper* (the harness's child, outside the namespace) waits for init and ends exactly
//!   the way the program ended, so the harness sees the program's own exit status;
//! - *init* (PID 1) gets `SIGKILL` when the keeper dies (the harness's wall-clock kill), waits
//!   for the program and hands its wait status to the keeper through a pipe;
//! - the *program* (PID 2) is an ordinary process (init would ignore signals it has no handler
//!   for, such as `SIGXCPU` at the CPU limit).
//!
//! Everything here runs between fork and exec: raw system calls only, no allocation.

use std::io::{Error, Result};

fn check(r: libc::c_int) -> Result<libc::c_int> {
    if r < 0 {
        Err(Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A raw fork: no fork handlers of the (multi-threaded) harness run in the child.
fn raw_fork() -> Result<libc::pid_t> {
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
        )
    };
    if pid < 0 {
        Err(Error::last_os_error())
    } else {
        Ok(pid as libc::pid_t)
    }
}

fn pipe() -> Result<[libc::c_int; 2]> {
    let mut fds = [0 as libc::c_int; 2];
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok(fds)
}

/// Called right after `unshare(CLONE_NEWPID)`: returns only in the program's process; the
/// keeper and init never return.
pub fn enter() -> Result<()> {
    let [alive_r, alive_w] = pipe()?; // the keeper holds the write end while it lives
    let [status_r, status_w] = pipe()?; // init writes the program's wait status
    let init = raw_fork()?;
    if init > 0 {
        keep(init, alive_w, status_r);
    }
    unsafe {
        libc::close(alive_w);
        libc::close(status_r);
    }
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) })?;
    let mut p = libc::pollfd {
        fd: alive_r,
        events: libc::POLLIN,
        revents: 0,
    };
    check(unsafe { libc::poll(&mut p, 1, 0) })?;
    if p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
        unsafe { libc::_exit(137) }; // the keeper is already gone
    }
    unsafe { libc::close(alive_r) };
    let program = raw_fork()?;
    if program > 0 {
        init_wait(program, status_w);
    }
    unsafe { libc::close(status_w) };
    Ok(())
}

/// Waits for `pid`, retrying on interruption; the wait status, or `None` if there is none.
unsafe fn wait_for(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    loop {
        let r = libc::waitpid(pid, &mut status, 0);
        if r == pid {
            return Some(status);
        }
        if r < 0 && *libc::__errno_location() != libc::EINTR {
            return None;
        }
    }
}

/// Init: waits for the program, hands its status over and exits, which ends the namespace.
fn init_wait(program: libc::pid_t, status_w: libc::c_int) -> ! {
    unsafe {
        close_all_but(status_w, status_w);
        if let Some(st) = wait_for(program) {
            let b = st.to_ne_bytes();
            libc::write(status_w, b.as_ptr().cast(), b.len());
        }
        libc::_exit(0)
    }
}

/// The keeper: waits for init, then ends with the program's status (a kill if init was
/// killed before the program ended).
fn keep(init: libc::pid_t, alive_w: libc::c_int, status_r: libc::c_int) -> ! {
    unsafe {
        // alive_w stays open until the keeper dies: init watches it
        close_all_but(alive_w.min(status_r), alive_w.max(status_r));
        let init_status = wait_for(init).unwrap_or(libc::SIGKILL);
        let mut b = [0u8; 4];
        let n = libc::read(status_r, b.as_mut_ptr().cast(), 4);
        let status = if n == 4 {
            libc::c_int::from_ne_bytes(b)
        } else {
            init_status
        };
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        let sig = if libc::WIFSIGNALED(status) {
            libc::WTERMSIG(status)
        } else {
            libc::SIGKILL
        };
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig)
    }
}

/// Closes every descriptor but `a` and `b` (`a <= b`).
unsafe fn close_all_but(a: libc::c_int, b: libc::c_int) {
    let ranges = [(0, a - 1), (a + 1, b - 1), (b + 1, libc::c_int::MAX)];
    for (lo, hi) in ranges {
        if lo > hi {
            continue;
        }
        let r = libc::syscall(
            libc::SYS_close_range,
            lo as libc::c_uint,
            hi as libc::c_uint,
            0,
        );
        if r < 0 {
            // Kernels before 5.9: close one by one up to the descriptor limit.
            let max = match libc::sysconf(libc::_SC_OPEN_MAX) {
                n if n > 0 => n.min(1 << 16) as libc::c_int,
                _ => 1024,
            };
            for fd in lo..hi.min(max) {
                libc::close(fd);
            }
        }
    }
}
