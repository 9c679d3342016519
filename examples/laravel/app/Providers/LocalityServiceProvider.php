<?php
// Registers the `locality` Redis client (config/database.php: 'client' => 'locality'): phpredis,
// and for a connection that names a `fallback`, App\Locality\ZoneReadConnection. Add it to the
// `providers` of config/app.php.

namespace App\Providers;

use App\Locality\ZoneRedisConnector;
use Illuminate\Redis\RedisManager;
use Illuminate\Support\ServiceProvider;

final class LocalityServiceProvider extends ServiceProvider
{
    public function register(): void
    {
        $this->app->resolving('redis', static function (RedisManager $redis): void {
            // (Not a static closure: RedisManager::extend binds it to the manager.)
            $redis->extend('locality', fn () => new ZoneRedisConnector($redis));
        });
    }
}
