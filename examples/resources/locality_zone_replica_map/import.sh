# <kind>:<name>; a bare path means a file.
terraform import locality_zone_replica_map.sessions file:build/replica-map.json
