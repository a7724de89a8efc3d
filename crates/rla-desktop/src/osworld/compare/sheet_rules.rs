//! The sheet-level rules' readings: `style`'s cell styles over a sheet and `data_validation`'s
//! match of openpyxl's validations.

use super::*;

/// `load_xlsx_styles`: every cell from A1 to the sheet's last row and column, the values of
/// `props` (what `_read_cell_style` raises, OSWorld raises). A sheet with conditional formatting
/// is refused: OSWorld evaluates its rules' formulas with the `formulas` package, which is not
/// reproduced here.
pub(super) fn sheet_styles(
    sh: &StyledSheet,
    props: &[String],
) -> Result<Vec<(crate::sheet::addr::Addr, Vec<StyleValue>)>, String> {
    if sh.conditional {
        return Err("the style rule over a sheet with conditional formatting is not read here (OSWorld evaluates its formulas)".into());
    }
    let Some((rows, cols)) = sh.extent() else {
        return Ok(vec![]);
    };
    let mut out = vec![];
    for c in 0..cols {
        for r in 0..rows {
            let at = crate::sheet::addr::Addr::new(r, c);
            let vals = props
                .iter()
                .map(|p| sh.prop(at, p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("style: OSWorld raises: {e}"))?;
            out.push((at, vals));
        }
    }
    Ok(out)
}

/// Whether every range of `a` lies within one range of `b` (`all(r in b for r in a)` over
/// openpyxl's `MultiCellRange`s).
pub(super) fn ranges_within(a: &[String], b: &[String]) -> Result<bool, String> {
    let parse = |r: &str| {
        crate::sheet::addr::Range::parse(r)
            .or_else(|| {
                crate::sheet::addr::Addr::parse(r).map(|x| crate::sheet::addr::Range::new(x, x))
            })
            .ok_or_else(|| format!("{r:?} is not a cell range"))
    };
    for x in a {
        let x = parse(x)?;
        let mut inside = false;
        for y in b {
            let y = parse(y)?;
            if y.start.row <= x.start.row
                && x.end.row <= y.end.row
                && y.start.col <= x.start.col
                && x.end.col <= y.end.col
            {
                inside = true;
                break;
            }
        }
        if !inside {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The `data_validation` rule: at least as many validations as `dv_props`, and each validation
/// matches one of them (every attribute's rule), checked in OSWorld's order (so what would
/// raise there is only reached where OSWorld reaches it).
pub(super) fn data_validation(sh: &StyledSheet, dv_props: &Json) -> Result<bool, String> {
    let props = dv_props
        .as_array()
        .ok_or("data_validation's `dv_props` must be a list")?;
    let mut total = sh.validations.len() >= props.len();
    for dv in &sh.validations {
        let mut metric = false;
        for prpt in props {
            let prpt = prpt
                .as_object()
                .ok_or("each of data_validation's dv_props is an object")?;
            let mut all = true;
            for (name, mr) in prpt {
                let ok = if name == "ranges" {
                    let method = mr.get("method").and_then(Json::as_str).unwrap_or("");
                    let r = mr.get("ref").cloned().unwrap_or(Json::Null);
                    let texts = |j: &Json| -> Result<Vec<String>, String> {
                        j.as_str()
                            .map(|s| s.split_whitespace().map(str::to_string).collect())
                            .ok_or_else(|| {
                                format!("data_validation ranges: {j} is not a range text")
                            })
                    };
                    match method {
                        "spreadsheet_range" => {
                            let (Some(lo), Some(hi)) = (r.get(0), r.get(1)) else {
                                return Err("spreadsheet_range needs a ref of two ranges".into());
                            };
                            ranges_within(&texts(lo)?, &dv.ranges)?
                                && ranges_within(&dv.ranges, &texts(hi)?)?
                        }
                        m => {
                            return Err(format!(
                                "data_validation: the method {m:?} on ranges is not read here (spreadsheet_range is)"
                            ))
                        }
                    }
                } else {
                    const NAMES: [&str; 15] = [
                        "type",
                        "formula1",
                        "formula2",
                        "operator",
                        "allowBlank",
                        "showDropDown",
                        "showInputMessage",
                        "showErrorMessage",
                        "error",
                        "errorTitle",
                        "errorStyle",
                        "prompt",
                        "promptTitle",
                        "imeMode",
                        "sqref",
                    ];
                    if !NAMES.contains(&name.as_str()) {
                        return Err(format!(
                            "data_validation: OSWorld raises reading the attribute {name:?}"
                        ));
                    }
                    let v = match dv.attrs.get(name.as_str()) {
                        Some(StyleValue::Bool(b)) => PyV::Num(*b as u8 as f64),
                        Some(StyleValue::Str(x)) => PyV::Str(x.clone()),
                        Some(StyleValue::Num(x)) => PyV::Num(*x),
                        None if name.starts_with("show") || name == "allowBlank" => PyV::Num(0.0),
                        _ => PyV::None,
                    };
                    match match_rule(v, mr)? {
                        Some(x) => x,
                        None => {
                            return Err(format!(
                                "data_validation: OSWorld raises comparing {name} with {mr}"
                            ))
                        }
                    }
                };
                if !ok {
                    all = false;
                    break;
                }
            }
            metric = metric || all;
            if metric {
                break;
            }
        }
        total = total && metric;
        if !total {
            break;
        }
    }
    Ok(total)
}
