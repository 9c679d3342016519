# Blue/green on an Application Load Balancer: the listener's default action forwards to
# web-blue and web-green, and this resource owns only their weights. In a configuration
# with the aws provider, use references instead of the literal ARNs:
#   listener_arn = aws_lb_listener.web.arn
#   weights = { (aws_lb_target_group.green.arn) = 100 }   # a group's ARN or its name: the same group
#
# The aws_lb_listener keeps everything else (the OIDC login, the Orders, the stickiness)
# and ignores the weights, so the two never fight:
#   lifecycle { ignore_changes = [default_action[0].forward[0].target_group] }
resource "locality_lb_forward_weights" "web" {
  listener_arn = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2"

  weights = {
    "web-blue"  = 0
    "web-green" = 100
  }
}

# A canary on one listener rule (Application Load Balancers): 10 % to web-canary. Groups
# not listed keep their live weight; plan fails only if every group of the action would
# be at 0.
resource "locality_lb_forward_weights" "api" {
  rule_arn = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee"

  weights = {
    "web-blue"   = 90
    "web-canary" = 10
  }
}

# A Network Load Balancer's listener (weighted target groups, since November 2025): the
# same resource, weights 0 to 999.
resource "locality_lb_forward_weights" "edge" {
  listener_arn = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/net/edge/4d9e3b5a1c2f7e60/a1b2c3d4e5f60718"

  weights = {
    "edge-blue"  = 100
    "edge-green" = 0
  }
}
