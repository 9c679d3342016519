# Which cloud region is each origin in? Offline, from the clouds' published ranges; null when an
# address is in no published range.
locals {
  origins = ["3.112.0.10", "34.85.1.1", "192.0.2.10"]
  hints = {
    for ip in local.origins : ip => provider::locality::cloud_region(ip).hint
    if provider::locality::cloud_region(ip) != null
  }
}

output "origin_hints" {
  value = local.hints # { "3.112.0.10" = "aws:ap-northeast-1", "34.85.1.1" = "gcp:asia-northeast1" }
}
