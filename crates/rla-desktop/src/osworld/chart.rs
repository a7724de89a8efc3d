//! A sheet's charts as OSWorld's `load_charts` reads them through openpyxl 3.1: each chart found
//! through the sheet's drawing (two-cell anchors, then one-cell, then absolute), keyed by its
//! series' sources (`"<values ref>,<categories ref>"` joined by `;`), with the properties a
//! `chart` rule asks for: `type` (the first plot's tag, `barChart`, `lineChart`, …), `title`
//! (the first run of the title's first paragraph, else `None`), `direction` (a bar chart's
//! `barDir`; OSWorld raises for other charts), `legend` (its position, `r` by default), and
//! `width` and `height` (openpyxl's defaults, 15 and 7.5, whatever the file says).

use crate::osworld::style::{open_sheet, PyValue};
use crate::sheet::xmlpart::{attr, entry, rels, text_of};
use quick_xml::events::Event;
use quick_xml::Reader;
use std::collections::BTreeMap;
use std::path::Path;

/// The chart properties read here.
pub const CHART_PROPS: [&str; 6] = ["type", "title", "direction", "legend", "width", "height"];

/// One chart as the rule sees it.
#[derive(Debug, Clone, Default, PartialEq)]
struct Chart {
    key: String,
    tag: String,
    title: Option<String>,
    bar_dir: Option<String>,
    legend: Option<String>,
}

