//! PNG plots of a run: success per split, the judge's accuracies, μ against the Theorem 1 bound
//! with the measured precision, and accepted tasks over iterations (the paper's Figure 7a).

//!
//! Text is drawn by plotters' pure-Rust `ab_glyph` renderer with a bundled font (DejaVu Sans,
//! `assets/DejaVuSans.ttf`, licence in `assets/LICENSE-DejaVu.txt`), so plotting needs no system
//! fonts and no fontconfig or freetype.

use crate::run::IterMetrics;
use anyhow::Result;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

/// DejaVu Sans 2.37, unchanged from Debian's fonts-dejavu-core.
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Registers the bundled font as plotters' `sans-serif` (the family every plot uses), once.
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            panic!("the bundled DejaVuSans.ttf is not a valid font");
        }
    });
}

/// One line: a name and (iteration, value) points.
pub type Series = (String, Vec<(f64, f64)>);

/// A plot: file, title, y label, lines, y range.
type Plot = (
    &'static str,
    &'static str,
    &'static str,
    Vec<Series>,
    (f64, f64),
);

/// Size of every plot in pixels: the plot, and its legend in a panel to the right of it.
pub const PLOT_SIZE: (u32, u32) = (900, 420);

/// The width of the plot beside its legend panel.
const PLOT_WIDTH: u32 = 660;

/// Okabe and Ito's palette, told apart by readers with any colour vision: blue, vermillion,
/// bluish green, reddish purple, orange, black. Each series also has its own marker, so the
/// plots read in grey.
const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(0, 0, 0),
];

/// Series i's colour.
fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Series i's marker at pixel offset `at` around a point: circle, triangle, square, cross,
/// diamond, ring.
fn marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    i: usize,
    (x, y): (i32, i32),
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let c = colour(i);
    let r = 4;
    match i % 6 {
        0 => area.draw(&Circle::new((x, y), r, c.filled()))?,
        1 => area.draw(&Polygon::new(
            vec![(x, y - r - 1), (x - r - 1, y + r), (x + r + 1, y + r)],
            c.filled(),
        ))?,
        2 => area.draw(&Rectangle::new(
            [(x - r, y - r), (x + r, y + r)],
            c.filled(),
        ))?,
        3 => {
            area.draw(&PathElement::new(
                vec![(x - r, y - r), (x + r, y + r)],
                c.stroke_width(2),
            ))?;
            area.draw(&PathElement::new(
                vec![(x - r, y + r), (x + r, y - r)],
                c.stroke_width(2),
            ))?;
        }
        4 => area.draw(&Polygon::new(
            vec![
                (x, y - r - 1),
                (x + r + 1, y),
                (x, y + r + 1),
                (x - r - 1, y),
            ],
            c.filled(),
        ))?,
        _ => area.draw(&Circle::new((x, y), r, c.stroke_width(2)))?,
    }
    Ok(())
}

/// The legend in its own panel beside the plot, so it never covers the data: each series'
/// line and marker, then its name.
fn legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, names: &[(usize, &str)]) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let font = ("sans-serif", 15).into_font();
    for (row, (i, name)) in names.iter().enumerate() {
        let y = 60 + 26 * row as i32;
        area.draw(&PathElement::new(
            vec![(8, y), (36, y)],
            colour(*i).stroke_width(2),
        ))?;
        marker(area, *i, (22, y))?;
        area.draw(&Text::new(name.to_string(), (44, y - 8), font.clone()))?;
    }
    Ok(())
}

/// Draws line series into a PNG of [`PLOT_SIZE`].
pub fn line_chart(
    path: &Path,
    title: &str,
    y_label: &str,
    series: &[Series],
    y_range: (f64, f64),
) -> Result<()> {
    let rgb = line_chart_rgb(title, y_label, series, y_range)?;
    write_png(path, &rgb)
}

/// Writes an RGB buffer of [`PLOT_SIZE`] as a PNG file (atomically).
pub fn write_png(path: &Path, rgb: &[u8]) -> Result<()> {
    let mut bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut bytes, PLOT_SIZE.0, PLOT_SIZE.1);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header()?;
        w.write_image_data(rgb)?;
    }
    Ok(rla_lm::write_atomic(path, &bytes)?)
}

