# <kind>:<name> with kind file, secretsmanager or ssm; a bare path means a file.
terraform import locality_zone_replica_map.sessions file:build/replica-map.json
terraform import locality_zone_replica_map.orders secretsmanager:prod/orders/replica-map
terraform import locality_zone_replica_map.carts ssm:/prod/carts/replica-map
