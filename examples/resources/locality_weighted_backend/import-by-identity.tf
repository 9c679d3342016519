import {
  to = locality_weighted_backend.web
  identity = {
    project = "winticket-prod" # optional: the provider's google.project by default
    url_map = "web-urlmap"
  }
}
