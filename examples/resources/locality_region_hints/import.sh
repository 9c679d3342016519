# <zone_id>: every mapping of the zone lands in `hints`.
terraform import locality_region_hints.zone 023e105f4ecef8ad9ca31a8372d0c353
