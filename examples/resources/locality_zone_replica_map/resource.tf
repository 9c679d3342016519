# Keep cache reads inside their own AZ: one replica endpoint per client AZ,
# published as a small JSON document that applications load at start-up.
resource "locality_zone_replica_map" "sessions" {
  fallback_endpoint = "sessions-ro.abc123.apne1.cache.amazonaws.com:6379"

  member {
    endpoint = "sessions-001.abc123.apne1.cache.amazonaws.com:6379"
    zone     = "ap-northeast-1a"
    role     = "primary"
  }

  member {
    endpoint = "sessions-002.abc123.apne1.cache.amazonaws.com:6379"
    zone     = "ap-northeast-1c"
  }

  member {
    endpoint = "sessions-003.abc123.apne1.cache.amazonaws.com:6379"
    zone     = "ap-northeast-1d"
  }

  # ap-northeast-1a only has the primary: it is listed in uncovered_zones
  # unless read_from_primary = true.
  read_from_primary = false

  file {
    path = "build/replica-map.json"
  }
}

output "uncovered_zones" {
  value = locality_zone_replica_map.sessions.uncovered_zones
}
