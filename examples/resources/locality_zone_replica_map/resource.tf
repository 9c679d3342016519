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

# The usual setup: discover the topology from ElastiCache at every plan and publish the map as
# a new version of an existing secret that the application reads at start-up. When replicas are
# replaced or moved, `terraform plan` shows which AZ's endpoint changes.
resource "locality_zone_replica_map" "orders" {
  replication_group_id = "orders-valkey"

  secretsmanager {
    secret_id = "prod/orders/replica-map"
  }
}

# Or publish to an SSM parameter that this resource owns, tagged (over the provider's
# aws.default_tags) and encrypted where a policy requires SecureString parameters.
resource "locality_zone_replica_map" "carts" {
  replication_group_id = "carts-valkey"
  read_from_primary    = true

  tags = {
    service = "carts"
  }

  ssm_parameter {
    name = "/prod/carts/replica-map"
    type = "SecureString" # the AWS managed key alias/aws/ssm unless key_id is set
  }

  timeouts {
    create = "10m"
  }
}
