# Tokyo outage, for the layout `locality gen` writes (a combined "web-bs" with both regions' NEGs,
# plus one backend service per region): move all traffic to Osaka's own service in 2 steps, 30
# seconds apart. The combined service goes to 0 too: it still sends traffic to Tokyo.
#   terraform apply -invoke=action.locality_shift_weights.drain_tokyo
action "locality_shift_weights" "drain_tokyo" {
  config {
    url_map = "web-urlmap"
    weights = {
      "web-bs"       = 0
      "web-bs-tokyo" = 0
      "web-bs-osaka" = 100
    }
    steps    = 2
    interval = "30s"
  }
}
