//! One lock per shared remote object (a URL map, a Secrets Manager secret) for the whole
//! provider process: Terraform applies up to ten resources at once, and resources that write
//! one object go one after another instead of failing (or silently undoing) each other's
//! read-modify-write. This is the official Google provider's mutex-per-parent; Cloudflare
//! zones have their own batching and claims (`cloudflare::Zones`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Waits for, then holds, the lock of the object named by `key` (a kind and the object's
/// address, e.g. `urlMaps https://…/projects/p/global web`). Dropped, it lets the next writer in.
pub async fn hold(key: String) -> tokio::sync::OwnedMutexGuard<()> {
    static LOCKS: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    let lock = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_default()
        .clone();
    lock.lock_owned().await
}
