import {
  to = locality_lb_forward_weights.web
  id = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2"
}
