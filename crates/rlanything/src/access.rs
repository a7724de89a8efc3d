//! Who may reach a server this program starts or calls: the API key named by an environment
//! variable, and whether an address reaches this machine only.

use anyhow::{Context, Result};

/// The API key of `--api-key-env VAR`: the variable's value.
pub fn api_key(var: Option<&str>) -> Result<Option<String>> {
    match var {
        Some(v) => Ok(Some(std::env::var(v).with_context(|| {
            format!("--api-key-env: the environment variable {v} is not set")
        })?)),
        None => Ok(None),
    }
}

/// Whether binding `host` reaches this machine only.
pub fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