/// An RGB buffer of [`PLOT_SIZE`] that `draw` has drawn on.
fn rgb_of(
    draw: impl FnOnce(DrawingArea<BitMapBackend<'_>, Shift>) -> Result<()>,
) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; (PLOT_SIZE.0 * PLOT_SIZE.1 * 3) as usize];
    draw(BitMapBackend::with_buffer(&mut buf, PLOT_SIZE).into_drawing_area())?;
    Ok(buf)
}

/// Draws line series into an RGB buffer of [`PLOT_SIZE`] (3 bytes a pixel, row by row).
pub fn line_chart_rgb(
    title: &str,
    y_label: &str,
    series: &[Series],
    y_range: (f64, f64),
) -> Result<Vec<u8>> {
    rgb_of(|area| draw_chart(area, title, y_label, series, y_range))
}

/// Whether a y range holds counts, labelled as whole numbers: whole ends five or more apart.
fn counts((lo, hi): (f64, f64)) -> bool {
    hi - lo >= 5.0 && lo.fract() == 0.0 && hi.fract() == 0.0
}

/// The white canvas, caption, axes and mesh every plot shares, over iterations `0..x_max`.
fn axes<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    x_max: f64,
    y_range: (f64, f64),
) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>>
where
    DB::ErrorType: 'static,
{
    register_font();
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(52)
        .build_cartesian_2d(0f64..x_max, y_range.0..y_range.1)?;
    // iterations are whole numbers: a tick at each (at most ten), labelled without decimals
    let ticks = (x_max.round() as usize + 1).clamp(2, 11);
    let whole = |x: f64| {
        if (x - x.round()).abs() < 1e-6 {
            format!("{}", x.round() as i64)
        } else {
            String::new()
        }
    };
    let label = |x: &f64| whole(*x);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc("iteration")
        .y_desc(y_label)
        .x_labels(ticks)
        .x_label_formatter(&label);
    // counts (a range of five or more): whole-number labels too, `9` rather than `9.0`
    if counts(y_range) {
        mesh.y_label_formatter(&label);
    }
    mesh.draw()?;
    Ok(chart)
}

fn draw_chart<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    series: &[Series],
    y_range: (f64, f64),
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let x_max = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    root.fill(&WHITE)?;
    let (plot, side) = root.split_horizontally(PLOT_WIDTH);
    let mut chart = axes(&plot, title, y_label, x_max, y_range)?;
    let mut names = Vec::new();
    for (i, (name, pts)) in series.iter().enumerate() {
        if pts.is_empty() {
            continue; // a series never measured (a split not evaluated) gets no legend entry
        }
        chart.draw_series(LineSeries::new(
            pts.iter().copied(),
            colour(i).stroke_width(2),
        ))?;
        let area = chart.plotting_area();
        for &p in pts {
            let at = area.map_coordinate(&p);
            marker(&plot, i, at)?;
        }
        names.push((i, name.as_str()));
    }
    legend(&side, &names)?;
    root.present()?;
    Ok(())
}

fn pts(ms: &[IterMetrics], f: impl Fn(&IterMetrics) -> Option<f64>) -> Vec<(f64, f64)> {
    ms.iter()
        .filter_map(|m| f(m).map(|v| (m.iteration as f64, v)))
        .collect()
}

