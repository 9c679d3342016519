# Every block is optional: configure only the clouds your resources use.
# The zone replica map with a file target needs none of them.
provider "locality" {
  cloudflare {
    api_token = var.cloudflare_token # default: env CLOUDFLARE_API_TOKEN
  }

  aws {
    region = "ap-northeast-1" # default: the standard AWS chain
  }

  google {
    access_token = var.google_token # default: env GOOGLE_OAUTH_ACCESS_TOKEN
    project      = "my-project"
  }
}

variable "cloudflare_token" {
  type      = string
  sensitive = true
}

variable "google_token" {
  type      = string
  sensitive = true
}
