# Cloud Run in Tokyo and Osaka behind one global external Application Load Balancer.
# During a whole-region outage, set active to the healthy region and regenerate:
#   locality gen tokyo-osaka.hcl -o tokyo-osaka.tf
service "web" {
  project = "winticket-prod"

  region "tokyo" {
    location  = "asia-northeast1"
    cloud_run = "web"
  }

  region "osaka" {
    location  = "asia-northeast2"
    cloud_run = "web"
  }

  active = ["tokyo", "osaka"] # ["tokyo"] during an Osaka outage

  # The URL map keeps its initial weights; locality_weighted_backend moves traffic.
  weights_managed_by = "locality_weighted_backend"

  outlier_detection {
    interval                              = "10s"
    base_ejection_time                    = "3m"
    consecutive_errors                    = 5
    consecutive_gateway_failure           = 5
    enforcing_consecutive_gateway_failure = 100
  }
}
