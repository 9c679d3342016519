//! `locality audit --athena`: the query's lifecycle in the user's Athena, through the official
//! SDK (`aws-sdk-athena`, awsJson1_1). StartQueryExecution with a ClientRequestToken; polls of
//! GetQueryExecution with backoff (the first within 200 ms, never more than 2 s apart); every
//! GetQueryResults page (the first page's first row is the header); a throttled call retried
//! within the deadline; StopQueryExecution on Ctrl-C, SIGTERM and at the deadline. What the
//! query cost comes back with the rows.

use std::time::{Duration, Instant};

use aws_sdk_athena::types::{
    QueryExecutionContext, QueryExecutionState, ResultConfiguration, ResultReuseByAgeConfiguration,
    ResultReuseConfiguration,
};

use super::athena_rows::MOST_ROWS;

/// The most bytes one Athena answer may hold (a GetQueryResults page is at most 1,000 rows).
pub const ANSWER_MAX_BYTES: usize = 16 << 20;

/// What `--athena-*` asks for.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--athena-database`.
    pub database: String,
    /// `--athena-workgroup`.
    pub workgroup: String,
    /// `--athena-output`.
    pub output: Option<String>,
    /// `--athena-timeout`.
    pub timeout: Duration,
    /// `--athena-reuse` (minutes).
    pub reuse_minutes: Option<u32>,
    /// `--athena-price-per-tb` (USD per TB scanned).
    pub price_per_tb: f64,
}

/// What a query cost, as Athena says.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryCost {
    /// The query execution id.
    pub query_execution_id: String,
    /// Bytes scanned.
    pub data_scanned_bytes: u64,
    /// USD: the price per TB (10^12 bytes) of the bytes scanned, rounded up to the MB, 10 MB at
    /// least.
    pub cost_usd: f64,
    /// Engine time.
    pub engine_time_ms: u64,
    /// Whether Athena served it from a previous query's results.
    pub reused: bool,
}

/// Why the query gave no rows: said, with the exit status.
#[derive(Debug)]
pub enum Ended {
    /// Ctrl-C or SIGTERM: the query was stopped (exit 130).
    Interrupted(String),
    /// Anything else (exit 1).
    Failed(String),
}

/// The price of `bytes` scanned at `per_tb` USD per TB: rounded up to the MB, 10 MB at least.
pub fn price(bytes: u64, per_tb: f64) -> f64 {
    const MB: u64 = 1_000_000;
    let billed = bytes.div_ceil(MB).max(10) * MB;
    billed as f64 / 1e12 * per_tb
}

fn is_throttling(code: Option<&str>) -> bool {
    matches!(code, Some("TooManyRequestsException" | "ThrottlingException"))
}

/// An SDK error said in one line (its code and message, escaped).
fn said<E: aws_sdk_athena::error::ProvideErrorMetadata + std::error::Error + 'static>(call: &str, e: &E) -> String {
    let text = match (e.code(), e.message()) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code.to_string(),
        _ => {
            // No code: the SDK's own error, and what caused it (a body past its bound, a
            // connection reset), each once.
            let mut text = e.to_string();
            let mut next = e.source();
            while let Some(cause) = next {
                let more = cause.to_string();
                if !text.contains(&more) {
                    text = format!("{text}: {more}");
                }
                next = cause.source();
            }
            text
        }
    };
    format!(
        "Athena {call}: {}",
        locality_resolve::printable::printable_cut(&text, 400)
    )
}

/// Ctrl-C and SIGTERM, listened for from the moment it is made: a signal that arrives while
/// a call is under way is kept until [`Interrupts::recv`] is next awaited. (A listener made
/// afresh at each wait lost a signal that came during a call: the audit then polled a held
/// query to its deadline.)
struct Interrupts {
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    fn new() -> Interrupts {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Interrupts {
                int: signal(SignalKind::interrupt()).ok(),
                term: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Interrupts {}
        }
    }

