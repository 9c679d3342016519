<?php
// Laravel's phpredis connector, plus this zone's replica with the reader endpoint behind it: a
// connection whose configuration names a `fallback` becomes a ZoneReadConnection; any other
// is Laravel's own PhpRedisConnection.

namespace App\Locality;

use Illuminate\Redis\Connectors\PhpRedisConnector;
use Illuminate\Redis\RedisManager;
use Illuminate\Support\Arr;
use RedisException;

final class ZoneRedisConnector extends PhpRedisConnector
{
    public function __construct(private RedisManager $manager)
    {
    }

    public function connect(array $config, array $options)
    {
        if (!isset($config['fallback'])) {
            return parent::connect($config, $options);
        }
        $fallback = array_merge(Arr::except($config, ['fallback', 'writer', 'unhealthy_ttl']), $config['fallback']);
        $writer = $config['writer'] ?? null;
        $ttl = (int) ($config['unhealthy_ttl'] ?? 60);
        $config = Arr::except($config, ['fallback', 'writer', 'unhealthy_ttl']);
        $endpoint = self::endpoint($config);
        $connect = fn () => $this->createClient(array_merge($config, $options, Arr::pull($config, 'options', [])));
        // The zone's replica, unless it failed lately; a failed connect is a failure like any other.
        $client = null;
        if (!ZoneReadConnection::markedUnhealthy($endpoint)) {
            try {
                $client = $connect();
            } catch (RedisException $e) {
                ZoneReadConnection::markUnhealthy($endpoint, $ttl, $e);
            }
        }
        return new ZoneReadConnection(
            $client,
            $connect,
            $config,
            $endpoint,
            fn () => parent::connect($fallback, $options),
            $writer === null ? null : fn () => $this->manager->connection($writer),
            $ttl,
        );
    }

    /** host:port, [v6]:port for an IPv6 host. */
    public static function endpoint(array $config): string
    {
        $host = (string) $config['host'];
        return (str_contains($host, ':') ? "[$host]" : $host) . ':' . $config['port'];
    }
}
