import {
  to = locality_zone_replica_map.orders
  identity = {
    kind = "secretsmanager" # file, secretsmanager or ssm
    name = "prod/orders/replica-map"
  }
}
