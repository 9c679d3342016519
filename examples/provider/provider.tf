# Every block is optional: configure only the clouds your resources use.
# The zone replica map with a file target needs none of them.
provider "locality" {
  # Cloudflare and Google API requests: how long one may take and how often it is retried
  # (defaults: LOCALITY_HTTP_TIMEOUT or 60s, LOCALITY_HTTP_RETRIES or 4).
  request_timeout = "60s"
  max_retries     = 4

  cloudflare {
    api_token = var.cloudflare_token # default: env CLOUDFLARE_API_TOKEN
  }

  aws {
    region = "ap-northeast-1" # default: the standard AWS chain

    # Tags on every AWS resource the provider creates (a resource's own `tags` win).
    default_tags {
      tags = {
        managed-by = "terraform"
      }
    }
  }

  google {
    # Nothing set: Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
    # application-default login, the metadata server). Or a key / workload identity file:
    # credentials = "wif.json"
    impersonate_service_account = "deployer@my-project.iam.gserviceaccount.com"
    project                     = "my-project" # default: GOOGLE_PROJECT, GOOGLE_CLOUD_PROJECT, ...
  }
}

variable "cloudflare_token" {
  type      = string
  sensitive = true
}

