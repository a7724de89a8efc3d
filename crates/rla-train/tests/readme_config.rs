//! docs/configuration.md's table names real keys of a run's TOML with their real defaults.

use rla_train::RunConfig;

/// The rows of the table under `# Configuration` (up to the page's first `## ` section): (names,
/// defaults), from the first two columns.
fn rows() -> Vec<(Vec<String>, Vec<String>)> {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/configuration.md"
    ))
    .unwrap();
    let section = page
        .strip_prefix("# Configuration\n")
        .expect("docs/configuration.md starts with its title, # Configuration");
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

/// The default config of a registered setting (`setting = "…"` and nothing else).
fn default_of(setting: &str) -> RunConfig {
    RunConfig::parse_in(
        &format!("setting = \"{setting}\"\n"),
        std::path::Path::new("."),
    )
    .unwrap()
}

#[test]
fn every_row_is_a_key_of_the_run_config_with_its_default() {
    let rows = rows();
    assert!(rows.len() >= 5, "{rows:?}");
    let settings = rla_train::registry::names();
    // a setting's keys sit in its own table, read with that setting's config; the rest are shared
    let setting_of = |name: &str| {
        let head = name.split('.').next().unwrap_or("");
        settings.iter().copied().find(|s| *s == head)
    };
    // the documents of each setting: `setting = …`, the shared rows, then its own rows
    let mut docs: std::collections::BTreeMap<&str, String> = settings
        .iter()
        .map(|s| (*s, format!("setting = \"{s}\"\n")))
        .collect();
    for (names, values) in &rows {
        assert_eq!(names.len(), values.len(), "{names:?} {values:?}");
        for (name, value) in names.iter().zip(values) {
            let owner = setting_of(name);
            let defaults = toml::Value::try_from(default_of(owner.unwrap_or(settings[0]))).unwrap();
            // the key exists where the table says (a dotted name is a key of a table)
            let mut v = &defaults;
            for part in name.split('.') {
                v = v
                    .get(part)
                    .unwrap_or_else(|| panic!("docs/configuration.md names `{name}`: no such key"));
            }
            if let Some(want) = value.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
                assert_eq!(
                    v.as_str(),
                    Some(want),
                    "docs/configuration.md's default of `{name}`"
                );
            } else if let Ok(want) = value.parse::<bool>() {
                assert_eq!(
                    v.as_bool(),
                    Some(want),
                    "docs/configuration.md's default of `{name}`"
                );
            } else {
                let want: f64 = value.parse().unwrap_or_else(|_| {
                    panic!("docs/configuration.md's default of `{name}`: {value}")
                });
                let got = v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap();
                assert_eq!(got, want, "docs/configuration.md's default of `{name}`");
            }
            for (s, doc) in docs.iter_mut() {
                if owner.is_none_or(|o| o == *s) {
                    doc.push_str(&format!("{name} = {value}\n"));
                }
            }
        }
    }
    // and written as the table writes them, they parse to each setting's defaults
    for (s, doc) in &docs {
        let cfg = RunConfig::parse_in(doc, std::path::Path::new("."))
            .unwrap_or_else(|e| panic!("{doc}\n{e}"));
        assert_eq!(cfg, default_of(s), "{doc}");
    }
}
