//! The report's plots draw their text with the bundled font (pure Rust, no system fonts).

use rla_train::plots::{line_chart, line_chart_rgb, Series, PLOT_SIZE};

fn series() -> Vec<Series> {
    vec![
        (
            "train rollouts".into(),
            (1..=12).map(|i| (i as f64, 0.03 * i as f64)).collect(),
        ),
        (
            "eval OOD".into(),
            vec![(0.0, 0.06), (6.0, 0.06), (12.0, 0.05)],
        ),
    ]
}

/// Pixels in rows `rows` and columns `cols` that are dark (text and lines are, the background is
/// white).
fn dark_pixels(rgb: &[u8], rows: std::ops::Range<u32>, cols: std::ops::Range<u32>) -> usize {
    let w = PLOT_SIZE.0;
    rows.flat_map(|y| cols.clone().map(move |x| ((y * w + x) * 3) as usize))
        .filter(|&i| rgb[i] < 128 && rgb[i + 1] < 128 && rgb[i + 2] < 128)
        .count()
}

#[test]
fn the_caption_and_the_axis_label_are_drawn() {
    let with = line_chart_rgb("Success", "success rate", &series(), (0.0, 1.0)).unwrap();
    let without = line_chart_rgb("", "", &series(), (0.0, 1.0)).unwrap();
    assert_ne!(with, without, "the title and label changed no pixel");
    // the caption: centred in the top strip, above the plotting area
    let caption = dark_pixels(&with, 0..36, 250..470);
    assert!(caption > 100, "{caption} dark pixels in the caption strip");
    assert_eq!(dark_pixels(&without, 0..36, 250..470), 0);
    // the y label: rotated, in the leftmost columns
    let label = dark_pixels(&with, 60..380, 0..30);
    assert!(label > 50, "{label} dark pixels in the y-label strip");
    assert!(label > dark_pixels(&without, 60..380, 0..30) + 50);
}

#[test]
fn line_chart_writes_a_png_whose_title_shows() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("plots");
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("titled.png"), dir.join("untitled.png"));
    line_chart(
        &a,
        "Theorem 1: mu against the bound",
        "value",
        &series(),
        (0.0, 1.0),
    )
    .unwrap();
    line_chart(&b, "", "value", &series(), (0.0, 1.0)).unwrap();
    let (a, b) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    assert!(a.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_ne!(a, b);
}

#[test]
fn no_system_font_library_is_in_the_dependency_graph() {
    let lock =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock")).unwrap();
    for name in [
        "font-kit",
        "yeslogic-fontconfig-sys",
        "servo-fontconfig",
        "servo-fontconfig-sys",
        "freetype",
        "freetype-sys",
    ] {
        assert!(
            !lock.contains(&format!("name = \"{name}\"\n")),
            "{name} is in Cargo.lock"
        );
    }
}

#[test]
fn the_legend_sits_in_its_own_panel_beside_the_data() {
    let with = line_chart_rgb("Success", "success rate", &series(), (0.0, 1.0)).unwrap();
    let none: Vec<Series> = vec![("never measured".into(), vec![])];
    let without = line_chart_rgb("Success", "success rate", &none, (0.0, 1.0)).unwrap();
    // the names are written right of the plot, where nothing else is drawn
    let panel = dark_pixels(&with, 40..140, 700..PLOT_SIZE.0);
    assert!(panel > 100, "{panel} dark pixels in the legend panel");
    assert_eq!(dark_pixels(&without, 0..PLOT_SIZE.1, 670..PLOT_SIZE.0), 0);
}

#[test]
fn counts_are_labelled_as_whole_numbers() {
    let counts: Vec<Series> = vec![("accepted".into(), vec![(1.0, 0.0), (8.0, 9.0)])];
    let whole = line_chart_rgb("Accepted", "tasks", &counts, (0.0, 10.0)).unwrap();
    // the same ticks on a range that is not whole: labelled `1.0`, `2.0`, …
    let frac = line_chart_rgb("Accepted", "tasks", &counts, (0.0, 10.000001)).unwrap();
    let (w, f) = (
        dark_pixels(&whole, 0..PLOT_SIZE.1 - 40, 0..64),
        dark_pixels(&frac, 0..PLOT_SIZE.1 - 40, 0..64),
    );
    assert!(w > 50, "{w} dark pixels: labels drawn");
    assert!(
        w + 40 < f,
        "whole labels {w} dark pixels, with decimals {f}"
    );
}
