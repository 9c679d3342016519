<?php
// config/redis.php: the Redis part of config/web.php's `components`
//   'components' => array_merge(require __DIR__ . '/redis.php', [ ...the rest... ]),
// `redis` writes, to the primary (REDIS_HOST, REDIS_PORT: the primary endpoint). `cache`
// (yii\redis\Cache) writes through `redis` and reads through its replica: this zone's replica
// from the entrypoint (`locality resolve`), the reader endpoint as its fallback.

$env = static fn (string $name): string => (string) getenv($name, true);

return [
    'redis' => [
        'class' => yii\redis\Connection::class,
        'hostname' => $env('REDIS_HOST') ?: '127.0.0.1',
        'port' => (int) ($env('REDIS_PORT') ?: 6379),
        'connectionTimeout' => 0.3,
        'dataTimeout' => 1.0,
    ],
    'cache' => [
        'class' => yii\redis\Cache::class,
        'redis' => 'redis',
        'enableReplicas' => true,
        'replicas' => [[
            'class' => app\components\ZoneRedisConnection::class,
            // Without the entrypoint's LOCALITY_READ_* (the pool hands the workers ""), the
            // reader endpoint serves the reads.
            'hostname' => $env('LOCALITY_READ_HOST') ?: $env('LOCALITY_FALLBACK_HOST'),
            'port' => (int) ($env('LOCALITY_READ_PORT') ?: $env('LOCALITY_FALLBACK_PORT')),
            'fallbackHostname' => $env('LOCALITY_FALLBACK_HOST'),
            'fallbackPort' => (int) $env('LOCALITY_FALLBACK_PORT'),
            'connectionTimeout' => 0.3,
            'dataTimeout' => 1.0,
        ]],
    ],
];
