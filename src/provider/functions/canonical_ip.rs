//! `provider::locality::canonical_ip(ip)`: the canonical text of an IPv4 or IPv6 address
//! (RFC 5952 for IPv6: lower case, leading zeros dropped, the longest run of zero groups as
//! `::`), the form `locality_region_hint` and the Cloudflare API compare addresses in.

use crate::tfplugin::{Function, FunctionDefinition, FunctionError, Parameter, Type, Value};

/// The function.
pub struct CanonicalIp;

impl Function for CanonicalIp {
    fn definition(&self) -> FunctionDefinition {
        FunctionDefinition {
            name: "canonical_ip",
            summary: "The canonical text of an IP address".into(),
            description:
                "Returns the canonical text of an IPv4 or IPv6 address: IPv6 as RFC 5952 writes it (lower case, \
                 leading zeros dropped, the longest run of zero groups as `::`), IPv4 in dotted decimal. \
                 `locality_region_hint` and `locality_region_hints` compare origin IPs in this form, so \
                 `\"2001:DB8::0001\"` and `\"2001:db8::1\"` are the same origin; use it to build keys that \
                 match theirs (for `for_each`, `moved` or outputs). Surrounding spaces are ignored. An argument \
                 that is not an address is an error naming it."
                    .into(),
            parameters: vec![Parameter {
                name: "ip",
                ty: Type::String,
                allow_null: false,
                description: "An IPv4 or IPv6 address, e.g. `\"2001:DB8::0001\"`.".into(),
            }],
            return_type: Type::String,
        }
    }

    fn call(&self, arguments: &[Value]) -> Result<Value, FunctionError> {
        let ip = super::ip_argument(arguments, 0)?;
        Ok(Value::string(ip.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_and_errors_that_name_the_argument() {
        let call = |text: &str| CanonicalIp.call(&[Value::string(text)]);
        assert_eq!(call("2001:DB8:0:0:0:0:0:0001"), Ok(Value::string("2001:db8::1")));
        assert_eq!(call(" 192.0.2.10 "), Ok(Value::string("192.0.2.10")));
        assert_eq!(call("::FFFF:192.0.2.1"), Ok(Value::string("::ffff:192.0.2.1")));
        let error = call("2001:db8::g").unwrap_err();
        assert_eq!(error.argument, Some(0));
        assert!(
            error.text.starts_with("\"2001:db8::g\" is not an IPv4 or IPv6 address"),
            "{}",
            error.text
        );
        // Anything user-supplied: long, multi-byte, control characters. No panic, a bounded message.
        let long = "é".repeat(500);
        let error = call(&long).unwrap_err();
        assert!(error.text.chars().count() < 200, "{}", error.text);
        assert!(call("\u{0}\n").is_err());
    }
}
