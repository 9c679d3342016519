# Drain Tokyo into Osaka in 4 steps, 30 seconds apart:
#   terraform apply -invoke=action.locality_shift_weights.drain_tokyo
action "locality_shift_weights" "drain_tokyo" {
  config {
    url_map = "web-urlmap"
    weights = {
      "web-bs-tokyo" = 0
      "web-bs-osaka" = 100
    }
    steps    = 4
    interval = "30s"
  }
}