/// Writes the five plots into `dir`; returns their file names.
pub fn write_plots(dir: &Path, ms: &[IterMetrics]) -> Result<Vec<String>> {
    let trained: Vec<IterMetrics> = ms.iter().filter(|m| m.iteration > 0).cloned().collect();
    let mut accepted = 0usize;
    let cum: Vec<(f64, f64)> = trained
        .iter()
        .map(|m| {
            accepted += m.accepted;
            (m.iteration as f64, accepted as f64)
        })
        .collect();
    // a whole number of tasks at the top, so the axis reads in whole tasks
    let max_acc = ((accepted as f64).max(1.0) * 1.1).ceil().max(5.0);
    let plots: Vec<Plot> = vec![
        (
            "success.png",
            "Success",
            "success rate",
            vec![
                (
                    "train rollouts".into(),
                    pts(&trained, |m| Some(m.train_success)),
                ),
                ("eval in-domain".into(), pts(ms, |m| m.eval_in_domain)),
                ("eval OOD".into(), pts(ms, |m| m.eval_ood)),
                ("validation".into(), pts(ms, |m| m.eval_validation)),
            ],
            (0.0, 1.0),
        ),
        (
            "judge.png",
            "Judge accuracy",
            "accuracy",
            vec![
                (
                    "process (the labels an agent could know)".into(),
                    pts(&trained, |m| m.process_acc),
                ),
                (
                    "process (the planner's labels)".into(),
                    pts(&trained, |m| m.process_acc_planner),
                ),
                ("outcome".into(), pts(&trained, |m| m.outcome_acc)),
            ],
            (0.0, 1.0),
        ),
        (
            "theory.png",
            "Theorem 1: μ against the bound",
            "value",
            vec![
                ("μ by the label".into(), pts(&trained, |m| m.mu)),
                (
                    "μ = p₊ + p₋ (paper: by the outcome)".into(),
                    pts(&trained, |m| m.mu_outcome),
                ),
                (
                    "bound 1 − exp(−m(μ−1)²/4)".into(),
                    pts(&trained, |m| m.bound.or(Some(0.0))),
                ),
                ("precision A".into(), pts(&trained, |m| m.precision)),
            ],
            (0.0, 2.0),
        ),
        (
            "vitals.png",
            "The update's vital signs (policy)",
            "value",
            vec![
                (
                    "clip fraction".into(),
                    pts(&trained, |m| m.vitals.policy.clip_fraction),
                ),
                (
                    "update KL ×100 (decisions)".into(),
                    pts(&trained, |m| {
                        m.vitals.policy.update_kl_decision.map(|k| 100.0 * k)
                    }),
                ),
                (
                    "entropy at decisions (nats)".into(),
                    pts(&trained, |m| m.vitals.policy.entropy),
                ),
            ],
            (0.0, 3.5),
        ),
        (
            "accepted.png",
            "Accepted tasks (cumulative)",
            "tasks",
            vec![("accepted".into(), cum)],
            (0.0, max_acc),
        ),
    ];
    let mut names = Vec::new();
    for (file, title, y, series, range) in plots {
        line_chart(&dir.join(file), title, y, &series, range)?;
        names.push(file.to_string());
    }
    Ok(names)
}

/// One curve over several seeds: its name and, per x, (x, mean, min, max).
pub type BandSeries = (String, Vec<(f64, f64, f64, f64)>);

/// Draws each series' mean as a line over a shaded band from its minimum to its maximum (the
/// spread over seeds) into a PNG of [`PLOT_SIZE`].
pub fn band_chart(
    path: &Path,
    title: &str,
    y_label: &str,
    series: &[BandSeries],
    y_range: (f64, f64),
) -> Result<()> {
    let rgb = rgb_of(|area| draw_bands(area, title, y_label, series, y_range))?;
    write_png(path, &rgb)
}

fn draw_bands<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    series: &[BandSeries],
    y_range: (f64, f64),
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let x_max = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    root.fill(&WHITE)?;
    let (plot, side) = root.split_horizontally(PLOT_WIDTH);
    let mut chart = axes(&plot, title, y_label, x_max, y_range)?;
    let mut names = Vec::new();
    for (i, (name, pts)) in series.iter().enumerate() {
        if pts.is_empty() {
            continue; // a mode with no evaluation of this split gets no band and no legend entry
        }
        let c = colour(i);
        let mut outline: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.3)).collect();
        outline.extend(pts.iter().rev().map(|p| (p.0, p.2)));
        chart.draw_series(std::iter::once(Polygon::new(outline, c.mix(0.15).filled())))?;
        chart.draw_series(LineSeries::new(
            pts.iter().map(|p| (p.0, p.1)),
            c.stroke_width(2),
        ))?;
        let area = chart.plotting_area();
        for p in pts {
            let at = area.map_coordinate(&(p.0, p.1));
            marker(&plot, i, at)?;
        }
        names.push((i, name.as_str()));
    }
    legend(&side, &names)?;
    root.present()?;
    Ok(())
}
