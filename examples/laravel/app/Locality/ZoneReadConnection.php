<?php
// A Redis connection to this availability zone's replica that reads the same key from the
// reader endpoint, in the same request, when the replica refuses, times out or has died since
// this worker's last request (phpredis throws RedisException for each). With APCu, a replica
// that failed is skipped by every worker of the pool for `unhealthy_ttl` seconds, so a dead
// replica costs one timeout, not one per request. Commands that are not reads go to the
// `writer` connection (the primary) when one is configured. route() says where the last read
// went: 'zone' or 'fallback'.
//
// Reads go through command(): get, mget, exists, ... and Laravel's cache store (RedisStore).
// scan, pipeline, transaction and subscribe use the zone's client as Laravel's own connection
// does, without the fallback.

namespace App\Locality;

use Closure;
use Illuminate\Redis\Connections\Connection;
use Illuminate\Redis\Connections\PhpRedisConnection;
use Redis;
use RedisException;
use Throwable;

final class ZoneReadConnection extends PhpRedisConnection
{
    /** Commands that read, in Laravel's lower case: served by the zone, then the fallback. */
    private const READS = [
        'get', 'mget', 'exists', 'ttl', 'pttl', 'type', 'strlen', 'getrange', 'getbit', 'bitcount',
        'hget', 'hmget', 'hgetall', 'hexists', 'hlen', 'hkeys', 'hvals', 'hstrlen',
        'smembers', 'sismember', 'scard', 'srandmember', 'lrange', 'llen', 'lindex',
        'zrange', 'zrevrange', 'zrangebyscore', 'zrevrangebyscore', 'zscore', 'zcard', 'zcount',
        'zrank', 'zrevrank', 'dbsize', 'ping',
    ];

    private ?Connection $fallbackConnection = null;
    private string $route = 'zone';

    public function __construct(
        ?Redis $client,
        callable $connector,
        array $config,
        private string $endpoint,
        private Closure $fallback,
        private ?Closure $writer,
        private int $unhealthyTtl,
    ) {
        parent::__construct($client, $connector, $config);
    }

    public function command($method, array $parameters = [])
    {
        $method = strtolower((string) $method);
        if ($this->writer !== null && !in_array($method, self::READS, true)) {
            return ($this->writer)()->command($method, $parameters);
        }
        if ($this->client !== null && !self::markedUnhealthy($this->endpoint)) {
            try {
                $result = parent::command($method, $parameters);
                $this->route = 'zone';
                return $result;
            } catch (RedisException $e) {
                self::markUnhealthy($this->endpoint, $this->unhealthyTtl, $e);
                $this->client = null;
            }
        }
        $this->route = 'fallback';
        return $this->fallback()->command($method, $parameters);
    }

    public function client()
    {
        return $this->client ?? $this->fallback()->client();
    }

    /** Where the last read went: 'zone' or 'fallback'. */
    public function route(): string
    {
        return $this->route;
    }

    private function fallback(): Connection
    {
        return $this->fallbackConnection ??= ($this->fallback)();
    }

    public static function markedUnhealthy(string $endpoint): bool
    {
        return function_exists('apcu_enabled') && apcu_enabled()
            && apcu_fetch('locality:unhealthy:' . $endpoint) !== false;
    }

    public static function markUnhealthy(string $endpoint, int $ttl, Throwable $why): void
    {
        if (function_exists('apcu_enabled') && apcu_enabled()) {
            apcu_store('locality:unhealthy:' . $endpoint, 1, max(1, $ttl));
        }
        // One line, whatever the message holds.
        error_log(sprintf(
            'locality: %s failed (%s): reading from the fallback',
            $endpoint,
            self::loggable($why->getMessage()),
        ));
    }

    /**
     * $text for one log line, escaped as `locality` escapes what it prints: each character of Unicode
     * category Cc, Cf, Zl or Zp (ESC, NEL, C1 CSI, U+202E, U+2028, ...) as \u{hex} (\n, \r, \t),
     * the backslash as \\, a byte that is not UTF-8 as \x{hex}, cut at 300 characters: a key or an
     * error cannot forge a line, reorder one, or pass for an escape.
     */
    private static function loggable(string $text): string
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
}
