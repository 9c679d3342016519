import {
  to = locality_lb_forward_weights.web
  identity = {
    listener_arn = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2"
    # or rule_arn = "...:listener-rule/app/..." for a listener rule
  }
}
