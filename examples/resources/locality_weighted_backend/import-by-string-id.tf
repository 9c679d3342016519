import {
  to = locality_weighted_backend.web
  id = "winticket-prod/web-urlmap"
}
