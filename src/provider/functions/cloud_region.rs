//! `provider::locality::cloud_region(ip)`: which cloud region an IP is in, from the same
//! IP-range snapshot as the `locality_cloud_region` data source (`LOCALITY_RANGES_FILE`'s, else
//! the one built in). A function sees no provider configuration, so the snapshot is chosen by the
//! environment alone — as it is for the data source.

use crate::ranges::active;
use crate::tfplugin::{Function, FunctionDefinition, FunctionError, Parameter, Type, Value};

/// The function.
pub struct CloudRegion;

/// The result's attributes, in the docs' order.
const ATTRIBUTES: [(&str, &str); 5] = [
    ("vendor", "`aws`, `gcp`, `azure` or `oci`."),
    (
        "region",
        "The cloud's region name, e.g. `ap-northeast-1`; null for a global range (e.g. CloudFront).",
    ),
    (
        "prefix",
        "The longest published prefix that holds the address, e.g. `13.112.0.0/14`.",
    ),
    ("service", "The service the cloud lists the prefix under, e.g. `EC2`."),
    (
        "hint",
        "`vendor:region`, the value `locality_region_hints.hints` takes; null without a region.",
    ),
];

fn result_type() -> Type {
    Type::object(ATTRIBUTES.iter().map(|(name, _)| (*name, Type::String)))
}

impl Function for CloudRegion {
    fn definition(&self) -> FunctionDefinition {
        let attributes: String = ATTRIBUTES
            .iter()
            .map(|(name, text)| format!("- `{name}`: {text}\n"))
            .collect();
        FunctionDefinition {
            name: "cloud_region",
            summary: "Which cloud region an IP address is in".into(),
            description: format!(
                "Looks an IPv4 or IPv6 address up in the IP ranges AWS, Google Cloud, Azure and Oracle publish \
                 (longest prefix), offline, and returns an object, or null when the address is in no published \
                 range:\n\n{attributes}\n\
                 The ranges are the snapshot the `locality_cloud_region` data source uses: the one built into \
                 the provider, or the newer one `locality ranges update` wrote when `LOCALITY_RANGES_FILE` \
                 names it. An argument that is not an address is an error naming it.\n\n\
                 **Function or data source?** Use the function in expressions over many addresses (`for` \
                 expressions, `for_each`, locals) and where a null for \"not in a cloud\" is what you want; it \
                 needs no provider configuration and no data block per address. Use the \
                 `locality_cloud_region` data source when you want the snapshot's date and source in state \
                 (`ranges_date`, `ranges_source`) or its plan-time warning when the snapshot is old."
            ),
            parameters: vec![Parameter {
                name: "ip",
                ty: Type::String,
                allow_null: false,
                description: "An IPv4 or IPv6 address, e.g. `\"13.112.1.1\"`.".into(),
            }],
            return_type: result_type(),
        }
    }

    fn call(&self, arguments: &[Value]) -> Result<Value, FunctionError> {
        let ip = super::ip_argument(arguments, 0)?;
        let table = active().map_err(|e| FunctionError {
            text: format!("The IP-range snapshot cannot be read: {e}"),
            argument: None,
        })?;
        let Some(hit) = table.lookup(ip) else {
            return Ok(Value::Null);
        };
        let text = |v: Option<String>| v.map_or(Value::Null, Value::string);
        Ok(Value::object([
            ("vendor", Value::string(hit.vendor.as_str())),
            ("region", text(hit.region.map(str::to_string))),
            ("prefix", Value::string(hit.net.to_string())),
            ("service", Value::string(hit.service)),
            ("hint", text(hit.hint())),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_a_miss_and_a_bad_argument() {
        let call = |text: &str| CloudRegion.call(&[Value::string(text)]);
        let miss = call("192.0.2.1").unwrap();
        assert!(miss.is_null(), "{miss:?}");
        let error = call("not-an-ip").unwrap_err();
        assert_eq!(error.argument, Some(0));
        // A hit: the first address of a range the built-in snapshot holds.
        let table = active().unwrap();
        let ip: std::net::IpAddr = "13.112.0.1".parse().unwrap();
        let expected = table
            .lookup(ip)
            .expect("13.112.0.0/14 is AWS ap-northeast-1 in the snapshot");
        let hit = call("13.112.0.1").unwrap();
        assert_eq!(hit.get("vendor").as_str(), Some(expected.vendor.as_str()));
        assert_eq!(hit.get("hint").as_str().map(str::to_string), expected.hint());
        assert_eq!(
            hit.get("prefix").as_str().map(str::to_string),
            Some(expected.net.to_string())
        );
    }
}
