//! Reading flow logs: files, folders (recursively `*.log` and `*.log.gz`) and S3 prefixes
//! (listed, then streamed), several at once, gzip or plain, into one [`Tally`].

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::flow_log::{self, Layout, Record};
use super::tally::Tally;

/// Where flow logs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A file or a folder.
    Path(PathBuf),
    /// `s3://bucket/prefix`.
    S3 {
        /// The bucket.
        bucket: String,
        /// The key prefix (may be empty).
        prefix: String,
    },
}

impl Location {
    /// Parses `--flow-logs`.
    ///
    /// # Errors
    /// A sentence saying what is allowed.
    pub fn parse(value: &str) -> Result<Location, String> {
        if let Some(rest) = value.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(format!("{value:?} names no bucket: use s3://BUCKET/PREFIX"));
            }
            // S3's own rules: a bucket name is 3 to 63 of a-z, 0-9, '.' and '-'; a key (and so a
            // prefix) at most 1,024 bytes. Longer ones could not even be asked for.
            let bucket_ok = (3..=63).contains(&bucket.len())
                && bucket
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
            if !bucket_ok {
                return Err(format!(
                    "--flow-logs: the bucket \"{}\" is not an S3 bucket name (3 to 63 of a-z, 0-9, '.' and '-')",
                    locality_resolve::printable::printable_cut(bucket, 80)
                ));
            }
            if prefix.len() > MAX_KEY_BYTES {
                return Err(format!(
                    "--flow-logs: the prefix after s3://{bucket}/ is {} bytes, and S3 keys are at most {MAX_KEY_BYTES}",
                    prefix.len()
                ));
            }
            return Ok(Location::S3 {
                bucket: bucket.to_string(),
                prefix: prefix.to_string(),
            });
        }
        if value.is_empty() {
            return Err("an empty --flow-logs: use a file, a folder or s3://BUCKET/PREFIX".to_string());
        }
        if let Some((scheme, _)) = value.split_once("://") {
            return Err(format!(
                "{}:// is not a flow-log location the audit reads: use a file, a folder or s3://BUCKET/PREFIX",
                locality_resolve::printable::printable_cut(scheme, 40)
            ));
        }
        Ok(Location::Path(PathBuf::from(value)))
    }
}

/// One thing to read: a file or an S3 object, with its size for the progress bar.
#[derive(Debug, Clone)]
pub enum Input {
    /// A local file.
    File(PathBuf, u64),
    /// An S3 object.
    Object {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
        /// Its size.
        size: u64,
    },
}

impl Input {
    /// How it is named in messages.
    pub fn name(&self) -> String {
        // Control characters escaped: a name cannot move the terminal's cursor or forge a line
        // of the report or of stderr.
        super::report::printable(&match self {
            Input::File(path, _) => path.display().to_string(),
            Input::Object { bucket, key, .. } => format!("s3://{bucket}/{key}"),
        })
    }

    /// Its size in bytes (compressed, as stored).
    pub fn size(&self) -> u64 {
        match self {
            Input::File(_, size) | Input::Object { size, .. } => *size,
        }
    }
}

/// Whether a file in a folder is a flow-log file.
fn is_flow_log(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".log") || name.ends_with(".log.gz")
}

/// The files of a local location: the file itself, or a folder's flow-log files (recursively,
/// in name order), and a note when symbolic links inside were not followed.
///
/// # Errors
/// A sentence naming what cannot be read.
pub fn local_inputs(path: &Path) -> Result<(Vec<Input>, Option<String>), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.is_file() {
        return Ok((vec![Input::File(path.to_path_buf(), meta.len())], None));
    }
    let mut found = Vec::new();
    let mut links: Vec<PathBuf> = Vec::new();
    let mut folders = vec![path.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", folder.display()))?;
            let kind = entry
                .file_type()
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
            if kind.is_dir() {
                folders.push(entry.path());
            } else if kind.is_file() && is_flow_log(&entry.path()) {
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                found.push(Input::File(entry.path(), size));
            } else if kind.is_symlink() && is_flow_log(&entry.path()) {
                links.push(entry.path());
            }
        }
    }
    found.sort_by_key(Input::name);
    links.sort();
    // Links are not followed inside a folder (a loop, or a file outside it): said once.
    let note = links.first().map(|first| {
        format!(
            "{} symbolic link(s) named like flow logs in {} not followed (the first: {}); give a link's target as its own --flow-logs to read it",
            links.len(),
            super::report::printable(&path.display().to_string()),
            super::report::printable(&first.display().to_string())
        )
    });
    Ok((found, note))
}

