# Which cloud region is this origin in? Offline, from the clouds' published ranges.
data "locality_cloud_region" "origin" {
  ip = "3.112.0.10"
}

# Derive the Cloudflare region hint instead of typing it.
resource "locality_region_hint" "origin" {
  count = data.locality_cloud_region.origin.hint != null ? 1 : 0

  zone_id   = "023e105f4ecef8ad9ca31a8372d0c353"
  origin_ip = data.locality_cloud_region.origin.ip
  vendor    = data.locality_cloud_region.origin.vendor
  region    = data.locality_cloud_region.origin.region
}

output "origin_hint" {
  value = data.locality_cloud_region.origin.hint # "aws:ap-northeast-1"
}
