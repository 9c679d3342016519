//! Per-zone coordination inside one provider process, so that N hints cost about ceil(N/100)
//! requests instead of N:
//!
//! - **listings**: the first read of a zone lists it (100 a page); concurrent reads wait for that
//!   one listing and share it;
//! - **supported regions**: fetched once per zone;
//! - **batches**: creates/updates (PUT) and deletes that arrive within a short window are sent as
//!   one batch request (at most 100 items), and each item's own outcome goes back to its caller.
//!
//! Terraform runs each walk in a fresh process, so the caches never outlive one command.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, OnceCell};

use super::{Cloudflare, CloudflareError, Mapping, SupportedRegions, BATCH_LIMIT, ZONE_LIMIT};

type Shared<T> = Arc<OnceCell<Result<Arc<T>, CloudflareError>>>;

/// How long a batch stays open after the last item joined it: it closes once no item has
/// joined for this long. Terraform starts the next apply as each one finishes, and on a busy
/// machine (a CI runner beside a build) the next items arrive up to a few hundred milliseconds
/// apart, so the window follows the arrivals instead of a fixed time from the first.
pub const BATCH_WINDOW: Duration = Duration::from_millis(250);
/// However long items keep arriving, a batch is sent this long after its first item at most.
pub(crate) const BATCH_WINDOW_MAX: Duration = Duration::from_millis(1_000);
/// How often a waiting batch looks for new items.
const BATCH_POLL: Duration = Duration::from_millis(5);

/// The outcome of one item of a batch: `Ok` with the mapping as stored (single writes carry
/// `modified_on`), or the item's own error.
pub(crate) type ItemResult<T> = Result<T, CloudflareError>;

type Waiting<T, R> = Vec<(T, oneshot::Sender<ItemResult<R>>)>;

/// Why [`Zones::create`] did not create a mapping.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CreateError {
    /// Another resource of this configuration already manages the IP.
    #[error("another resource in this configuration already manages {ip} in zone {zone}")]
    Claimed {
        /// The zone.
        zone: String,
        /// The IP.
        ip: String,
    },
    /// The zone already has a mapping for the IP (no silent takeover: import it).
    #[error("zone {zone} already has a region hint for {} ({}:{})", existing.origin_ip, existing.vendor, existing.region)]
    Exists {
        /// The zone.
        zone: String,
        /// The mapping it has.
        existing: Mapping,
    },
    /// The zone holds [`ZONE_LIMIT`] mappings already.
    #[error("zone {zone} already has {ZONE_LIMIT} region hints, Cloudflare's limit")]
    ZoneFull {
        /// The zone.
        zone: String,
    },
    /// The listing or the write failed.
    #[error(transparent)]
    Api(#[from] CloudflareError),
    /// The write may have been applied (its response was lost) and reading it back failed too.
    #[error("zone {zone}: the write of {ip} may or may not have been applied ({source}), and reading it back failed")]
    Unconfirmed {
        /// The zone.
        zone: String,
        /// The IP.
        ip: String,
        /// The write's error.
        source: CloudflareError,
    },
}

/// Whether a zone supports a region, per its `supported_regions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Supported, with its upper-tier colos.
    Supported(Vec<String>),
    /// Not supported; the vendor's supported region names (for suggestions).
    Unsupported(Vec<String>),
    /// The zone publishes no list (e.g. Tiered Cache off): only Cloudflare can tell, at write.
    Unpublished,
}

/// Zone caches and batchers for one provider process.
pub struct Zones {
    client: Cloudflare,
    listings: Mutex<HashMap<String, Shared<BTreeMap<String, Mapping>>>>,
    supported: Mutex<HashMap<String, Shared<SupportedRegions>>>,
    /// IPs a resource of this configuration creates or updates, per zone (one resource per IP).
    claimed: Mutex<HashSet<(String, String)>>,
    /// What this process wrote since listing a zone: the mapping put, or `None` when deleted.
    written: Mutex<HashMap<(String, String), Option<Mapping>>>,
    puts: Mutex<HashMap<String, Waiting<Mapping, Mapping>>>,
    deletes: Mutex<HashMap<String, Waiting<String, ()>>>,
    /// Per zone, the puts (and deletes) under way: Terraform's parallelism as seen from here.
    put_calls: Calls,
    delete_calls: Calls,
    /// What the resources planned in this process manage, per zone.
    planned: Mutex<HashMap<String, ZonePlan>>,
    /// Per zone: zone-wide writes hold it exclusively, single-hint deletes shared (see
    /// [`Zones::exclusive`]).
    locks: Mutex<HashMap<String, Arc<tokio::sync::RwLock<()>>>>,
}