/// The objects under an S3 prefix whose keys end in `.log` or `.log.gz`, every page, up to
/// `max_objects` keys listed (and twice as many pages as those keys fill), each key at most
/// [`MAX_KEY_BYTES`] (so a listing holds at most `max_objects` KiB of names) and each
/// continuation token at most [`MAX_TOKEN_BYTES`].
///
/// # Errors
/// The AWS error's sentence; a listing past the caps or repeating a continuation token, named
/// with its bucket and prefix.
pub async fn s3_inputs(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    prefix: &str,
    max_objects: u64,
) -> Result<Vec<Input>, String> {
    let listing = format!("s3://{bucket}/{prefix}");
    // A page holds up to 1,000 keys; a server that gives empty pages forever ends here too.
    let max_pages = max_objects.div_ceil(1000).saturating_mul(2).max(10);
    let mut found = Vec::new();
    let mut keys = 0u64;
    let mut pages = 0u64;
    let mut token: Option<String> = None;
    let mut tokens_seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    loop {
        pages += 1;
        if pages > max_pages {
            return Err(format!(
                "{listing}: the listing went past {max_pages} pages without ending: stopped (narrow the prefix, or raise --max-objects)"
            ));
        }
        let page = client
            .list_objects_v2()
            .bucket(bucket)
            .prefix(prefix)
            .set_continuation_token(token.clone())
            .send()
            .await
            .map_err(|e| locality_resolve::aws_error::describe(&format!("s3:ListObjectsV2 of {listing}"), &e))?;
        for object in page.contents.unwrap_or_default() {
            keys += 1;
            if keys > max_objects {
                return Err(format!(
                    "{listing}: more than {max_objects} objects listed (--max-objects): stopped; narrow the prefix (a day's, e.g. .../2026/12/04/), or raise --max-objects"
                ));
            }
            let Some(key) = object.key else { continue };
            if key.len() > MAX_KEY_BYTES {
                return Err(format!(
                    "{listing}: the listing holds a key of {} bytes, and S3 keys are at most {MAX_KEY_BYTES}: stopped (is the endpoint S3?)",
                    key.len()
                ));
            }
            if is_flow_log(Path::new(&key)) {
                found.push(Input::Object {
                    bucket: bucket.to_string(),
                    key,
                    size: object.size.unwrap_or(0).max(0) as u64,
                });
            }
        }
        if page.is_truncated != Some(true) {
            break;
        }
        match page.next_continuation_token.filter(|t| !t.is_empty()) {
            None => break,
            Some(next) if next.len() > MAX_TOKEN_BYTES => {
                return Err(format!(
                    "{listing}: S3 gave a continuation token of {} bytes (at most {MAX_TOKEN_BYTES} are taken): stopped (is the endpoint S3?)",
                    next.len()
                ));
            }
            Some(next) if !tokens_seen.insert(next.clone()) => {
                return Err(format!(
                    "{listing}: S3 gave a continuation token it had given before (page {pages}): stopped rather than list the same pages forever"
                ));
            }
            Some(next) => token = Some(next),
        }
    }
    Ok(found)
}

/// The longest S3 key (S3's own limit): a longer one is refused before it is kept or asked for.
pub const MAX_KEY_BYTES: usize = 1_024;
/// The longest continuation token taken (S3's are a few hundred bytes; a request carrying one of
/// 65 kB cannot even be built).
pub const MAX_TOKEN_BYTES: usize = 4_096;

