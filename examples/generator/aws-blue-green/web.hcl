# Blue/green behind an existing Application Load Balancer: a new HTTPS listener forwards to
# web-blue and web-green, and locality_lb_forward_weights owns the weights. To switch,
# change `active` and regenerate: one in-place update of locality_lb_forward_weights.web.
#   locality gen web.hcl -o web.tf
forward "web" {
  load_balancer_arn = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:loadbalancer/app/web/50dc6c495c0c9188"
  port              = 443
  protocol          = "HTTPS"
  certificate_arn   = "arn:aws:acm:ap-northeast-1:123456789012:certificate/2c5a0f6e-9d4b-4c9e-8a57-5c1b6d2e7f10"
  vpc_id            = "vpc-0a1b2c3d4e5f60718"

  target_group "blue" {
    port = 8080
  }

  target_group "green" {
    port = 8080
  }

  active = ["blue"] # ["green"] to switch; ["blue", "green"] splits 50/50

  stickiness = "5m"

  # The listener keeps its initial weights; locality_lb_forward_weights moves traffic.
  # "codedeploy" or "ecs": those own the weights, and no locality resource is written.
  weights_owner = "locality_lb_forward_weights"
}

# A canary on an existing listener: a rule for /api/*, 10 % to api-canary.
forward "api" {
  listener_arn  = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2"
  priority      = 10
  path_patterns = ["/api/*"]
  vpc_id        = "vpc-0a1b2c3d4e5f60718"

  target_group "stable" {
    port   = 8080
    weight = 90
  }

  target_group "canary" {
    port   = 8080
    weight = 10
  }

  weights_owner = "locality_lb_forward_weights"
}
