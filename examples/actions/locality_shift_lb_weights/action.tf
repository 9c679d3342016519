# Drain web-blue: all traffic to web-green in 3 steps, 30 seconds apart.
#   terraform apply -invoke=action.locality_shift_lb_weights.drain_blue
action "locality_shift_lb_weights" "drain_blue" {
  config {
    listener_arn = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2"
    weights = {
      "web-blue"  = 0
      "web-green" = 100
    }
    steps    = 3
    interval = "30s"
  }
}

# Canary 10 %: web-canary takes a tenth of the rule's traffic at once.
#   terraform apply -invoke=action.locality_shift_lb_weights.canary_10
action "locality_shift_lb_weights" "canary_10" {
  config {
    rule_arn = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee"
    weights = {
      "web-blue"   = 90
      "web-canary" = 10
    }
  }
}

# Roll back: the canary out, everything back on web-blue.
#   terraform apply -invoke=action.locality_shift_lb_weights.roll_back
action "locality_shift_lb_weights" "roll_back" {
  config {
    rule_arn = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee"
    weights = {
      "web-blue"   = 100
      "web-canary" = 0
    }
  }
}