/// What reading needs besides the inputs.
pub struct Reading<'a> {
    /// Node address → index.
    pub nodes: &'a HashMap<IpAddr, u32>,
    /// The fields of files without a header line (default: the default format).
    pub fields: &'a Layout,
    /// An S3 client and the runtime to drive it, when an input is an object.
    pub s3: Option<(&'a aws_sdk_s3::Client, tokio::runtime::Handle)>,
    /// How many inputs at once.
    pub threads: usize,
    /// Told of every compressed byte read (the progress bar).
    pub progress: &'a (dyn Fn(u64) + Sync),
    /// The seconds of the days asked for (`--since`, `--until`), `[from, to)`.
    pub days: Option<(u64, u64)>,
    /// The most lines one file or object may have (`--max-lines-per-file`).
    pub max_lines: u64,
    /// The most distinct clients (and interface ids) held (`--max-clients`).
    pub max_clients: u64,
    /// The most entries the tallies hold together (`--max-entries`).
    pub max_entries: u64,
}

/// The longest line kept (64 KiB; a record is a few hundred bytes, a header line a few
/// thousand): the rest of a longer line is read and dropped, and the line is skipped and
/// counted. With it, what one file or object may take in memory is bounded (the read buffers
/// and one line, per reader thread) however far it expands.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Reads one line (up to and with its `\n`) into `line`, keeping at most `cap` bytes of it:
/// (bytes consumed, whether the whole line was kept). 0 consumed is the end.
///
/// # Errors
/// The reader's.
pub fn read_line_capped(reader: &mut impl BufRead, line: &mut Vec<u8>, cap: usize) -> std::io::Result<(usize, bool)> {
    line.clear();
    let mut consumed = 0;
    let mut whole = true;
    loop {
        let available = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((consumed, whole));
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let room = cap.saturating_sub(line.len());
        if chunk.len() <= room {
            line.extend_from_slice(chunk);
        } else {
            line.extend_from_slice(&chunk[..room]);
            whole = false;
        }
        let used = chunk.len();
        reader.consume(used);
        consumed += used;
        if done {
            return Ok((consumed, whole));
        }
    }
}

/// Reads every input, several at once, into one tally.
///
/// # Errors
/// The first input that cannot be read or decompressed, named: nothing half-counted is returned.
pub fn read_all(inputs: &[Input], reading: &Reading<'_>) -> Result<Tally, String> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Result<Tally, String>>> = Mutex::new(Vec::new());
    // One bound on what every reader's tally holds, together.
    let budget = super::tally::EntryBudget::new(reading.max_entries);
    std::thread::scope(|scope| {
        for _ in 0..reading.threads.clamp(1, inputs.len().max(1)) {
            scope.spawn(|| {
                let mut tally = Tally::now()
                    .within(reading.days)
                    .holding(reading.max_clients)
                    .sharing(&budget);
                loop {
                    let at = next.fetch_add(1, Ordering::SeqCst);
                    if at >= inputs.len() || failed.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Err(e) = read_one(&inputs[at], reading, &mut tally) {
                        failed.store(true, Ordering::SeqCst);
                        results.lock().unwrap_or_else(|e| e.into_inner()).push(Err(e));
                        return;
                    }
                }
                results.lock().unwrap_or_else(|e| e.into_inner()).push(Ok(tally));
            });
        }
    });
    let mut total = Tally::now()
        .within(reading.days)
        .holding(reading.max_clients)
        .sharing(&budget);
    for result in results.into_inner().unwrap_or_else(|e| e.into_inner()) {
        total.merge(result?);
        if let Some(too_many) = total.too_many() {
            // No reader alone passed the cap; together they did. Where: the last line read by
            // the reader whose records tipped it (issue 61, item 8).
            return Err(match &total.last_read {
                Some((name, line)) => format!(
                    "{}, line {line} (the files read in parallel passed it together): {}",
                    locality_resolve::printable::recheck(name),
                    too_many.said()
                ),
                None => too_many.said(),
            });
        }
    }
    Ok(total)
}

/// Counts the bytes read through it.
struct Counting<'a, R> {
    inner: R,
    progress: &'a (dyn Fn(u64) + Sync),
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        (self.progress)(n as u64);
        Ok(n)
    }
}

