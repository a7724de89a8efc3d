//! Who a sandboxed program runs as and where: unprivileged uids taken from a pool and given back,
//! its processes reaped by uid, and its folders named after this process so that the next sandbox
//! removes those a killed process left.

use super::*;

/// Uids that programs run under when the sandbox runs as root: one block of [`UID_BLOCK`] per
/// process, shared by all its sandboxes; a uid is used by one program at a time and its processes
/// are killed afterwards. A process claims its block by a lock on a file of the block's own
/// ([`claim_uid_block`]), held until it exits, so that concurrent processes on one machine never
/// share a block.
pub(super) const UID_BASE: u32 = 200_000;

pub(super) const UID_BLOCK: u32 = 256;

/// How many blocks there are.
pub(super) const UID_BLOCKS: u32 = 10_000;

/// Where the blocks' lock files lie (root's: only a sandbox running as root switches uids).
const UID_LOCKS: &str = "/tmp/.rla-sandbox-uid-blocks";

pub(super) static UID_POOL: Mutex<Option<Vec<u32>>> = Mutex::new(None);

/// The lock files of the blocks this process holds; closed (and so released) at its exit.
static HELD_BLOCKS: Mutex<Vec<std::fs::File>> = Mutex::new(Vec::new());

/// Claims a block of uids no other live process holds: the first block, from one chosen by the
/// pid, whose lock file this process can lock. Falls back on the pid's block when locks cannot
/// be taken at all (no such folder can be made).
pub(super) fn claim_uid_block() -> u32 {
    let first = std::process::id() % UID_BLOCKS;
    if let Some(b) = lock_a_block(Path::new(UID_LOCKS), first) {
        return UID_BASE + b * UID_BLOCK;
    }
    UID_BASE + first * UID_BLOCK
}

/// The index of the block locked in `dir`, trying blocks from `first` on.
pub(super) fn lock_a_block(dir: &Path, first: u32) -> Option<u32> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    use std::os::unix::io::AsRawFd;
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    for k in 0..UID_BLOCKS {
        let b = (first + k) % UID_BLOCKS;
        let Ok(f) = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(dir.join(format!("block-{b}.lock")))
        else {
            return None;
        };
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            HELD_BLOCKS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(f);
            return Some(b);
        }
    }
    None
}

pub(super) fn take_pool_uid() -> u32 {
    loop {
        {
            let mut g = UID_POOL.lock().unwrap_or_else(|e| e.into_inner());
            let pool = g.get_or_insert_with(|| {
                let base = claim_uid_block();
                (base..base + UID_BLOCK).rev().collect()
            });
            if let Some(u) = pool.pop() {
                return u;
            }
        }
        // More concurrent runs than uids: wait for one to finish.
        std::thread::sleep(Duration::from_millis(2));
    }
}

pub(super) fn give_back_uid(u: u32) {
    reap_uid(u);
    if let Some(p) = UID_POOL.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        p.push(u);
    }
}

/// The folders of the sandboxes alive in this process, for [`remove_live_folders`].
pub(super) static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A sandbox's temporary folder: removed when the last clone of its sandbox is dropped, or by
/// [`remove_live_folders`] when the process is interrupted.
pub(super) struct BaseDir(tempfile::TempDir);

/// Removes the temporary folders of every sandbox still alive in this process. For a signal
/// handler (Ctrl-C) or an exit that skips destructors; sandboxes used afterwards fail to run.
pub fn remove_live_folders() {
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for p in live {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// The folder-name prefix of a sandbox started by process `pid`.
pub(super) fn folder_prefix(pid: u32) -> String {
    format!("rla-sandbox-{pid}-")
}

/// Removes the temporary folders that sandboxes of processes no longer running left behind (a
/// process killed with SIGKILL cannot remove its own). Only folders named after a process id
/// that no longer exists are touched.
pub(super) fn remove_orphaned_folders(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("rla-sandbox-")) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if pid <= 0 || pid as u32 == std::process::id() {
            continue;
        }
        let gone = matches!(
            nix::sys::signal::kill(Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        if gone {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Whether any process runs under `uid` (the owner of `/proc/PID` is the process's uid).
#[cfg(target_os = "linux")]
pub(super) fn uid_has_processes(uid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return true;
    };
    rd.flatten().any(|e| {
        e.file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            && e.metadata().is_ok_and(|m| m.uid() == uid)
    })
}

/// Kills every process left under a pool uid (children that left the process group). Pool uids
/// are only used on Linux.
#[cfg(not(target_os = "linux"))]
pub(super) fn reap_uid(_uid: u32) {}

/// Kills every process left under a pool uid (children that left the process group).
#[cfg(target_os = "linux")]
pub(super) fn reap_uid(uid: u32) {
    if !uid_has_processes(uid) {
        return;
    }
    let mut c = Command::new("/bin/true");
    // kill(-1) from a process of that uid reaches exactly that uid's processes.
    unsafe {
        c.pre_exec(move || {
            nix::unistd::setgroups(&[]).map_err(std::io::Error::from)?;
            nix::unistd::setgid(Gid::from_raw(uid)).map_err(std::io::Error::from)?;
            nix::unistd::setuid(Uid::from_raw(uid)).map_err(std::io::Error::from)?;
            let _ = nix::sys::signal::kill(Pid::from_raw(-1), Signal::SIGKILL);
            Ok(())
        });
    }
    let _ = c.stdout(Stdio::null()).stderr(Stdio::null()).status();
}

impl BaseDir {
    pub(super) fn register(d: tempfile::TempDir) -> BaseDir {
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(d.path().to_path_buf());
        BaseDir(d)
    }

    pub(super) fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for BaseDir {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|p| p != self.0.path());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_claims_never_share_a_block() {
        let dir = tempfile::tempdir().unwrap();
        let a = lock_a_block(dir.path(), 7).unwrap();
        let b = lock_a_block(dir.path(), 7).unwrap();
        assert_eq!(a, 7);
        assert_ne!(a, b, "a block held by a lock is not claimed again");
        // the last block wraps round to the first
        let c = lock_a_block(dir.path(), UID_BLOCKS - 1).unwrap();
        let d = lock_a_block(dir.path(), UID_BLOCKS - 1).unwrap();
        assert_eq!((c, d), (UID_BLOCKS - 1, 0));
    }
}
