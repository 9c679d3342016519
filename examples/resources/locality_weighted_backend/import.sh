# <project>/<url_map>: the default route of a global URL map
terraform import locality_weighted_backend.web winticket-prod/web-urlmap

# <project>/<region>/<url_map>#<path_matcher>/<route_rule_priority>: a route rule of a
# regional URL map (#<path_matcher> alone: that path matcher's default route)
terraform import locality_weighted_backend.api_v2 winticket-prod/asia-northeast1/internal-urlmap#api/10
