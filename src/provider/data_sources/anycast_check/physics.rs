//! The speed-of-light test (how Cloudflare detects anycast origins): two probes whose half round-trip
//! times add up to less than the time light in fiber needs to cover the distance between them
//! cannot be talking to one physical location.

/// Kilometres light travels in optical fiber per millisecond (about 2/3 of c).
pub const FIBER_KM_PER_MS: f64 = 204.0;

/// Mean Earth radius, km.
pub(crate) const EARTH_RADIUS_KM: f64 = 6371.0;

/// Great-circle distance (haversine) between two points in degrees, km.
pub fn distance_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = (lat2 - lat1).to_radians();
    let dl = (lon2 - lon1).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_KM * a.sqrt().asin()
}

/// By how many ms two probes beat physics: `distance / 204 − (rtt_a + rtt_b) / 2`. Positive means
/// the pair cannot be one location.
pub fn margin_ms(distance_km: f64, rtt_a_ms: f64, rtt_b_ms: f64) -> f64 {
    distance_km / FIBER_KM_PER_MS - (rtt_a_ms + rtt_b_ms) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokyo_frankfurt() {
        let d = distance_km(35.6762, 139.6503, 50.1109, 8.6821);
        assert!((9300.0..9400.0).contains(&d), "{d}");
        // Both at 5 ms: light needs ~46 ms for that distance, so one origin is impossible.
        assert!(margin_ms(d, 5.0, 5.0) > 40.0);
        // Tokyo 5 ms, Frankfurt 240 ms: plausible.
        assert!(margin_ms(d, 5.0, 240.0) < 0.0);
    }
}
