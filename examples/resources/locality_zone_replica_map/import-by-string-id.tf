import {
  to = locality_zone_replica_map.carts
  id = "ssm:/prod/carts/replica-map"
}