/// Which kind of resource manages an IP (for reporting two resources that manage one IP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A `locality_region_hint`.
    Single,
    /// A `locality_region_hints`.
    ZoneWide {
        /// Whether it deletes the zone's other mappings.
        exclusive: bool,
    },
}

#[derive(Default)]
struct ZonePlan {
    owners: HashMap<String, Owner>,
    exclusive: bool,
}

impl Zones {
    /// Coordination over `client`.
    pub fn new(client: Cloudflare) -> Self {
        Zones {
            client,
            listings: Mutex::default(),
            supported: Mutex::default(),
            claimed: Mutex::default(),
            written: Mutex::default(),
            puts: Mutex::default(),
            deletes: Mutex::default(),
            put_calls: Calls::default(),
            delete_calls: Calls::default(),
            planned: Mutex::default(),
            locks: Mutex::default(),
        }
    }

    /// The client.
    pub fn client(&self) -> &Cloudflare {
        &self.client
    }

    /// The zone's mappings by canonical IP, listed once per process.
    ///
    /// # Errors
    /// The listing's error (shared by every caller waiting for it; a later call lists again).
    pub async fn listing(&self, zone: &str) -> Result<Arc<BTreeMap<String, Mapping>>, CloudflareError> {
        once_per_zone(&self.listings, zone, || async {
            let all = self.client.list(zone).await?;
            Ok(all.into_iter().map(|m| (m.origin_ip.clone(), m)).collect())
        })
        .await
    }

    /// The zone's supported regions, fetched once per process.
    ///
    /// # Errors
    /// The request's error (e.g. Tiered Cache disabled); a later call asks again.
    pub async fn supported_regions(&self, zone: &str) -> Result<Arc<SupportedRegions>, CloudflareError> {
        once_per_zone(&self.supported, zone, || self.client.supported_regions(zone)).await
    }

