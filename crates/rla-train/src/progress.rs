//! Progress bars on stderr, one style for every long piece of work.

/// A progress bar on stderr.
pub fn bar(len: u64, msg: &str) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix:>18} [{bar:30}] {pos}/{len} {elapsed} {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    b.set_prefix(msg.to_string());
    b
}
