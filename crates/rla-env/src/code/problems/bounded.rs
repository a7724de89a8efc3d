//! JSON parsed within bounds: a list of records read one at a time, each record's values counted
//! as they are parsed, so neither a list of millions of `{}` nor a record of millions of `""`
//! is held whole.

use super::{EnvError, Value, MAX_RECORDS, MAX_RECORD_VALUES};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;

/// Why a list stopped.
pub enum Stop {
    /// A record was read but is wrong.
    Record(EnvError),
    /// The JSON is malformed or past a bound.
    Json(serde_json::Error),
}

/// One JSON value (a line of JSON lines) of at most [`MAX_RECORD_VALUES`] values.
pub fn value(text: &str) -> Result<Value, serde_json::Error> {
    let budget = Cell::new(MAX_RECORD_VALUES);
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Bounded(&budget).deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// A JSON list's records, each given to `each` as it is read with its name (`record N`);
/// the count of records.
pub fn list(
    text: &str,
    each: &mut dyn FnMut(String, Value) -> Result<(), EnvError>,
) -> Result<usize, Stop> {
    let mut failed = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let n = de
        .deserialize_seq(Records {
            each,
            failed: &mut failed,
        })
        .and_then(|n| de.end().map(|_| n));
    match (n, failed) {
        (_, Some(e)) => Err(Stop::Record(e)),
        (Ok(n), None) => Ok(n),
        (Err(e), None) => Err(Stop::Json(e)),
    }
}

struct Records<'a, 'f> {
    each: &'a mut dyn FnMut(String, Value) -> Result<(), EnvError>,
    failed: &'f mut Option<EnvError>,
}

impl<'de> Visitor<'de> for Records<'_, '_> {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut n = 0;
        loop {
            let budget = Cell::new(MAX_RECORD_VALUES);
            let Some(v) = seq.next_element_seed(Bounded(&budget))? else {
                return Ok(n);
            };
            n += 1;
            if n > MAX_RECORDS {
                return Err(de::Error::custom(format!(
                    "more than {MAX_RECORDS} records, the most a problem file may hold"
                )));
            }
            if let Err(e) = (self.each)(format!("record {n}"), v) {
                *self.failed = Some(e);
                return Err(de::Error::custom("a record is wrong"));
            }
        }
    }
}

/// A JSON value built while a shared budget of values lasts.
#[derive(Clone, Copy)]
struct Bounded<'a>(&'a Cell<usize>);

impl Bounded<'_> {
    fn take<E: de::Error>(self) -> Result<(), E> {
        match self.0.get() {
            0 => Err(E::custom(format!(
                "a record holds more than {MAX_RECORD_VALUES} JSON values"
            ))),
            n => {
                self.0.set(n - 1);
                Ok(())
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.take()?;
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut out = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            self.take()?;
            let v = map.next_value_seed(self)?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}