    /// The zone's mapping for `ip`: what this process last wrote, else the (shared) listing.
    ///
    /// # Errors
    /// The listing's error.
    pub async fn mapping(&self, zone: &str, ip: &str) -> Result<Option<Mapping>, CloudflareError> {
        let key = (zone.to_string(), ip.to_string());
        if let Some(written) = self.written.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(written.clone());
        }
        Ok(self.listing(zone).await?.get(ip).cloned())
    }

    /// The zone's mappings by canonical IP as they are now: the (shared) listing with what this
    /// process wrote since.
    ///
    /// # Errors
    /// The listing's error.
    pub async fn current(&self, zone: &str) -> Result<BTreeMap<String, Mapping>, CloudflareError> {
        let mut all = (*self.listing(zone).await?).clone();
        let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        for ((z, ip), mapping) in written.iter() {
            if z != zone {
                continue;
            }
            match mapping {
                Some(m) => all.insert(ip.clone(), m.clone()),
                None => all.remove(ip),
            };
        }
        Ok(all)
    }

    fn lock(&self, zone: &str) -> Arc<tokio::sync::RwLock<()>> {
        self.locks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(zone.to_string())
            .or_default()
            .clone()
    }

    /// Held by a zone-wide write (listing, claims, batch writes) so that no single-hint delete
    /// of the same zone runs in between: an IP moving from a destroyed `locality_region_hint`
    /// into `locality_region_hints` is either deleted before the zone-wide resource lists the
    /// zone (and written again by it) or seen as claimed by the delete (and kept).
    pub async fn exclusive(&self, zone: &str) -> tokio::sync::OwnedRwLockWriteGuard<()> {
        self.lock(zone).write_owned().await
    }

    /// Held by a single-hint delete from its claim check to its end; many at once (they are
    /// batched together).
    pub async fn shared(&self, zone: &str) -> tokio::sync::OwnedRwLockReadGuard<()> {
        self.lock(zone).read_owned().await
    }

    /// Whether a resource of this configuration claimed `ip` for writing in this process.
    pub fn is_claimed(&self, zone: &str, ip: &str) -> bool {
        self.claimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(zone.to_string(), ip.to_string()))
    }

    /// Records, while planning, which resource kind manages `ips` of a zone, and returns the
    /// IPs another resource of this configuration already planned to manage (with its kind).
    /// A zone-wide resource with `exclusive` conflicts with every other resource of its zone.
    pub fn plan_claim(&self, zone: &str, owner: Owner, ips: &[String]) -> Vec<(String, Owner)> {
        let mut plans = self.planned.lock().unwrap_or_else(|e| e.into_inner());
        let plan = plans.entry(zone.to_string()).or_default();
        let mut conflicts = Vec::new();
        for ip in ips {
            let other = plan
                .owners
                .get(ip)
                .copied()
                .filter(|other| !(matches!(owner, Owner::Single) && matches!(other, Owner::Single)))
                .or(plan.exclusive.then_some(Owner::ZoneWide { exclusive: true }));
            if let Some(other) = other {
                conflicts.push((ip.clone(), other));
            }
        }
        if let Owner::ZoneWide { exclusive: true } = owner {
            for (ip, other) in &plan.owners {
                if !ips.contains(ip) {
                    conflicts.push((ip.clone(), *other));
                }
            }
        }
        for ip in ips {
            plan.owners.entry(ip.clone()).or_insert(owner);
        }
        if let Owner::ZoneWide { exclusive: true } = owner {
            plan.exclusive = true;
        }
        conflicts
    }

    /// Records that a resource of this configuration creates or updates `ip`; `false` if
    /// another one already does (two resources for one IP in one configuration).
    pub fn claim(&self, zone: &str, ip: &str) -> bool {
        self.claimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((zone.to_string(), ip.to_string()))
    }

    /// Records what this process wrote (or deleted: `None`), so later reads see it.
    pub(crate) fn record(&self, zone: &str, ip: &str, mapping: Option<Mapping>) {
        let key = (zone.to_string(), ip.to_string());
        if mapping.is_none() {
            // Deleted: a resource may create it again in this run (`terraform apply -replace`).
            self.claimed.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
        }
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, mapping);
    }

    /// Creates a mapping that must not exist yet (no silent takeover): claims the IP for this
    /// process, checks the zone's listing (the mapping must be absent, the zone not full), then
    /// writes it (batched with others arriving at the same time).
    ///
    /// # Errors
    /// [`CreateError`].
    pub async fn create(self: &Arc<Self>, zone: &str, mapping: Mapping) -> Result<Mapping, CreateError> {
        if !self.claim(zone, &mapping.origin_ip) {
            return Err(CreateError::Claimed {
                zone: zone.to_string(),
                ip: mapping.origin_ip,
            });
        }
        if let Some(existing) = self.mapping(zone, &mapping.origin_ip).await? {
            return Err(CreateError::Exists {
                zone: zone.to_string(),
                existing,
            });
        }
        if self.listing(zone).await?.len() >= ZONE_LIMIT {
            return Err(CreateError::ZoneFull { zone: zone.to_string() });
        }
        match self.put(zone, mapping.clone()).await {
            Ok(stored) => Ok(stored),
            Err(e) if e.is_ambiguous() => self.reconcile(zone, mapping, e).await,
            Err(e) => Err(e.into()),
        }
    }

    /// After a write whose outcome is unknown: reads the mapping back. It holds what was
    /// written: adopted. It is absent or different: the write's error. It cannot be read: the
    /// outcome stays unknown ([`CreateError::Unconfirmed`]).
    async fn reconcile(&self, zone: &str, mapping: Mapping, error: CloudflareError) -> Result<Mapping, CreateError> {
        match self.read_back(zone, &mapping).await {
            Ok(Some(live)) => Ok(live),
            Ok(None) => Err(error.into()),
            Err(_) => Err(CreateError::Unconfirmed {
                zone: zone.to_string(),
                ip: mapping.origin_ip,
                source: error,
            }),
        }
    }

    /// The zone's mapping for the IP when it equals `mapping` (then it is adopted and
    /// recorded), `None` when it is absent or different.
    async fn read_back(&self, zone: &str, mapping: &Mapping) -> Result<Option<Mapping>, CloudflareError> {
        Ok(match self.client.get(zone, &mapping.origin_ip).await? {
            Some(live) if live.vendor == mapping.vendor && live.region == mapping.region => {
                tracing::info!("a write whose response was lost had been applied; adopting it");
                self.record(zone, &live.origin_ip, Some(live.clone()));
                Some(live)
            }
            _ => None,
        })
    }

    /// Replaces the mapping of an IP this configuration manages (claimed), batched with others
    /// arriving at the same time. A write whose outcome is unknown is read back and adopted when
    /// it was applied.
    ///
    /// # Errors
    /// The write's error.
    pub async fn update(self: &Arc<Self>, zone: &str, mapping: Mapping) -> ItemResult<Mapping> {
        self.claim(zone, &mapping.origin_ip);
        match self.put(zone, mapping.clone()).await {
            Err(e) if e.is_ambiguous() => match self.read_back(zone, &mapping).await {
                Ok(Some(live)) => Ok(live),
                _ => Err(e),
            },
            other => other,
        }
    }

    /// Whether the zone supports `vendor`/`region` (from its `supported_regions`, fetched once).
    ///
    /// # Errors
    /// The request's error (e.g. Tiered Cache disabled).
    pub async fn support(&self, zone: &str, vendor: &str, region: &str) -> Result<Support, CloudflareError> {
        let supported = self.supported_regions(zone).await?;
        if supported.vendors.is_empty() {
            return Ok(Support::Unpublished);
        }
        Ok(match supported.find(vendor, region) {
            Some(r) => Support::Supported(r.upper_tier_colos.clone()),
            None => Support::Unsupported(
                supported
                    .vendors
                    .get(vendor)
                    .map(|rs| rs.iter().map(|r| r.name.clone()).collect())
                    .unwrap_or_default(),
            ),
        })
    }

    /// The upper-tier colos Smart Tiered Cache uses for a region (empty when the zone does not
    /// list the region); `None` when the zone's supported regions cannot be read.
    pub async fn upper_tier_colos(&self, zone: &str, vendor: &str, region: &str) -> Option<Vec<String>> {
        let supported = self.supported_regions(zone).await.ok()?;
        Some(
            supported
                .find(vendor, region)
                .map(|r| r.upper_tier_colos.clone())
                .unwrap_or_default(),
        )
    }

    /// Creates or replaces one mapping, batched with others arriving at the same time.
    ///
    /// # Errors
    /// The item's own error, or the whole request's.
    pub async fn put(self: &Arc<Self>, zone: &str, mapping: Mapping) -> ItemResult<Mapping> {
        let (_call, peak) = self.put_calls.begin(zone);
        let (tx, rx) = oneshot::channel();
        let leader = enqueue(&self.puts, zone, mapping, tx);
        if leader {
            // The batch is sent by a task of its own: a caller that stops waiting (its
            // `timeouts`) does not cancel the other resources' writes in the same batch.
            let (this, zone) = (Arc::clone(self), zone.to_string());
            tokio::spawn(async move {
                gather(&this.puts, &zone, peak).await;
                let waiting = this.puts.lock().expect("lock").remove(&zone).unwrap_or_default();
                this.send_puts(&zone, waiting).await;
            });
        }
        let stored = rx
            .await
            .unwrap_or_else(|_| Err(CloudflareError::Transport("the batch request was cancelled".into())))?;
        self.record(zone, &stored.origin_ip, Some(stored.clone()));
        Ok(stored)
    }

    async fn send_puts(&self, zone: &str, mut waiting: Waiting<Mapping, Mapping>) {
        while !waiting.is_empty() {
            let chunk: Waiting<Mapping, Mapping> = waiting.drain(..waiting.len().min(BATCH_LIMIT)).collect();
            if chunk.len() == 1 {
                // A single write uses the single upsert, which returns modified_on.
                let (mapping, tx) = chunk.into_iter().next().expect("one item");
                let _ = tx.send(self.client.put(zone, &mapping).await);
                continue;
            }
            let items: Vec<Mapping> = chunk.iter().map(|(m, _)| m.clone()).collect();
            match self.client.batch_put(zone, &items).await {
                Ok(result) => {
                    let failed: HashMap<String, String> = result
                        .failed
                        .into_iter()
                        .map(|f| (f.origin_ip, f.error.unwrap_or_else(|| "refused".into())))
                        .collect();
                    let succeeded: HashSet<String> = result.succeeded.into_iter().map(|s| s.origin_ip).collect();
                    for (mapping, tx) in chunk {
                        let outcome = if let Some(error) = failed.get(&mapping.origin_ip) {
                            Err(item_error(error))
                        } else if succeeded.contains(&mapping.origin_ip) {
                            Ok(Mapping {
                                modified_on: None,
                                ..mapping
                            })
                        } else {
                            Err(CloudflareError::Decode(format!(
                                "the batch result does not mention {}",
                                mapping.origin_ip
                            )))
                        };
                        let _ = tx.send(outcome);
                    }
                }
                Err(e) => {
                    for (_, tx) in chunk {
                        let _ = tx.send(Err(e.clone()));
                    }
                }
            }
        }
    }

    /// Deletes one mapping, batched with others arriving at the same time. A mapping that is
    /// already gone is success.
    ///
    /// # Errors
    /// The item's own error, or the whole request's.
    pub async fn delete(self: &Arc<Self>, zone: &str, ip: String) -> ItemResult<()> {
        let deleted_ip = ip.clone();
        let (_call, peak) = self.delete_calls.begin(zone);
        let (tx, rx) = oneshot::channel();
        let leader = enqueue(&self.deletes, zone, ip, tx);
        if leader {
            // Sent by a task of its own, as [`Zones::put`]'s batches.
            let (this, zone) = (Arc::clone(self), zone.to_string());
            tokio::spawn(async move { this.send_deletes(&zone, peak).await });
        }
        let deleted = rx
            .await
            .unwrap_or_else(|_| Err(CloudflareError::Transport("the batch request was cancelled".into())));
        match deleted {
            Ok(()) => {}
            // The delete may have been applied although its response was lost: read back.
            Err(e) if e.is_ambiguous() => {
                if !matches!(self.client.get(zone, &deleted_ip).await, Ok(None)) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
        self.record(zone, &deleted_ip, None);
        Ok(())
    }

    /// Gathers the deletes arriving in the batch window and sends them, 100 a request.
    async fn send_deletes(&self, zone: &str, peak: usize) {
        gather(&self.deletes, zone, peak).await;
        let mut waiting = self.deletes.lock().expect("lock").remove(zone).unwrap_or_default();
        while !waiting.is_empty() {
            let chunk: Waiting<String, ()> = waiting.drain(..waiting.len().min(BATCH_LIMIT)).collect();
            let ips: Vec<String> = chunk.iter().map(|(ip, _)| ip.clone()).collect();
            match self.client.batch_delete(zone, &ips).await {
                Ok(result) => {
                    let failed: HashMap<String, String> = result
                        .failed
                        .into_iter()
                        .map(|f| (f.origin_ip, f.error.unwrap_or_default()))
                        .collect();
                    for (ip, tx) in chunk {
                        let outcome = match failed.get(&ip) {
                            Some(error) if !is_not_found(error) => Err(item_error(error)),
                            _ => Ok(()),
                        };
                        let _ = tx.send(outcome);
                    }
                }
                // Not found as a whole (no such mappings, or no such zone): they are gone,
                // which is what a delete wants.
                Err(CloudflareError::NotFound { .. }) => {
                    for (_, tx) in chunk {
                        let _ = tx.send(Ok(()));
                    }
                }
                Err(e) => {
                    for (_, tx) in chunk {
                        let _ = tx.send(Err(e.clone()));
                    }
                }
            }
        }
    }
}

/// The value `fetch` gives for `zone`, fetched once and shared by every caller, including those
/// that arrive while it is being fetched. A failure is shared by the callers that waited for it
/// but not remembered: the next call fetches again (a passing outage must not fail the rest of
/// the run).
async fn once_per_zone<T, F, Fut>(
    cells: &Mutex<HashMap<String, Shared<T>>>,
    zone: &str,
    fetch: F,
) -> Result<Arc<T>, CloudflareError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<T, CloudflareError>>,
{
    let cell = cells
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(zone.to_string())
        .or_default()
        .clone();
    let result = cell.get_or_init(|| async { fetch().await.map(Arc::new) }).await.clone();
    if result.is_err() {
        let mut cells = cells.lock().unwrap_or_else(|e| e.into_inner());
        if cells.get(zone).is_some_and(|current| Arc::ptr_eq(current, &cell)) {
            cells.remove(zone);
        }
    }
    result
}

/// Keeps a batch open while items keep joining it: it closes when none has joined for
/// [`BATCH_WINDOW`], when it is full, when it holds `peak` items (the most calls that were
/// ever under way at once before it opened: Terraform sends no more while they all wait; 0:
/// not known yet), or [`BATCH_WINDOW_MAX`] after it opened.
async fn gather<T, R>(queues: &Mutex<HashMap<String, Waiting<T, R>>>, zone: &str, peak: usize) {
    let len = || queues.lock().expect("lock").get(zone).map_or(0, Vec::len);
    let peak = if peak == 0 { BATCH_LIMIT } else { peak.min(BATCH_LIMIT) };
    let opened = tokio::time::Instant::now();
    let (mut seen, mut last_joined) = (len(), opened);
    loop {
        tokio::time::sleep(BATCH_POLL).await;
        let now = len();
        if now != seen {
            (seen, last_joined) = (now, tokio::time::Instant::now());
        }
        if seen >= peak || last_joined.elapsed() >= BATCH_WINDOW || opened.elapsed() >= BATCH_WINDOW_MAX {
            return;
        }
    }
}

/// Per zone, the calls under way and the most that ever were at once.
#[derive(Debug, Default)]
struct Calls(Arc<Mutex<HashMap<String, (usize, usize)>>>);

/// One call under way; it ends when dropped (returned, failed or cancelled).
struct Call {
    calls: Arc<Mutex<HashMap<String, (usize, usize)>>>,
    zone: String,
}

impl Calls {
    /// Counts a call in; with the most calls that were under way at once before it.
    fn begin(&self, zone: &str) -> (Call, usize) {
        let mut calls = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (under_way, most) = calls.entry(zone.to_string()).or_default();
        let before = *most;
        *under_way += 1;
        *most = (*most).max(*under_way);
        (
            Call {
                calls: Arc::clone(&self.0),
                zone: zone.to_string(),
            },
            before,
        )
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((under_way, _)) = calls.get_mut(&self.zone) {
            *under_way = under_way.saturating_sub(1);
        }
    }
}

fn enqueue<T, R>(
    queues: &Mutex<HashMap<String, Waiting<T, R>>>,
    zone: &str,
    item: T,
    tx: oneshot::Sender<ItemResult<R>>,
) -> bool {
    let mut queues = queues.lock().expect("lock");
    let queue = queues.entry(zone.to_string()).or_default();
    queue.push((item, tx));
    queue.len() == 1
}

/// A failed batch item's error text as an error value (the API gives text only; a leading
/// `NNNN:` code is kept as the code).
pub(super) fn item_error(text: &str) -> CloudflareError {
    let code = text
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    CloudflareError::Api {
        status: 200,
        code,
        message: text.to_string(),
    }
}

/// Whether a failed delete item says the mapping does not exist (deleting it is then success).
pub(super) fn is_not_found(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("not found")
        || t.contains("no mapping")
        || t.contains("does not exist")
        || t.starts_with("1142")
        || t.starts_with("1163")
}