/// The chart parts a drawing anchors, in openpyxl's order.
fn drawing_charts(xml: &[u8], rels: &BTreeMap<String, (String, String)>) -> Vec<String> {
    let mut by_kind: [Vec<String>; 3] = Default::default();
    let mut r = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut anchor: Option<usize> = None;
    loop {
        match r.read_event_into(&mut buf) {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => match e.local_name().as_ref() {
                "twoCellAnchor" => anchor = Some(0),
                "oneCellAnchor" => anchor = Some(1),
                "absoluteAnchor" => anchor = Some(2),
                "chart" => {
                    if let (Some(k), Some(id)) = (anchor, attr(&e, "id")) {
                        if let Some((_, part)) = rels.get(&id) {
                            by_kind[k].push(part.clone());
                        }
                    }
                }
                _ => {}
            },
            Ok(Event::End(e))
                if matches!(
                    e.local_name().as_ref(),
                    "twoCellAnchor" | "oneCellAnchor" | "absoluteAnchor"
                ) =>
            {
                anchor = None
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
        buf.clear();
    }
    by_kind.into_iter().flatten().collect()
}

const PLOTS: [&str; 16] = [
    "areaChart",
    "area3DChart",
    "lineChart",
    "line3DChart",
    "stockChart",
    "radarChart",
    "scatterChart",
    "pieChart",
    "pie3DChart",
    "doughnutChart",
    "barChart",
    "bar3DChart",
    "ofPieChart",
    "surfaceChart",
    "surface3DChart",
    "bubbleChart",
];

/// Reads one chart part.
fn read_chart(xml: &[u8]) -> Chart {
    let mut c = Chart::default();
    let mut r = Reader::from_reader(xml);
    let mut buf = Vec::new();
    // where we are: the path of local names
    let mut path: Vec<String> = Vec::new();
    let mut plot_depth: Option<usize> = None; // depth of the first plot element
    let mut done_plot = false;
    let mut series: Vec<(String, String)> = Vec::new();
    let mut title_runs = 0usize; // runs seen in the title's first paragraph
    let mut title_paragraphs = 0usize;
    let mut text = String::new();
    loop {
        let ev = r.read_event_into(&mut buf);
        match &ev {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                let name = e.local_name().as_ref().to_string();
                let empty = matches!(ev, Ok(Event::Empty(_)));
                let in_chart = path.len() >= 2 && path[1] == "chart";
                if path.len() == 3
                    && path[1] == "chart"
                    && path[2] == "plotArea"
                    && !done_plot
                    && plot_depth.is_none()
                    && PLOTS.contains(&name.as_str())
                {
                    c.tag = name.clone();
                    plot_depth = Some(path.len());
                }
                if plot_depth.is_some() && name == "ser" && path.len() == 4 {
                    series.push((String::new(), String::new()));
                }
                if plot_depth.is_some() && name == "barDir" && path.len() == 4 {
                    c.bar_dir = attr(e, "val");
                }
                // the chart's title: chart/title/tx/rich/p/r/t
                if in_chart && path.len() >= 3 && path[2] == "title" {
                    if name == "p" && path.len() == 5 && path[3] == "tx" && path[4] == "rich" {
                        title_paragraphs += 1;
                    }
                    if name == "r" && path.len() == 6 && title_paragraphs == 1 {
                        title_runs += 1;
                    }
                }
                if in_chart && path.len() == 2 && name == "legend" {
                    c.legend = Some("r".into());
                }
                if in_chart && path.len() == 3 && path[2] == "legend" && name == "legendPos" {
                    c.legend = Some(attr(e, "val").unwrap_or_else(|| "r".into()));
                }
                if !empty {
                    path.push(name);
                    text.clear();
                }
            }
            Ok(ref e @ (Event::Text(_) | Event::GeneralRef(_))) => text.push_str(&text_of(e)),
            Ok(Event::End(_)) => {
                let p: Vec<&str> = path.iter().map(String::as_str).collect();
                let n = p.len();
                // a series' sources: ser/val/numRef/f, ser/val/strRef/f, ser/cat/…/f
                if plot_depth.is_some() && n >= 4 && p[n - 1] == "f" && n == 8 && p[4] == "ser" {
                    if let Some(s) = series.last_mut() {
                        match (p[5], p[6]) {
                            ("val", "numRef") | ("val", "strRef") if s.0.is_empty() => {
                                s.0 = text.clone()
                            }
                            ("cat", "numRef") | ("cat", "strRef") if s.1.is_empty() => {
                                s.1 = text.clone()
                            }
                            _ => {}
                        }
                    }
                }
                if n == 8
                    && p[2] == "title"
                    && p[3] == "tx"
                    && p[4] == "rich"
                    && p[5] == "p"
                    && p[6] == "r"
                    && p[7] == "t"
                    && title_paragraphs == 1
                    && title_runs == 1
                    && c.title.is_none()
                {
                    c.title = Some(text.clone());
                }
                if Some(n) == plot_depth.map(|d| d + 1) {
                    plot_depth = None;
                    done_plot = true;
                }
                path.pop();
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
        buf.clear();
    }
    c.key = series
        .iter()
        .map(|(v, k)| format!("{v},{k}"))
        .collect::<Vec<_>>()
        .join(";");
    c
}

/// `load_charts(book, sheet, chart_props=props)`: the charts by their key, each with the
/// properties asked for; `Ok(None)` when the sheet does not exist (`{}` in OSWorld); `Err` where
/// OSWorld raises (`direction` of a chart that is not a bar chart) or a property is not read here.
pub fn load_charts(
    path: &Path,
    sheet: &str,
    props: &[String],
) -> Result<BTreeMap<String, Vec<(String, PyValue)>>, String> {
    // OSWorld ignores a property it does not know; those it reads and this does not are errors
    if let Some(p) = props
        .iter()
        .find(|p| ["anchor", "xtitle", "ytitle", "ztitle"].contains(&p.as_str()))
    {
        return Err(format!(
            "chart: the property {p:?} is not read here ({} are)",
            CHART_PROPS.join(", ")
        ));
    }
    let mut out = BTreeMap::new();
    let Some((mut z, part)) = open_sheet(path, sheet) else {
        return Ok(out);
    };
    let sheet_rels: BTreeMap<String, (String, String)> = rels(&mut z, &part)
        .into_iter()
        .map(|(id, kind, target)| (id, (kind, target)))
        .collect();
    let mut charts = vec![];
    for (kind, drawing) in sheet_rels.values() {
        if !kind.ends_with("/drawing") {
            continue;
        }
        let Some(xml) = entry(&mut z, drawing) else {
            continue;
        };
        let drels: BTreeMap<String, (String, String)> = rels(&mut z, drawing)
            .into_iter()
            .map(|(id, kind, target)| (id, (kind, target)))
            .collect();
        for chart in drawing_charts(&xml, &drels) {
            if let Some(x) = entry(&mut z, &chart) {
                charts.push(read_chart(&x));
            }
        }
    }
    // props in Python's set order do not matter: the info dicts compare as dicts
    let mut wanted: Vec<&String> = props
        .iter()
        .filter(|p| CHART_PROPS.contains(&p.as_str()))
        .collect();
    wanted.sort();
    wanted.dedup();
    for c in charts {
        let mut info = vec![];
        for p in &wanted {
            let v = match p.as_str() {
                "type" => PyValue::Str(c.tag.clone()),
                "title" => c.title.clone().map(PyValue::Str).unwrap_or(PyValue::None),
                "direction" => match &c.bar_dir {
                    Some(d) if c.tag.starts_with("bar") => PyValue::Str(d.clone()),
                    None if c.tag.starts_with("bar") => PyValue::Str("col".into()),
                    _ => {
                        return Err(format!(
                            "chart: OSWorld raises reading the direction of a {}",
                            c.tag
                        ))
                    }
                },
                "legend" => c.legend.clone().map(PyValue::Str).unwrap_or(PyValue::None),
                "width" => PyValue::Num(15.0),
                _ => PyValue::Num(7.5), // height
            };
            info.push((p.to_string(), v));
        }
        out.insert(c.key, info);
    }
    Ok(out)
}