/// The text of an input, decompressed when it is gzip, a line at a time.
fn open<'a>(
    input: &Input,
    s3: &Option<(&aws_sdk_s3::Client, tokio::runtime::Handle)>,
    progress: &'a (dyn Fn(u64) + Sync),
) -> Result<BufReader<Box<dyn Read + 'a>>, String> {
    let name = input.name();
    let fail = |e: std::io::Error| format!("{name}: {e}");
    let raw: Box<dyn Read> = match input {
        Input::File(path, _) => Box::new(std::fs::File::open(path).map_err(fail)?),
        Input::Object { bucket, key, .. } => {
            let Some((client, handle)) = s3 else {
                return Err(format!("{name}: no S3 client"));
            };
            let object = handle
                .block_on(client.get_object().bucket(bucket).key(key).send())
                .map_err(|e| locality_resolve::aws_error::describe(&format!("s3:GetObject of {name}"), &e))?;
            let body = object.body.into_async_read();
            Box::new(tokio_util::io::SyncIoBridge::new_with_handle(body, handle.clone()))
        }
    };
    let mut counted = BufReader::with_capacity(256 * 1024, Counting { inner: raw, progress });
    let gzip = counted.fill_buf().map_err(fail)?.starts_with(&[0x1f, 0x8b]);
    let text: Box<dyn Read + 'a> = if gzip {
        Box::new(flate2::bufread::MultiGzDecoder::new(counted))
    } else {
        Box::new(counted)
    };
    Ok(BufReader::with_capacity(256 * 1024, text))
}

/// The first line of an input (a flow log's header line), at most [`MAX_LINE_BYTES`].
///
/// # Errors
/// When it cannot be read, or is empty.
pub fn first_line(input: &Input, s3: &Option<(&aws_sdk_s3::Client, tokio::runtime::Handle)>) -> Result<String, String> {
    let mut lines = open(input, s3, &|_| {})?;
    let mut line = Vec::new();
    let (n, _) =
        read_line_capped(&mut lines, &mut line, MAX_LINE_BYTES).map_err(|e| format!("{}: {e}", input.name()))?;
    if n == 0 {
        return Err(format!("{}: empty", input.name()));
    }
    Ok(String::from_utf8_lossy(&line).trim_end().to_string())
}

