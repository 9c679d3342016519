<?php
// The `redis` part of config/database.php: merge it into yours (the SQL `connections` and the
// rest stay as they are). Laravel 8 and later, phpredis (php-redis).
//
// - `zone`: this availability zone's replica, from LOCALITY_READ_HOST / LOCALITY_READ_PORT
//   (what `locality resolve --format env` exports), with the reader endpoint
//   (LOCALITY_FALLBACK_HOST / LOCALITY_FALLBACK_PORT) as its `fallback`: a read whose replica
//   refuses, times out or has died is read again from the reader in the same request
//   (App\Locality\ZoneReadConnection). Commands that are not reads go to `writer`.
// - `default`: the primary endpoint, for writes (REDIS_HOST / REDIS_PORT, as Laravel names them).
//
// The variables are read from the process environment only (getenv($name, true)): PHP-FPM's
// pool `env[...]` lines put them there, and a FastCGI parameter of the same name, which a web
// server may forward from a request, cannot override them. A pool line whose variable the
// master lacks hands the worker "" (not unset): "" counts as unset here, so the defaults apply
// and a port is never the string "". Hosts are bare (`::1`, not `[::1]`), as phpredis takes them.

$var = static function (string $name, ?string $default = null): ?string {
    $value = getenv($name, true);
    return is_string($value) && trim($value) !== '' ? trim($value) : $default;
};
$port = static function (string $name, int $default) use ($var): int {
    $value = $var($name);
    return $value !== null && ctype_digit($value) && (int) $value >= 1 && (int) $value <= 65535
        ? (int) $value
        : $default;
};
$primary_host = $var('REDIS_HOST', '127.0.0.1');
$primary_port = $port('REDIS_PORT', 6379);
$fallback_host = $var('LOCALITY_FALLBACK_HOST', $primary_host);
$fallback_port = $port('LOCALITY_FALLBACK_PORT', $primary_port);

return [
    'redis' => [
        // phpredis for every connection, plus the zone's fallback for connections that name one
        // (App\Providers\LocalityServiceProvider registers it).
        'client' => 'locality',

        'options' => [
            'prefix' => $var('REDIS_PREFIX', ''),
        ],

        'default' => [
            'host' => $primary_host,
            'port' => $primary_port,
            'password' => $var('REDIS_PASSWORD'),
            'database' => 0,
        ],

        'zone' => [
            'host' => $var('LOCALITY_READ_HOST', $fallback_host),
            'port' => $port('LOCALITY_READ_PORT', $fallback_port),
            'password' => $var('REDIS_PASSWORD'),
            'database' => 0,
            'timeout' => 0.3,          // seconds to connect: a replica in the zone answers in well under 1 ms
            'read_timeout' => 1.0,     // seconds
            'persistent' => true,
            'persistent_id' => 'locality-zone',
            'fallback' => [
                'host' => $fallback_host,
                'port' => $fallback_port,
                'persistent_id' => 'locality-fallback',
            ],
            'writer' => 'default',     // SET, DEL, INCRBY, ... (the cache's puts) go to the primary
            'unhealthy_ttl' => 60,     // seconds every worker of the pool skips a failed replica (APCu)
        ],
    ],
];
