//! Who a sandboxed program runs as and where: unprivileged uids taken from a pool and given back,
//! its processes reaped by uid, and its folders named after this process so that the next sandbox
//! removes those a killed process left.

use super::*;

/// Uids that programs run under when the sandbox runs as root: one block of [`UID_BLOCK`] per
/// process (chosen by its pid, so concurrent processes do not share uids), shared by all its
/// sandboxes; a uid is used by one program at a time and its processes are killed afterwards.
pub(super) const UID_BASE: u32 = 200_000;

pub(super) const UID_BLOCK: u32 = 256;

pub(super) static UID_POOL: Mutex<Option<Vec<u32>>> = Mutex::new(None);

pub(super) fn take_pool_uid() -> u32 {
    loop {
        {
            let mut g = UID_POOL.lock().unwrap_or_else(|e| e.into_inner());
            let pool = g.get_or_insert_with(|| {
                let base = UID_BASE + (std::process::id() % 10_000) * UID_BLOCK;
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
