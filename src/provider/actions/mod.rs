//! The provider's actions (Terraform 1.14+, `terraform apply -invoke=action.TYPE.NAME`), one
//! folder each.

pub mod shift_lb_weights;
pub mod shift_weights;
