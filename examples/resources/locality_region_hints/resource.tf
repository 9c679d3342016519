# Every hint of one zone in one resource: applied in batches of 100.
resource "locality_region_hints" "zone" {
  zone_id = "023e105f4ecef8ad9ca31a8372d0c353"

  # Origin IP -> "vendor:region"; IPs in any spelling, values in any case.
  hints = {
    "192.0.2.10"     = "aws:us-east-1"
    "2001:DB8::0001" = "gcp:asia-northeast1"
  }

  # Hints derived at plan time from the clouds' published IP ranges.
  origins = ["34.84.1.1", "3.112.0.10"]

  exclusive = false # true: the zone's other mappings are deleted
  takeover  = false # true: mappings with another value are overwritten
}

output "managed_hints" {
  value = locality_region_hints.zone.effective
}
