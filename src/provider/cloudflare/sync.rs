//! Writing a whole set of changes to one zone at the batch endpoints' floor: batch DELETEs,
//! then batch PUTs, 100 items a request, a few requests in flight at once.
//!
//! - A request refused as a whole (HTTP 4xx, e.g. the zone limit) is split in halves and the
//!   halves are sent again, down to single items, so that what fits is applied and only what
//!   does not is reported, each item with Cloudflare's code and message.
//! - A request whose outcome is unknown (no response, 5xx after every retry) is settled by
//!   listing the zone once afterwards: an item is applied when the zone holds what was written.
//!   When that listing fails too, the item is [`SyncError::Unconfirmed`].

use std::collections::{BTreeMap, HashMap, HashSet};

use tokio::task::JoinSet;

use super::{Cloudflare, CloudflareError, Mapping, Zones, BATCH_LIMIT};

/// Batch requests in flight at once for one zone.
pub const CONCURRENT_REQUESTS: usize = 4;

/// Why one item of a [`Zones::sync`] was not applied.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SyncError {
    /// Cloudflare refused it (the item's error, or the error of a request holding it alone).
    #[error("{0}")]
    Refused(CloudflareError),
    /// Another resource of this configuration writes the IP in this run.
    #[error("another resource in this configuration manages {0} in this zone")]
    Claimed(String),
    /// The request holding it got no usable response and the zone could not be listed to see
    /// whether it was applied.
    #[error("it may or may not have been applied ({0}); listing the zone to find out failed too")]
    Unconfirmed(CloudflareError),
}

/// The outcome of each item of a [`Zones::sync`], by canonical IP.
pub type SyncOutcomes = BTreeMap<String, Result<(), SyncError>>;

/// One batch request's items.
#[derive(Debug, Clone)]
enum Chunk {
    Put(Vec<Mapping>),
    Delete(Vec<String>),
}

impl Chunk {
    fn len(&self) -> usize {
        match self {
            Chunk::Put(items) => items.len(),
            Chunk::Delete(ips) => ips.len(),
        }
    }

    fn ips(&self) -> Vec<String> {
        match self {
            Chunk::Put(items) => items.iter().map(|m| m.origin_ip.clone()).collect(),
            Chunk::Delete(ips) => ips.clone(),
        }
    }

    /// The two halves of a chunk of two or more items.
    fn halves(self) -> [Chunk; 2] {
        match self {
            Chunk::Put(mut items) => {
                let rest = items.split_off(items.len() / 2);
                [Chunk::Put(items), Chunk::Put(rest)]
            }
            Chunk::Delete(mut ips) => {
                let rest = ips.split_off(ips.len() / 2);
                [Chunk::Delete(ips), Chunk::Delete(rest)]
            }
        }
    }
}

/// What one request settled: per-item outcomes, items whose outcome is unknown, and the
/// chunk to send again in halves when the request was refused as a whole.
#[derive(Default)]
struct Sent {
    settled: Vec<(String, Result<(), CloudflareError>)>,
    unknown: Vec<String>,
    narrow: Option<Chunk>,
}

/// Whether a request refused as a whole may have failed because of some of its items (then
/// smaller requests may pass): any 4xx but authentication, not-found and rate limiting.
fn narrowable(error: &CloudflareError) -> bool {
    matches!(error, CloudflareError::Api { status, code, .. }
        if (400..500).contains(status) && ![401, 404, 429].contains(status) && *code != 10000)
}

async fn send(client: Cloudflare, zone: String, chunk: Chunk) -> Sent {
    let ips = chunk.ips();
    let result = match &chunk {
        Chunk::Put(items) => client.batch_put(&zone, items).await,
        Chunk::Delete(ips) => client.batch_delete(&zone, ips).await,
    };
    let deleting = matches!(chunk, Chunk::Delete(_));
    match result {
        Ok(result) => {
            let failed: HashMap<String, String> = result
                .failed
                .into_iter()
                .map(|f| (f.origin_ip, f.error.unwrap_or_else(|| "refused".into())))
                .collect();
            let succeeded: HashSet<String> = result.succeeded.into_iter().map(|s| s.origin_ip).collect();
            let mut sent = Sent::default();
            for ip in ips {
                match failed.get(&ip) {
                    Some(error) if !(deleting && super::zone::is_not_found(error)) => {
                        sent.settled.push((ip, Err(super::zone::item_error(error))));
                    }
                    Some(_) => sent.settled.push((ip, Ok(()))),
                    None if succeeded.contains(&ip) || deleting => sent.settled.push((ip, Ok(()))),
                    // Neither succeeded nor failed: the response does not say; look.
                    None => sent.unknown.push(ip),
                }
            }
            sent
        }
        // Not found as a whole on delete: the mappings (or the zone's rule record) are gone.
        Err(CloudflareError::NotFound { .. }) if deleting => Sent {
            settled: ips.into_iter().map(|ip| (ip, Ok(()))).collect(),
            ..Sent::default()
        },
        Err(e) if e.is_ambiguous() => Sent {
            unknown: ips,
            ..Sent::default()
        },
        Err(e) if chunk.len() > 1 && narrowable(&e) => {
            tracing::info!(
                "a batch of {} was refused as a whole ({e}); sending it again in halves",
                chunk.len()
            );
            Sent {
                narrow: Some(chunk),
                ..Sent::default()
            }
        }
        Err(e) => Sent {
            settled: ips.into_iter().map(|ip| (ip, Err(e.clone()))).collect(),
            ..Sent::default()
        },
    }
}

