# The form locality_region_hint and locality_region_hints compare origin IPs in.
output "origin_key" {
  value = provider::locality::canonical_ip("2001:DB8:0:0:0:0:0:0001") # "2001:db8::1"
}
