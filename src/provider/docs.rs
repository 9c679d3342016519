//! docs
