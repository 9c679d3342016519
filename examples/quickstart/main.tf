# Quick start: publish a per-AZ replica map to a local file. Needs no cloud account.
#   scripts/quickstart    (builds the provider and runs terraform apply here)

terraform {
  required_providers {
    locality = {
      source = "locality/locality"
    }
  }
}

provider "locality" {}

resource "locality_zone_replica_map" "cache" {
  fallback_endpoint = "cache-ro.example.apne1.cache.amazonaws.com:6379"

  member {
    endpoint = "cache-001.example.apne1.cache.amazonaws.com:6379"
    zone     = "ap-northeast-1a"
    role     = "primary"
  }

  member {
    endpoint = "cache-002.example.apne1.cache.amazonaws.com:6379"
    zone     = "ap-northeast-1c"
  }

  member {
    endpoint = "cache-003.example.apne1.cache.amazonaws.com:6379"
    zone     = "ap-northeast-1d"
  }

  zones = ["ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"]

  file {
    path = "replica-map.json"
  }
}

output "endpoints" {
  value = locality_zone_replica_map.cache.endpoints
}

output "uncovered_zones" {
  value = locality_zone_replica_map.cache.uncovered_zones
}

output "document" {
  value     = locality_zone_replica_map.cache.document
  sensitive = true # an imported secret may hold other values; `terraform output -raw document` shows it
}
