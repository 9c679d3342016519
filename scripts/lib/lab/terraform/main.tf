# The lab's replica map, written by `terraform apply` with this provider (scripts/lab).
#
# nodes.json is the lab's ElastiCache: every node's endpoint, zone and role, as
# DescribeReplicationGroups would list them (the lab rewrites it when a drill replaces a replica),
# and the AZ IDs of the zones, as data.aws_availability_zones gives them.
# A real configuration names the group instead (`replication_group_id`), and the provider reads
# the same facts from ElastiCache at every plan.

terraform {
  required_providers {
    locality = {
      source = "locality/locality"
    }
  }
}

provider "locality" {}

locals {
  lab   = jsondecode(file("${path.module}/nodes.json"))
  nodes = local.lab.nodes
}

resource "locality_zone_replica_map" "lab" {
  fallback_endpoint = "reader.lab.internal:6379"
  zone_ids          = local.lab.zone_ids

  dynamic "member" {
    for_each = local.nodes
    content {
      endpoint = member.value.endpoint
      zone     = member.value.zone
      role     = member.value.role
    }
  }

  file {
    path            = "replica-map.json"
    file_permission = "0644"
  }
}

output "endpoints" {
  value = locality_zone_replica_map.lab.endpoints
}
