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
        // One line, whatever the message holds (addcslashes: no second, forged line).
        error_log(sprintf(
            'locality: %s failed (%s): reading from the fallback',
            $endpoint,
            addcslashes($why->getMessage(), "\0..\37\177\\"),
        ));
    }
}
