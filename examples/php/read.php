<?php
// Read one key from the cache replica in this availability zone, with phpredis; when that
// replica refuses, times out or has died since this worker's last request, read the same key
// from the fallback (the reader endpoint) in the same request.
//
//   php read.php KEY               command line: prints the value
//   GET /read.php?key=KEY          PHP-FPM: the value as text/plain
//
// Environment (set by the entrypoint from `locality resolve ... --format env`):
//   LOCALITY_READ_ENDPOINT   host:port to read from (this zone's replica, or the fallback)
//   LOCALITY_FALLBACK        host:port of the reader endpoint
// A replica that failed is skipped for 60 s by every worker of the pool when APCu is loaded
// (php-apcu), so a dead replica costs one timeout, not one per request.

declare(strict_types=1);

const CONNECT_TIMEOUT = 0.3; // seconds: a replica in the same zone answers in well under 1 ms
const READ_TIMEOUT = 1.0;    // seconds
const UNHEALTHY_TTL = 60;    // seconds

/** [host, port] of a host:port variable ([v6]:port too), or null when unset or malformed. */
function endpoint_from_env(string $name): ?array
{
    // The process environment only (local_only): PHP-FPM's pool env[...] lines put the
    // variables there, while a plain getenv() would return a FastCGI parameter of the same name
    // first, and a web server that forwards client-controlled parameters would let a request
    // pick the endpoint.
    $value = getenv($name, true);
    if (!is_string($value) || !preg_match('/^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:\[\]]+)):(\d{1,5})$/', $value, $m)) {
        return null;
    }
    $port = (int) $m[3];
    return ($port >= 1 && $port <= 65535) ? [$m[1] !== '' ? $m[1] : $m[2], $port] : null;
}

function marked_unhealthy(array $endpoint): bool
{
    return function_exists('apcu_enabled') && apcu_enabled()
        && apcu_fetch('locality:unhealthy:' . implode(':', $endpoint)) !== false;
}

function mark_unhealthy(array $endpoint): void
{
    if (function_exists('apcu_enabled') && apcu_enabled()) {
        apcu_store('locality:unhealthy:' . implode(':', $endpoint), 1, UNHEALTHY_TTL);
    }
}

/** GET $key at $endpoint over this worker's persistent connection; throws RedisException. */
function get_from(array $endpoint, string $key): string|false
{
    [$host, $port] = $endpoint;
    $redis = new Redis();
    // One persistent connection per endpoint and worker (the id keeps them apart).
    if (!$redis->pconnect($host, $port, CONNECT_TIMEOUT, "locality-$host-$port", 0, READ_TIMEOUT)) {
        throw new RedisException("cannot connect to $host:$port");
    }
    return $redis->get($key);
}

/** The value of $key, and the route it came by ('zone' or 'fallback'). */
function read_key(string $key): array
{
    $read = endpoint_from_env('LOCALITY_READ_ENDPOINT');
    $fallback = endpoint_from_env('LOCALITY_FALLBACK');
    if ($read !== null && $read !== $fallback && !marked_unhealthy($read)) {
        try {
            return [get_from($read, $key), 'zone'];
        } catch (RedisException $e) {
            mark_unhealthy($read);
            error_log(sprintf('read.php: %s failed (%s): reading from the fallback', implode(':', $read), loggable($e->getMessage())));
        }
    }
    $endpoint = $fallback ?? $read;
    if ($endpoint === null) {
        throw new RuntimeException('neither LOCALITY_READ_ENDPOINT nor LOCALITY_FALLBACK is a host:port');
    }
    return [get_from($endpoint, $key), $endpoint === $fallback ? 'fallback' : 'zone'];
}

$cli = PHP_SAPI === 'cli';
/**
 * $text for one log line, escaped as `locality` escapes what it prints: each character of Unicode
 * category Cc, Cf, Zl or Zp (ESC, NEL, C1 CSI, U+202E, U+2028, ...) as \u{hex} (\n, \r, \t),
 * the backslash as \\, a byte that is not UTF-8 as \x{hex}, cut at 300 characters: a key or an
 * error cannot forge a line, reorder one, or pass for an escape.
 */
function loggable(string $text): string
{
    // Each UTF-8 character, or one byte that is not UTF-8 (shown \x{ff}); the first 300.
    preg_match_all('/[\x00-\x7F]|[\xC2-\xDF][\x80-\xBF]|\xE0[\xA0-\xBF][\x80-\xBF]|[\xE1-\xEC\xEE\xEF][\x80-\xBF]{2}'
        . '|\xED[\x80-\x9F][\x80-\xBF]|\xF0[\x90-\xBF][\x80-\xBF]{2}|[\xF1-\xF3][\x80-\xBF]{3}|\xF4[\x80-\x8F][\x80-\xBF]{2}|[\x80-\xFF]/s', $text, $chars);
    $out = '';
    foreach ($chars[0] as $n => $c) {
        if ($n === 300) {
            return $out . '...';
        }
        if ($c === '\\') {
            $out .= '\\\\';
        } elseif (strlen($c) === 1 && ord($c) > 0x7F) {
            $out .= sprintf('\\x{%x}', ord($c));
        } elseif (preg_match('/^[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]$/u', $c)) {
            $b = array_values(unpack('C*', $c));
            $code = match (count($b)) {
                1 => $b[0],
                2 => (($b[0] & 0x1F) << 6) | ($b[1] & 0x3F),
                3 => (($b[0] & 0x0F) << 12) | (($b[1] & 0x3F) << 6) | ($b[2] & 0x3F),
                default => (($b[0] & 0x07) << 18) | (($b[1] & 0x3F) << 12) | (($b[2] & 0x3F) << 6) | ($b[3] & 0x3F),
            };
            $out .= match ($code) { 9 => '\\t', 10 => '\\n', 13 => '\\r', default => sprintf('\\u{%x}', $code) };
        } else {
            $out .= $c;
        }
    }
    return $out;
}

$key = $cli ? ($argv[1] ?? '') : ($_GET['key'] ?? '');
if (!is_string($key) || $key === '') { // key[]=x is an array: refused like a missing key
    $cli ? error_log('usage: php read.php KEY') : http_response_code(400);
    exit(2);
}
try {
    [$value, $route] = read_key($key);
} catch (Throwable $e) {
    $cli || http_response_code(503);
    error_log('read.php: ' . loggable($e->getMessage()));
    exit(1);
}
if (!$cli) {
    header('Content-Type: text/plain');
    header("X-Locality-Route: $route");
}
if ($value === false) {
    $cli || http_response_code(404);
    error_log('read.php: no key ' . loggable($key));
    exit(1);
}
echo $value, "\n";