    /// Resolves when Ctrl-C or SIGTERM has arrived (since this was made).
    async fn recv(&mut self) {
        #[cfg(unix)]
        {
            async fn one(signal: &mut Option<tokio::signal::unix::Signal>) {
                match signal {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                () = one(&mut self.int) => {}
                () = one(&mut self.term) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// How long a StopQueryExecution may take before the audit ends without its answer.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// What takes each row of an answer (each value, `None` for SQL NULL), the header first.
pub type OnRow<'a> = dyn FnMut(&[Option<String>]) -> Result<(), String> + 'a;

/// Runs `sql`, hands each row of its answer to `on_row` as its page arrives (the header
/// first; nothing is held here), and says what it cost.
///
/// # Errors
/// [`Ended`]: interrupted (the query stopped), or failed with Athena's reason, or `on_row`'s,
/// and the query id.
pub async fn run(
    client: &aws_sdk_athena::Client,
    sql: &str,
    options: &Options,
    on_row: &mut OnRow<'_>,
) -> Result<QueryCost, Ended> {
    let deadline = Instant::now() + options.timeout;
    let mut interrupts = Interrupts::new();
    let token = format!(
        "locality-audit-{}-{:032x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let mut start = client
        .start_query_execution()
        .query_string(sql)
        .client_request_token(token)
        .work_group(&options.workgroup)
        .query_execution_context(QueryExecutionContext::builder().database(&options.database).build());
    if let Some(output) = &options.output {
        start = start.result_configuration(ResultConfiguration::builder().output_location(output).build());
    }
    if let Some(minutes) = options.reuse_minutes {
        start = start.result_reuse_configuration(
            ResultReuseConfiguration::builder()
                .result_reuse_by_age_configuration(
                    ResultReuseByAgeConfiguration::builder()
                        .enabled(true)
                        .max_age_in_minutes(minutes as i32)
                        .build(),
                )
                .build(),
        );
    }
    // The start, retried while throttled (the same token: Athena starts one query).
    let id = loop {
        let sent = tokio::select! {
            sent = start.clone().send() => sent,
            () = interrupts.recv() => return Err(Ended::Interrupted("interrupted before the query started".into())),
        };
        match sent {
            Ok(out) => match out.query_execution_id {
                // An id (a UUID): letters, digits and `-`, never a line of its own.
                Some(id)
                    if !id.is_empty()
                        && id.len() <= 128
                        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
                {
                    break id
                }
                Some(id) if !id.is_empty() => {
                    return Err(Ended::Failed(format!(
                        "Athena StartQueryExecution answered a query execution id that is not one (letters, digits and -, at most 128): \"{}\"",
                        locality_resolve::printable::printable_cut(&id, 60)
                    )))
                }
                _ => {
                    return Err(Ended::Failed(
                        "Athena StartQueryExecution answered no query execution id".into(),
                    ))
                }
            },
            Err(e)
                if is_throttling(aws_sdk_athena::error::ProvideErrorMetadata::code(&e))
                    && Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(Ended::Failed(said("StartQueryExecution", &e))),
        }
    };
    let stop = |why: String| {
        let id = id.clone();
        async move {
            let stopped = tokio::time::timeout(
                STOP_TIMEOUT,
                client.stop_query_execution().query_execution_id(&id).send(),
            )
            .await;
            let note = match stopped {
                Ok(Ok(_)) => format!("; query {id} stopped (StopQueryExecution)"),
                Ok(Err(e)) => format!("; query {id}: {}", said("StopQueryExecution", &e)),
                Err(_) => format!(
                    "; query {id}: StopQueryExecution did not answer within {} s (stop it in the console)",
                    STOP_TIMEOUT.as_secs()
                ),
            };
            format!("{why}{note}")
        }
    };
    // Poll: the first within 200 ms, then backing off to 2 s between polls.
    let mut wait = Duration::from_millis(150);
    let execution = loop {
        let slept = tokio::select! {
            () = tokio::time::sleep(wait.min(deadline.saturating_duration_since(Instant::now()))) => true,
            () = interrupts.recv() => false,
        };
        if !slept {
            return Err(Ended::Interrupted(stop("interrupted".into()).await));
        }
        if Instant::now() >= deadline {
            return Err(Ended::Failed(
                stop(format!(
                    "the query did not finish within --athena-timeout {}s",
                    options.timeout.as_secs()
                ))
                .await,
            ));
        }
        wait = (wait.mul_f64(1.5)).min(Duration::from_secs(2));
        // (Raced with the signals and the deadline: a poll that is not answered ends neither.)
        let left = deadline.saturating_duration_since(Instant::now());
        let got = tokio::select! {
            got = tokio::time::timeout(left, client.get_query_execution().query_execution_id(&id).send()) => match got {
                Ok(got) => got,
                Err(_) => continue, // the deadline: said at the top of the loop
            },
            () = interrupts.recv() => return Err(Ended::Interrupted(stop("interrupted".into()).await)),
        };
        let execution = match got {
            Ok(out) => out.query_execution,
            Err(e) if is_throttling(aws_sdk_athena::error::ProvideErrorMetadata::code(&e)) => continue,
            Err(e) => return Err(Ended::Failed(format!("{} (query {id})", said("GetQueryExecution", &e)))),
        };
        let Some(execution) = execution else { continue };
        let state = execution.status.as_ref().and_then(|s| s.state.clone());
        match state {
            Some(QueryExecutionState::Succeeded) => break execution,
            Some(QueryExecutionState::Failed) | Some(QueryExecutionState::Cancelled) => {
                let reason = execution
                    .status
                    .as_ref()
                    .and_then(|s| s.state_change_reason.as_deref())
                    .unwrap_or("no reason given");
                return Err(Ended::Failed(format!(
                    "Athena query {id} {}: {}",
                    if state == Some(QueryExecutionState::Failed) {
                        "failed"
                    } else {
                        "was cancelled"
                    },
                    locality_resolve::printable::printable_cut(reason, 400)
                )));
            }
            _ => {}
        }
    };
    let statistics = execution.statistics.as_ref();
    let scanned = statistics
        .and_then(|s| s.data_scanned_in_bytes)
        .map_or(0, |b| u64::try_from(b).unwrap_or(0));
    let cost = QueryCost {
        query_execution_id: id.clone(),
        data_scanned_bytes: scanned,
        cost_usd: price(scanned, options.price_per_tb),
        engine_time_ms: statistics
            .and_then(|s| s.engine_execution_time_in_millis)
            .map_or(0, |t| u64::try_from(t).unwrap_or(0)),
        reused: statistics
            .and_then(|s| s.result_reuse_information.as_ref())
            .is_some_and(|r| r.reused_previous_result),
    };
    // Every page, each row handed on as it comes.
    let mut rows = 0usize;
    let mut next: Option<String> = None;
    let mut pages = 0u64;
    loop {
        if Instant::now() >= deadline {
            return Err(Ended::Failed(format!(
                "the results of query {id} were not read within --athena-timeout {}s",
                options.timeout.as_secs()
            )));
        }
        let got = tokio::select! {
            got = client
                .get_query_results()
                .query_execution_id(&id)
                .max_results(1000)
                .set_next_token(next.clone())
                .send() => got,
            () = interrupts.recv() => return Err(Ended::Interrupted(format!("interrupted while reading the results of query {id}"))),
        };
        let out = match got {
            Ok(out) => out,
            Err(e) if is_throttling(aws_sdk_athena::error::ProvideErrorMetadata::code(&e)) => {
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            Err(e) => return Err(Ended::Failed(format!("{} (query {id})", said("GetQueryResults", &e)))),
        };
        pages += 1;
        for row in out.result_set.and_then(|r| r.rows).unwrap_or_default() {
            let values: Vec<Option<String>> = row
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|d| d.var_char_value)
                .collect();
            on_row(&values).map_err(|e| Ended::Failed(format!("{e} (query {id})")))?;
            rows += 1;
        }
        if rows > MOST_ROWS + 1 {
            return Err(Ended::Failed(format!("query {id} answered more than {MOST_ROWS} rows")));
        }
        match out.next_token {
            Some(token) if !token.is_empty() => {
                if next.as_deref() == Some(token.as_str()) {
                    return Err(Ended::Failed(format!(
                        "GetQueryResults of query {id} gave the same NextToken twice"
                    )));
                }
                next = Some(token);
            }
            _ => break,
        }
        if pages > 1 + (MOST_ROWS as u64) / 1000 {
            return Err(Ended::Failed(format!("GetQueryResults of query {id} did not end")));
        }
    }
    if rows == 0 {
        return Err(Ended::Failed(format!("query {id} answered no header row")));
    }
    Ok(cost)
}

#[cfg(test)]
mod tests {
    use super::price;

    #[test]
    fn the_price_is_per_tb_rounded_up_to_the_mb_with_10_mb_at_least() {
        assert_eq!(price(0, 5.0), 10e6 / 1e12 * 5.0);
        assert_eq!(price(10_000_001, 5.0), 11e6 / 1e12 * 5.0);
        assert_eq!(price(1_000_000_000_000, 5.0), 5.0);
    }
}
