# A listener's default action, by the listener's ARN
terraform import locality_lb_forward_weights.web arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2

# A listener rule's forward, by the rule's ARN
terraform import locality_lb_forward_weights.api arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee
