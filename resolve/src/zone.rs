//! Availability zones as AWS spells them: names (`ap-northeast-1a`, which differ between
//! accounts) and IDs (`apne1-az4`, the same physical zone in every account), and the host:port
//! endpoints the map holds. Pure functions.

/// An availability zone as far as it is known: its name, its ID, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Zone {
    /// The AZ name, e.g. `ap-northeast-1a`.
    pub name: Option<String>,
    /// The AZ ID, e.g. `apne1-az4`.
    pub id: Option<String>,
}

impl Zone {
    /// A zone from a value that is an AZ name or an AZ ID (`--zone`, `LOCALITY_ZONE`).
    pub fn parse(value: &str) -> Option<Zone> {
        let value = value.trim();
        if is_zone_id(value) {
            Some(Zone {
                name: None,
                id: Some(value.to_string()),
            })
        } else if is_zone_name(value) {
            Some(Zone {
                name: Some(value.to_string()),
                id: None,
            })
        } else {
            None
        }
    }

    /// `ap-northeast-1a (apne1-az4)`, or whichever half is known.
    pub fn describe(&self) -> String {
        match (&self.name, &self.id) {
            (Some(name), Some(id)) => format!("{name} ({id})"),
            (Some(name), None) => name.clone(),
            (None, Some(id)) => id.clone(),
            (None, None) => "an unknown zone".to_string(),
        }
    }
}

fn lower_alnum(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Whether `value` is an AZ ID: `apne1-az4`, `usw2-lax1-az1` (Local Zones), `use1-wl1-bos-wlz1`
/// (Wavelength).
pub fn is_zone_id(value: &str) -> bool {
    if value.len() > 64 {
        return false;
    }
    let parts: Vec<&str> = value.split('-').collect();
    if parts.len() < 2 || !parts.iter().all(|p| lower_alnum(p)) {
        return false;
    }
    // The region code: letters then digits (`apne1`, `use1`).
    let region = parts[0];
    let letters = region.bytes().take_while(u8::is_ascii_lowercase).count();
    let region_ok = letters >= 2 && letters < region.len() && region.bytes().skip(letters).all(|b| b.is_ascii_digit());
    let last = parts[parts.len() - 1];
    let zone_ok = ["az", "wlz"].iter().any(|prefix| {
        last.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    region_ok && zone_ok
}

/// Whether `value` is an AZ name: a region name and a letter (`ap-northeast-1a`), or a Local
/// Zone / Wavelength zone name (`us-west-2-lax-1a`, `us-east-1-wl1-bos-wlz-1`).
pub fn is_zone_name(value: &str) -> bool {
    if value.len() > 64 || is_zone_id(value) {
        return false;
    }
    let parts: Vec<&str> = value.split('-').collect();
    parts.len() >= 3
        && parts.iter().all(|p| lower_alnum(p))
        && parts[0].len() == 2
        && parts[0].bytes().all(|b| b.is_ascii_lowercase())
        && parts[1..]
            .iter()
            .any(|p| p.bytes().next().is_some_and(|b| b.is_ascii_digit()))
        // A zone, not its region: `ap-northeast-1a`, or a Wavelength zone's `-wlz-1`.
        && (value.ends_with(|c: char| c.is_ascii_lowercase()) || value.contains("-wlz-"))
}

/// Checks a `host:port` endpoint: a DNS name (labels of letters, digits, hyphens and
/// underscores, as Docker and some DNS records use), an IPv4 address, or an IPv6 address in
/// brackets (`[2001:db8::1]:6379`); a port from 1 to 65535. One rule for both sides: the
/// provider checks what it publishes with it, and `locality resolve` what it reads, so a map
/// the provider wrote is never refused by its reader.
///
/// # Errors
/// One sentence saying what is wrong and what is allowed.
pub fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let allowed = "expected host:port, e.g. \"node-001.example.cache.amazonaws.com:6379\" or \"[2001:db8::1]:6379\"";
    let Some((host, port)) = endpoint.rsplit_once(':') else {
        return Err(format!("{endpoint:?} has no port; {allowed}."));
    };
    let port_ok =
        port.bytes().all(|b| b.is_ascii_digit()) && !port.starts_with('0') && port.parse::<u16>().is_ok_and(|p| p > 0);
    if !port_ok {
        return Err(format!(
            "{endpoint:?} has port {port:?}; the port must be a number from 1 to 65535, without leading zeros."
        ));
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse::<std::net::Ipv6Addr>()
            .map(|_| ())
            .map_err(|_| format!("{endpoint:?}: {inner:?} is not an IPv6 address."));
    }
    if host.contains(':') {
        return Err(format!("{endpoint:?}: write an IPv6 host in brackets; {allowed}."));
    }
    if host.parse::<std::net::Ipv4Addr>().is_ok() || is_dns_name(host) {
        Ok(())
    } else {
        Err(format!("{endpoint:?}: {host:?} is not a valid host name; {allowed}."))
    }
}

/// Whether `value` passes [`check_endpoint`].
pub fn is_endpoint(value: &str) -> bool {
    check_endpoint(value).is_ok()
}

/// Whether `host` is a DNS host name (labels of letters, digits, `-` and `_`; not an
/// all-numeric dotted name): the rule for endpoints' hosts and for `--tls-server-name`.
pub fn is_dns_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        // An all-numeric dotted name is a malformed IPv4 address, not a host name.
        && !host.split('.').all(|l| l.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids() {
        for id in ["apne1-az4", "use1-az1", "usw2-lax1-az1", "use1-wl1-bos-wlz1"] {
            assert!(is_zone_id(id), "{id}");
            assert!(!is_zone_name(id), "{id}");
        }
        for name in [
            "ap-northeast-1a",
            "us-east-1f",
            "us-west-2-lax-1a",
            "us-gov-west-1a",
            "us-east-1-wl1-bos-wlz-1",
        ] {
            assert!(is_zone_name(name), "{name}");
            assert!(!is_zone_id(name), "{name}");
        }
        for bad in [
            "",
            "az4",
            "<html>",
            "ap-northeast-1a\n",
            "APNE1-AZ4",
            "ap_northeast_1a",
            "a-b",
            "é-1-a",
        ] {
            assert!(!is_zone_id(bad) && !is_zone_name(bad), "{bad:?}");
        }
        assert_eq!(Zone::parse(" apne1-az4 ").unwrap().id.as_deref(), Some("apne1-az4"));
        assert_eq!(
            Zone::parse("ap-northeast-1a").unwrap().name.as_deref(),
            Some("ap-northeast-1a")
        );
        assert!(Zone::parse("nonsense").is_none());
    }

    #[test]
    fn endpoints() {
        for ok in [
            "replica-a.example:6379",
            "10.0.0.1:6379",
            "[::1]:6380",
            "a_b.cache.amazonaws.com:1",
            "node-001.abc.apne1.cache.amazonaws.com:6379",
            "[2001:db8::1]:6379",
            "localhost:1",
            "trailing.dot.example.:6379",
        ] {
            assert!(is_endpoint(ok), "{ok}");
        }
        for bad in [
            "replica",
            ":6379",
            "host:",
            "host:0",
            "host:65536",
            "host:63a",
            "ho st:1",
            "[nope]:1",
            "h\u{e9}:1",
            "node:0",
            "node:70000",
            "node:+1",
            "2001:db8::1:6379",
            "-bad-.example:1",
            "999.1.1.1:1",
            "[zz]:1",
            "a..b:1",
        ] {
            assert!(!is_endpoint(bad), "{bad}");
        }
    }
}
