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
