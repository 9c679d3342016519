# <project>/<url_map>
terraform import locality_weighted_backend.web winticket-prod/web-urlmap
