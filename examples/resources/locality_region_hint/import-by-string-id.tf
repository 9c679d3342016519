import {
  to = locality_region_hint.api_v4
  id = "023e105f4ecef8ad9ca31a8372d0c353/192.0.2.10"
}
