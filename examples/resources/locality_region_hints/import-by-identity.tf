import {
  to = locality_region_hints.zone
  identity = {
    zone_id = "023e105f4ecef8ad9ca31a8372d0c353"
  }
}
