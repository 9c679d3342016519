# Tell Smart Tiered Cache where an anycast cloud origin really lives.
resource "locality_region_hint" "api_v4" {
  zone_id   = "023e105f4ecef8ad9ca31a8372d0c353"
  origin_ip = "192.0.2.10"
  vendor    = "aws"
  region    = "us-east-1"
}

# IPv6 in any spelling: compared in canonical form (2001:db8::1).
resource "locality_region_hint" "api_v6" {
  zone_id   = "023e105f4ecef8ad9ca31a8372d0c353"
  origin_ip = "2001:DB8::0001"
  vendor    = "gcp"
  region    = "asia-northeast1"
}

# Many origins: refresh lists the zone once (100 a page), and writes are batched.
resource "locality_region_hint" "fleet" {
  for_each = {
    "198.51.100.10" = "ap-northeast-1"
    "198.51.100.11" = "ap-northeast-1"
    "198.51.100.20" = "eu-central-1"
  }

  zone_id   = "023e105f4ecef8ad9ca31a8372d0c353"
  origin_ip = each.key
  vendor    = "aws"
  region    = each.value
}

output "api_upper_tier" {
  value = locality_region_hint.api_v4.upper_tier_colos
}
