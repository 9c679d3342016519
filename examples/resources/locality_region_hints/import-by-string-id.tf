import {
  to = locality_region_hints.zone
  id = "023e105f4ecef8ad9ca31a8372d0c353"
}
