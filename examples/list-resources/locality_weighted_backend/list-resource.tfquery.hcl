# terraform query -generate-config-out=weighted_backends.tf
list "locality_weighted_backend" "all" {
  provider         = locality
  include_resource = true

  config {
    project = "winticket-prod" # optional: the provider's google.project by default
  }
}
