//! The one bounded reader for files that come from a user or a server (configs, adapters,
//! tokenizers, games, tasks, workbooks, run state): a file is read only if it is a regular file
//! (a FIFO would block, a device such as `/dev/zero` never ends) and only up to a limit, so a
//! symlink to `/dev/zero` or a file grown past all reason is a clear error, never memory without
//! bound.
//!
//! Also [`catch_quiet`]: a library call that may panic on hostile input, its panic caught at that
//! call and turned into an error (without the panic's message on stderr).

use std::io::Read;
use std::path::Path;

/// The default limit of [`read`] and [`read_to_string`]: 64 MiB, far above any config, adapter
/// config, tokenizer, game or task file the project reads.
pub const MAX_BYTES: u64 = 64 << 20;

fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes & ((1 << 20) - 1) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// Refuses a path that is not a regular file (following symlinks): a FIFO, a socket, a device or
/// a folder. The error says what it is.
pub fn check_regular(path: &Path) -> std::io::Result<()> {
    let m = std::fs::metadata(path)?;
    regular(&m)
}

fn regular(m: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_file() {
        return Ok(());
    }
    let what = if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a file"
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("is {what}, not a regular file"),
    ))
}

/// Opens a regular file for reading; anything else (a FIFO, a device, a folder) is refused
/// before it is opened, so opening never blocks.
pub fn open(path: &Path) -> std::io::Result<std::fs::File> {
    check_regular(path)?;
    let f = std::fs::File::open(path)?;
    // the path may have changed between the check and the open
    regular(&f.metadata()?)?;
    Ok(f)
}

/// Reads a regular file of at most `limit` bytes whole.
pub fn read_limited(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let f = open(path)?;
    let mut out = Vec::new();
    f.take(limit.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "is larger than {}, the most read from such a file",
                human(limit)
            ),
        ));
    }
    Ok(out)
}

/// Reads a regular file whole whose size, as its metadata gives it, is at most `limit`: the size
/// is checked before anything is read (a file far larger than memory is refused at once, not
/// read up to the limit), and the file is read to that size only.
pub fn read_sized(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let f = open(path)?;
    let len = f.metadata()?.len();
    if len > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "is {}, larger than {}, the most read from such a file",
                human(len),
                human(limit)
            ),
        ));
    }
    let mut out = Vec::with_capacity(len as usize);
    f.take(len.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 != len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "changed size while it was read",
        ));
    }
    Ok(out)
}

/// Reads a regular file of at most [`MAX_BYTES`] whole.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    read_limited(path, MAX_BYTES)
}

/// Reads a regular UTF-8 file of at most `limit` bytes whole.
pub fn read_to_string_limited(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read_limited(path, limit)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// Reads a regular UTF-8 file of at most [`MAX_BYTES`] whole.
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    read_to_string_limited(path, MAX_BYTES)
}

/// Reads a UTF-8 file named on the command line (`--config`, a corpus, a program), of at most
/// `limit` bytes: a regular file, or a pipe or device the user names (`--config <(…)`), read only
/// up to the limit, so `/dev/zero` is an error, not memory without bound. A folder is refused.
/// Files found inside folders, or named by a server's client, use [`read_to_string`], which takes
/// regular files only.
pub fn read_arg_to_string(path: &Path, limit: u64) -> std::io::Result<String> {
    if std::fs::metadata(path)?.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "is a folder, not a file",
        ));
    }
    let mut out = Vec::new();
    std::fs::File::open(path)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "is larger than {}, the most read from such a file",
                human(limit)
            ),
        ));
    }
    String::from_utf8(out).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, a call into a library that may panic on hostile input; a panic is caught and
/// returned as its message. The panic hook stays silent for panics inside `f` on this thread
/// (other threads' panics still print).
pub fn catch_quiet<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                previous(info)
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    r.map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_refused_before_it_is_read() {
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
    }

    #[test]
    fn a_symlink_to_a_device_is_refused() {
        let d = std::env::temp_dir().join(format!("rla-core-file-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let l = d.join("config.json");
        let _ = std::fs::remove_file(&l);
        std::os::unix::fs::symlink("/dev/zero", &l).unwrap();
        let e = read_to_string(&l).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = std::env::temp_dir().join(format!("rla-core-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("result.xlsx");
        let _ = std::fs::remove_file(&p);
        let ok = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        let e = read(&p).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let e = open(&p).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_at_it_read() {
        let d = std::env::temp_dir().join(format!("rla-core-big-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("f");
        std::fs::write(&p, vec![b'x'; 100]).unwrap();
        assert_eq!(read_limited(&p, 100).unwrap().len(), 100);
        let e = read_limited(&p, 99).unwrap_err();
        assert!(e.to_string().contains("larger than 99 bytes"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_sized_read_checks_the_size_before_reading() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        // a sparse file: a terabyte by its metadata, nothing on disk
        std::fs::File::create(&p).unwrap().set_len(1 << 40).unwrap();
        let e = read_sized(&p, 1 << 30).unwrap_err();
        assert!(e.to_string().contains("larger than 1024 MiB"), "{e}");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(read_sized(&p, 3).unwrap(), b"abc");
        let zero = d.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read_sized(&zero, u64::MAX).unwrap_err();
        assert!(
            e.to_string().contains("a device, not a regular file"),
            "{e}"
        );
    }

    #[test]
    fn a_file_named_on_the_command_line_may_be_a_pipe_but_is_bounded() {
        let e = read_arg_to_string(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("larger than 1 MiB"), "{e}");
        let mut child = std::process::Command::new("sh")
            .args(["-c", "echo 'arch = 1'"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // the pipe's reading end, as `<(…)` names it
        let fd = {
            use std::os::fd::AsRawFd;
            child.stdout.as_ref().unwrap().as_raw_fd()
        };
        let p = format!("/proc/self/fd/{fd}");
        assert_eq!(
            read_arg_to_string(Path::new(&p), 1 << 20).unwrap(),
            "arch = 1\n"
        );
        child.wait().unwrap();
        let e = read_arg_to_string(Path::new("/"), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("a folder"), "{e}");
    }

    #[test]
    fn a_panic_is_caught_as_its_message() {
        let r: Result<u64, String> = catch_quiet(|| {
            let zero = std::hint::black_box(0u64);
            10 / zero
        });
        assert!(r.unwrap_err().contains("divide by zero"));
        assert_eq!(catch_quiet(|| 3).unwrap(), 3);
    }
}

/// Writes bytes to `path` through a temporary file beside it (named for this process, so two
/// writers never share one) and a rename, so a crash or a kill never leaves a torn file. Errors
/// name the file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let named = |p: &Path, e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
    };
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: not a file name", path.display()),
        )
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    std::fs::write(&tmp, bytes).map_err(|e| named(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        named(path, e)
    })
}

#[cfg(test)]
mod atomic_tests {
    use super::write_atomic;

    #[test]
    fn writes_whole_files_and_names_the_failing_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        // no temporary file is left beside it
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        let e = write_atomic(&d.path().join("missing/b.json"), b"x").unwrap_err();
        assert!(e.to_string().contains("b.json"), "{e}");
    }
}
