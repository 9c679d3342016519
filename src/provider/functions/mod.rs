//! Provider-defined functions (Terraform 1.8+): pure, offline, deterministic.
//!
//! - `cloud_region.rs`: `provider::locality::cloud_region(ip)`, the `locality_cloud_region`
//!   data source's answer as a value (an object, or null outside every published range);
//! - `canonical_ip.rs`: `provider::locality::canonical_ip(ip)`, an address's RFC 5952 text.

mod canonical_ip;
mod cloud_region;

use std::net::IpAddr;
use std::sync::Arc;

pub use canonical_ip::CanonicalIp;
pub use cloud_region::CloudRegion;

use crate::tfplugin::{Function, FunctionError, Value};

/// Every function of the provider.
pub fn all() -> Vec<Arc<dyn Function>> {
    vec![Arc::new(CloudRegion), Arc::new(CanonicalIp)]
}

/// The IP address of argument `index`, or the error on it that says what is allowed (Terraform
/// names the parameter).
fn ip_argument(arguments: &[Value], index: usize) -> Result<IpAddr, FunctionError> {
    let text = arguments.get(index).and_then(Value::as_str).unwrap_or_default();
    text.trim().parse().map_err(|_| {
        // (Debug-quoted and shortened on a character boundary: the argument may be anything.)
        let shown: String = text.chars().take(64).collect();
        let more = if text.chars().count() > 64 { "…" } else { "" };
        FunctionError::argument(
            index,
            // (Terraform shows it as `Invalid value for "ip" parameter: <this>.`)
            format!("{shown:?}{more} is not an IPv4 or IPv6 address; expected e.g. \"192.0.2.1\" or \"2001:db8::1\""),
        )
    })
}