fn read_one(input: &Input, reading: &Reading<'_>, tally: &mut Tally) -> Result<(), String> {
    let name = input.name();
    let mut lines = open(input, &reading.s3, reading.progress)?;
    let mut layout: Option<Layout> = None;
    let mut line = Vec::with_capacity(256);
    let mut number = 0u64;
    let node_of = |ip: IpAddr| reading.nodes.get(&ip).copied();
    loop {
        let (n, whole) = read_line_capped(&mut lines, &mut line, MAX_LINE_BYTES)
            .map_err(|e| format!("{name}: cannot be read to its end ({e}); nothing of it is counted"))?;
        if n == 0 {
            break;
        }
        number += 1;
        if number > reading.max_lines {
            return Err(format!(
                "{}: more than {} lines (--max-lines-per-file): stopped, nothing of it is counted; a flow-log file holds a few million at most (raise the flag for a larger one)",
                locality_resolve::printable::recheck(&name),
                reading.max_lines
            ));
        }
        if !whole {
            tally.skip(
                &name,
                number,
                format!(
                    "longer than {} KiB (a record is a few hundred bytes): skipped to its end",
                    MAX_LINE_BYTES / 1024
                ),
            );
            continue;
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            tally.skip(&name, number, "not UTF-8 text".to_string());
            continue;
        };
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        let current = match &layout {
            Some(layout) => layout,
            None => {
                if Layout::is_header(text) {
                    match Layout::from_header(text) {
                        Ok(found) => layout = Some(found),
                        Err(problem) => return Err(format!("{name}, line {number}: {problem}")),
                    }
                    continue;
                }
                layout.insert(reading.fields.clone())
            }
        };
        match flow_log::parse(text, current) {
            Ok(Record::Flow(flow)) => {
                tally.add(&flow, node_of);
                if let Some(too_many) = tally.too_many() {
                    return Err(format!(
                        "{}, line {number}: {}",
                        locality_resolve::printable::recheck(&name),
                        too_many.said()
                    ));
                }
            }
            Ok(Record::NoData) => tally.no_data(),
            Ok(Record::Rejected) => tally.rejected(),
            Err(bad) => tally.skip(&name, number, bad.0),
        }
    }
    tally.last_read = Some((name, number));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line longer than the cap is kept to the cap and read to its end; the next line is
    /// whole. Lines at the cap, without a final newline, and an empty input.
    #[test]
    fn a_long_line_is_cut_and_read_to_its_end() {
        let text = format!("{}\nshort\n{}\nlast", "x".repeat(100), "y".repeat(10));
        // A small buffer, so that lines span several fills.
        let mut reader = BufReader::with_capacity(7, text.as_bytes());
        let mut line = Vec::new();
        assert_eq!(read_line_capped(&mut reader, &mut line, 16).unwrap(), (101, false));
        assert_eq!(line, "x".repeat(16).as_bytes());
        assert_eq!(read_line_capped(&mut reader, &mut line, 16).unwrap(), (6, true));
        assert_eq!(line, b"short\n");
        assert_eq!(read_line_capped(&mut reader, &mut line, 11).unwrap(), (11, true));
        assert_eq!(read_line_capped(&mut reader, &mut line, 16).unwrap(), (4, true));
        assert_eq!(line, b"last");
        assert_eq!(read_line_capped(&mut reader, &mut line, 16).unwrap(), (0, true));
    }

    /// One line of 64 MiB from a small gzip (the security review's case was 1 GiB from 1 MB,
    /// which took 1.06 GB of memory; 64 MiB keeps a debug build quick): the reader never holds
    /// more than the cap of it.
    #[test]
    fn a_gzip_of_one_huge_line_is_read_in_bounded_memory() {
        use std::io::Write as _;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let block = vec![b'7'; 1 << 20];
        for _ in 0..64 {
            encoder.write_all(&block).unwrap();
        }
        encoder.write_all(b"\n").unwrap();
        let gz = encoder.finish().unwrap();
        assert!(gz.len() < 1 << 20, "{}", gz.len());
        let mut reader = BufReader::new(flate2::bufread::MultiGzDecoder::new(gz.as_slice()));
        let mut line = Vec::new();
        let (n, whole) = read_line_capped(&mut reader, &mut line, MAX_LINE_BYTES).unwrap();
        assert_eq!((n, whole), ((64 << 20) + 1, false));
        assert_eq!(line.len(), MAX_LINE_BYTES);
        assert!(line.capacity() <= 2 * MAX_LINE_BYTES, "{}", line.capacity());
    }

    /// `--flow-logs s3://…` past S3's own rules: a bucket that is no bucket name (a forged line in
    /// it is shown escaped, and a long one cut) and a prefix over 1,024 bytes, refused with a
    /// sentence before any request; names at the limits are taken.
    #[test]
    fn s3_locations_past_s3s_rules_are_refused() {
        let at_limit = format!("s3://{}/{}", "b".repeat(63), "p".repeat(MAX_KEY_BYTES));
        assert!(matches!(Location::parse(&at_limit), Ok(Location::S3 { .. })));
        let long_prefix = format!("s3://flow-logs/{}", "p".repeat(70_000));
        let err = Location::parse(&long_prefix).unwrap_err();
        assert!(err.contains("70000 bytes, and S3 keys are at most 1024"), "{err}");
        let err = Location::parse(&format!("s3://{}/x", "B".repeat(70_000))).unwrap_err();
        assert!(err.contains("is not an S3 bucket name") && err.len() < 300, "{err}");
        let err = Location::parse("s3://a\nlocality audit: in-zone 100%/x").unwrap_err();
        assert!(!err.contains('\n') && err.contains("\\n"), "{err}");
        assert!(Location::parse("s3://ab/x").is_err());
    }
}
