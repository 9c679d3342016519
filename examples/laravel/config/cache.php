<?php
// The `zone` store of config/cache.php: merge it into your `stores`. Cache::store('zone')
// reads from this zone's replica (the reader in the same request when it fails) and writes to
// the primary, through the `zone` Redis connection of config/database.php.

return [
    'default' => 'zone',

    'stores' => [
        'zone' => [
            'driver' => 'redis',
            'connection' => 'zone',
        ],
    ],

    'prefix' => 'laravel_cache',
];
