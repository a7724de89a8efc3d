//! The desktop server `rlanything desktop serve-real` runs (Python: Xvfb, openbox, D-Bus and the
//! accessibility bus, LibreOffice Calc, pyautogui, AT-SPI), built into the binary: its entry
//! script and the modules it imports from its own folder.

use std::path::{Path, PathBuf};

/// Includes one file of `crates/rla-desktop/server/` as `(name, text)`.
macro_rules! server_file {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/server/", $name)),
        )
    };
}

/// The entry script's name (argument parsing, the HTTP server and its routes, start and stop).
pub const SERVER_ENTRY: &str = "desktop_server.py";

/// Every file of the server, `(name, text)`, the entry script first: `server_session.py` (the X
/// server, window manager, D-Bus, LibreOffice; the setup endpoints), `server_actions.py`
/// (pyautogui, its code checks, `/execute`), `server_accessibility.py` (the AT-SPI tree),
/// `server_files.py` (the session folder's files and path confinement) and `server_common.py`.
pub const SERVER_FILES: &[(&str, &str)] = &[
    server_file!("desktop_server.py"),
    server_file!("server_common.py"),
    server_file!("server_accessibility.py"),
    server_file!("server_files.py"),
    server_file!("server_actions.py"),
    server_file!("server_session.py"),
];

/// Writes every file of the server into `dir` (a folder of its own: the entry script imports the
/// others from there); the entry script's path.
pub fn write_server(dir: &Path) -> std::io::Result<PathBuf> {
    for (name, text) in SERVER_FILES {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(dir.join(SERVER_ENTRY))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The modules built in are the ones the entry script lists (`MODULES`: what it removes
    /// with `--remove-script`), and no file is written twice.
    #[test]
    fn the_entry_script_names_every_module() {
        assert_eq!(SERVER_FILES[0].0, SERVER_ENTRY);
        let entry = SERVER_FILES[0].1;
        let mut names: Vec<&str> = SERVER_FILES.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SERVER_FILES.len());
        let modules = entry
            .split("MODULES = (")
            .nth(1)
            .expect("MODULES in the entry script");
        let modules = &modules[..modules.find(')').unwrap()];
        let mut listed: Vec<&str> = modules
            .split(',')
            .map(|m| m.trim().trim_matches('"'))
            .filter(|m| !m.is_empty())
            .collect();
        listed.sort_unstable();
        let mut built: Vec<&str> = SERVER_FILES[1..].iter().map(|(n, _)| *n).collect();
        built.sort_unstable();
        assert_eq!(listed, built);
    }
}
