import {
  to = locality_weighted_backend.web
  identity = {
    project = "winticket-prod" # optional: the provider's google.project by default
    url_map = "web-urlmap"
    # region, path_matcher and route_rule_priority: for a regional URL map and a
    # path matcher's route, as on the resource
  }
}
