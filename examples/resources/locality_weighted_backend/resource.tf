# Regional failover: move all traffic to Tokyo while Osaka is down.
# Normally the all-regions backend service (web-bs) takes everything and outlier
# detection ejects a failing NEG; for a whole-region outage the weights move here.
#
# `locality gen` writes this resource for you with
#   weights_managed_by = "locality_weighted_backend"
# and puts the URL map's own weights in ignore_changes, so the two never fight.
resource "locality_weighted_backend" "web" {
  project = "winticket-prod" # default: the provider's google.project
  url_map = "web-urlmap"

  weights = {
    "web-bs"       = 0
    "web-bs-tokyo" = 100
    "web-bs-osaka" = 0
  }
}

# Draining one region needs only that region listed, at 0: the services not listed
# keep their live weight and carry the traffic (plan fails only if every weight of
# the route would be 0). One resource per route: do not manage the same route twice.
#
#   weights = {
#     "web-bs-tokyo" = 0
#   }

# A regional URL map (internal or regional external Application Load Balancer), and
# one route of it: route rule 10 of path matcher "api". Nothing else in the URL map
# changes.
resource "locality_weighted_backend" "api_v2" {
  region              = "asia-northeast1"
  url_map             = "internal-urlmap"
  path_matcher        = "api"
  route_rule_priority = 10

  weights = {
    "api-v2-tokyo" = 100
    "api-v2-osaka" = 0
  }
}
