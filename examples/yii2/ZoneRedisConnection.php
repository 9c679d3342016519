<?php
// Yii2 (yiisoft/yii2-redis): reads from this availability zone's replica and, when it refuses,
// times out or has died, the same command from the fallback (the reader endpoint) in the same
// request, with the APCu mark of examples/php/read.php.
//
// NOT RUN HERE: yii2-redis cannot be installed from the registries this project's machines
// reach. Written from yii2-redis's public API (the hostname, port, connectionTimeout and
// dataTimeout properties, open(), close(), getIsActive(), executeCommand(), and its
// SocketException for a failed read or write); checked for syntax only (php -l).
//
// config/web.php, a read connection beside the `redis` component that writes (a replica refuses
// writes; yii\redis\Cache reads and writes through one connection, so give the cache the primary
// and read session data, say, through this one):
//
//   'redisRead' => [
//       'class' => app\components\ZoneRedisConnection::class,
//       'hostname' => getenv('LOCALITY_READ_HOST', true) ?: getenv('LOCALITY_FALLBACK_HOST', true),
//       'port' => (int) (getenv('LOCALITY_READ_PORT', true) ?: getenv('LOCALITY_FALLBACK_PORT', true)),
//       'fallbackHostname' => (string) getenv('LOCALITY_FALLBACK_HOST', true),
//       'fallbackPort' => (int) getenv('LOCALITY_FALLBACK_PORT', true),
//       'connectionTimeout' => 0.3,
//       'dataTimeout' => 1.0,
//   ],

namespace app\components;

use yii\db\Exception;
use yii\redis\Connection;
use yii\redis\SocketException;

class ZoneRedisConnection extends Connection
{
    /** The reader endpoint's host (bare, as LOCALITY_FALLBACK_HOST gives it). */
    public string $fallbackHostname = '';
    /** The reader endpoint's port. */
    public int $fallbackPort = 6379;
    /** Seconds every worker of the pool skips a replica that failed (with APCu). */
    public int $unhealthyTtl = 60;

    private bool $onFallback = false;

    public function executeCommand($name, $params = []): mixed
    {
        if (!$this->onFallback && $this->markedUnhealthy()) {
            $this->useFallback();
        }
        try {
            return parent::executeCommand($name, $params);
        } catch (SocketException $e) {
            // A read or write on the socket failed: the replica died or timed out.
        } catch (Exception $e) {
            if ($this->getIsActive()) {
                throw $e; // a Redis error reply: not the connection's failure
            }
            // open() failed: refused or timed out.
        }
        if ($this->onFallback || $this->fallbackHostname === '') {
            throw $e;
        }
        $this->markUnhealthy($e);
        $this->useFallback();
        return parent::executeCommand($name, $params);
    }

    private function useFallback(): void
    {
        $this->close();
        $this->hostname = $this->fallbackHostname;
        $this->port = $this->fallbackPort;
        $this->onFallback = true;
    }

    private function markedUnhealthy(): bool
    {
        return function_exists('apcu_enabled') && apcu_enabled()
            && apcu_fetch("locality:unhealthy:{$this->hostname}:{$this->port}") !== false;
    }

    private function markUnhealthy(\Throwable $why): void
    {
        if (function_exists('apcu_enabled') && apcu_enabled()) {
            apcu_store("locality:unhealthy:{$this->hostname}:{$this->port}", 1, max(1, $this->unhealthyTtl));
        }
        $message = strtok($why->getMessage(), "\n");
        error_log(sprintf(
            'locality: %s:%d failed (%s): reading from the fallback',
            $this->hostname,
            $this->port,
            addcslashes((string) $message, "\0..\37\177\\"),
        ));
    }
}
