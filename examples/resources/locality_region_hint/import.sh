# <zone_id>/<origin_ip>; the IP may be written in any form.
terraform import locality_region_hint.api_v4 023e105f4ecef8ad9ca31a8372d0c353/192.0.2.10
