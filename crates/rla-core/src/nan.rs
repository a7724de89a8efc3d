//! Numbers that may be NaN or infinite in serialised records.
//!
//! JSON has no NaN: `serde_json` writes a non-finite `f64` as `null`, and reading `null` back
//! into an `f64` fails. A diverged run logs NaN losses and must still resume and report, so
//! record fields use these readers: `null` reads back as NaN.
//!
//! Use as `#[serde(deserialize_with = "rla_core::nan::f64_or_nan")]`.

use serde::{Deserialize, Deserializer};

/// Reads a number, or `null` as NaN.
pub fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Reads a list of numbers, each `null` as NaN.
pub fn vec_f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    Ok(Vec::<Option<f64>>::deserialize(d)?
        .into_iter()
        .map(|x| x.unwrap_or(f64::NAN))
        .collect())
}
