import {
  to = locality_region_hint.api_v6
  identity = {
    zone_id   = "023e105f4ecef8ad9ca31a8372d0c353"
    origin_ip = "2001:db8::1" # any spelling
  }
}