impl Zones {
    /// Applies `deletes` (canonical IPs), then `puts`, to the zone in batch requests (see the
    /// module notes), and returns each item's outcome. Applied items are recorded, so later
    /// reads in this process see them; IPs another resource of this configuration writes in
    /// this run are not written ([`SyncError::Claimed`]).
    pub async fn sync(&self, zone: &str, deletes: Vec<String>, puts: Vec<Mapping>) -> SyncOutcomes {
        let mut outcomes = SyncOutcomes::new();
        let mut to_put = Vec::new();
        for mapping in puts {
            if self.claim(zone, &mapping.origin_ip) {
                to_put.push(mapping);
            } else {
                let ip = mapping.origin_ip.clone();
                outcomes.insert(ip.clone(), Err(SyncError::Claimed(ip)));
            }
        }
        let wanted: HashMap<String, Option<Mapping>> = deletes
            .iter()
            .map(|ip| (ip.clone(), None))
            .chain(to_put.iter().map(|m| (m.origin_ip.clone(), Some(m.clone()))))
            .collect();
        let mut unknown: Vec<(String, CloudflareError)> = Vec::new();
        for chunks in [
            deletes
                .chunks(BATCH_LIMIT)
                .map(|c| Chunk::Delete(c.to_vec()))
                .collect::<Vec<_>>(),
            to_put.chunks(BATCH_LIMIT).map(|c| Chunk::Put(c.to_vec())).collect(),
        ] {
            let (settled, lost) = self.send_all(zone, chunks).await;
            for (ip, result) in settled {
                outcomes.insert(ip, result.map_err(SyncError::Refused));
            }
            unknown.extend(lost);
        }
        if !unknown.is_empty() {
            self.settle_unknown(zone, unknown, &wanted, &mut outcomes).await;
        }
        for (ip, outcome) in &outcomes {
            if outcome.is_ok() {
                let written = wanted.get(ip).cloned().flatten();
                self.record(zone, ip, written);
            }
        }
        outcomes
    }

    /// Sends the chunks, [`CONCURRENT_REQUESTS`] at a time, narrowing refused ones; returns
    /// the settled items and those whose outcome is unknown (with the error that left them so).
    async fn send_all(
        &self,
        zone: &str,
        chunks: Vec<Chunk>,
    ) -> (
        Vec<(String, Result<(), CloudflareError>)>,
        Vec<(String, CloudflareError)>,
    ) {
        let mut queue: Vec<Chunk> = chunks;
        queue.reverse();
        let mut running = JoinSet::new();
        let (mut settled, mut unknown) = (Vec::new(), Vec::new());
        loop {
            while running.len() < CONCURRENT_REQUESTS {
                let Some(chunk) = queue.pop() else { break };
                running.spawn(send(self.client().clone(), zone.to_string(), chunk));
            }
            let Some(joined) = running.join_next().await else { break };
            let sent = match joined {
                Ok(sent) => sent,
                // A request task that panicked or was cancelled: its items' outcome is unknown,
                // but which items they were is lost with it, so nothing to add here; the caller
                // finds them missing from the outcomes.
                Err(e) => {
                    tracing::warn!("a batch request task failed: {e}");
                    continue;
                }
            };
            settled.extend(sent.settled);
            unknown.extend(sent.unknown.into_iter().map(|ip| {
                (
                    ip,
                    CloudflareError::Transport("the batch request got no usable response".into()),
                )
            }));
            if let Some(chunk) = sent.narrow {
                queue.extend(chunk.halves());
            }
        }
        (settled, unknown)
    }

    /// Lists the zone once to see whether the writes whose outcome is unknown were applied.
    async fn settle_unknown(
        &self,
        zone: &str,
        unknown: Vec<(String, CloudflareError)>,
        wanted: &HashMap<String, Option<Mapping>>,
        outcomes: &mut SyncOutcomes,
    ) {
        match self.client().list(zone).await {
            Ok(live) => {
                let live: HashMap<String, Mapping> = live.into_iter().map(|m| (m.origin_ip.clone(), m)).collect();
                for (ip, error) in unknown {
                    let applied = match wanted.get(&ip).cloned().flatten() {
                        None => !live.contains_key(&ip),
                        Some(m) => live
                            .get(&ip)
                            .is_some_and(|l| l.vendor == m.vendor && l.region == m.region),
                    };
                    outcomes.insert(
                        ip,
                        if applied {
                            Ok(())
                        } else {
                            Err(SyncError::Refused(error))
                        },
                    );
                }
            }
            Err(_) => {
                for (ip, error) in unknown {
                    outcomes.insert(ip, Err(SyncError::Unconfirmed(error)));
                }
            }
        }
    }
}
