# Is the origin anycast? Tokyo and Frankfurt both answering in 5 ms is impossible for one
# physical location: light in fiber needs about 46 ms for that distance.
data "locality_anycast_check" "origin" {
  probe {
    name      = "tokyo"
    latitude  = 35.6762
    longitude = 139.6503
    rtt_ms    = 5
  }

  probe {
    name      = "frankfurt"
    latitude  = 50.1109
    longitude = 8.6821
    rtt_ms    = 5
  }

  probe {
    name      = "virginia"
    latitude  = 38.9519
    longitude = -77.4480
    rtt_ms    = 160
  }
}

output "anycast" {
  value = data.locality_anycast_check.origin.anycast # true
}

output "impossible_pairs" {
  value = data.locality_anycast_check.origin.violations
}
