# In a *.tfquery.hcl file (Terraform 1.14 and later):
#   terraform query -generate-config-out=region_hints.tf
list "locality_region_hint" "zone" {
  provider         = locality
  include_resource = true

  config {
    zone_id = "023e105f4ecef8ad9ca31a8372d0c353"
  }
}
