//! README.md's configuration table names real keys of a run's TOML with their real defaults.

use rla_train::RunConfig;

/// The rows of the table under `## Configuration`: (names, defaults), from the first two columns.
fn rows() -> Vec<(Vec<String>, Vec<String>)> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let section = readme
        .split("\n## Configuration\n")
        .nth(1)
        .expect("README has a Configuration section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| name"))
        .map(|l| {
            let cols: Vec<&str> = l.split('|').map(str::trim).collect();
            let names = cols[1]
                .split(',')
                .map(|n| n.trim().trim_matches('`').to_string())
                .collect();
            let defaults = cols[2].split(',').map(|d| d.trim().to_string()).collect();
            (names, defaults)
        })
        .collect()
}

#[test]
fn every_row_is_a_key_of_the_run_config_with_its_default() {
    let rows = rows();
    assert!(rows.len() >= 5, "{rows:?}");
    let defaults = toml::Value::try_from(RunConfig::default()).unwrap();
    let mut doc = String::new();
    for (names, values) in &rows {
        assert_eq!(names.len(), values.len(), "{names:?} {values:?}");
        for (name, value) in names.iter().zip(values) {
            // the key exists where the table says (a dotted name is a key of a table)
            let mut v = &defaults;
            for part in name.split('.') {
                v = v
                    .get(part)
                    .unwrap_or_else(|| panic!("README names `{name}`: no such key"));
            }
            if let Ok(want) = value.parse::<bool>() {
                assert_eq!(v.as_bool(), Some(want), "README's default of `{name}`");
            } else {
                let want: f64 = value
                    .parse()
                    .unwrap_or_else(|_| panic!("README's default of `{name}`: {value}"));
                let got = v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap();
                assert_eq!(got, want, "README's default of `{name}`");
            }
            doc.push_str(&format!("{name} = {value}\n"));
        }
    }
    // and written as the table writes them, they parse to the defaults
    let cfg: RunConfig = toml::from_str(&doc).unwrap_or_else(|e| panic!("{doc}\n{e}"));
    assert_eq!(cfg, RunConfig::default());
}
