# In a *.tfquery.hcl file (Terraform 1.14 and later):
#   terraform query -generate-config-out=weighted_backends.tf
list "locality_weighted_backend" "all" {
  provider         = locality
  include_resource = true

  config {
    project = "winticket-prod" # optional: the provider's google.project by default
  }
}

# The regional URL maps of one region.
list "locality_weighted_backend" "tokyo" {
  provider         = locality
  include_resource = true

  config {
    region = "asia-northeast1"
  }
}
