<?php
// Yii2 (yiisoft/yii2-redis 2.1): a connection that reads from this availability zone's replica
// and, when the replica refuses, hangs or dies, sends the same command to the fallback (the reader
// endpoint) in the same request: one log line, and with APCu every worker of the pool skips the
// failed replica for $unhealthyTtl seconds. config/redis.php gives it to yii\redis\Cache as its
// replica; tests/php.rs runs it under PHP-FPM with Yii2 2.0.55 and yii2-redis 2.1.2.
//
// Two traps of yii2-redis 2.1 this class avoids:
// - close() sends QUIT through executeCommand(): a subclass that falls back from
//   executeCommand() and calls close() there recurses (the log fills, then "Allowed memory size
//   exhausted"). Here QUIT never falls back, and is never sent through a connection that failed
//   (it would wait the read timeout a second time).
// - the connection string is "tcp://HOST:PORT": an IPv6 address needs its brackets, which
//   LOCALITY_FALLBACK_HOST (bare, as phpredis takes it) does not have.

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
    /** The socket failed: close() must not send QUIT through it. */
    private bool $broken = false;

    public function init(): void
    {
        parent::init();
        $this->hostname = self::bracketed((string) $this->hostname);
        $this->fallbackHostname = self::bracketed($this->fallbackHostname);
    }

    /** Whether this request's reads went to the fallback. */
    public function isOnFallback(): bool
    {
        return $this->onFallback;
    }

    public function executeCommand($name, $params = []): mixed
    {
        if ($name === 'QUIT') {
            // close() sends it: never a fallback here, and never through a failed socket.
            if ($this->broken) {
                throw new SocketException('QUIT not sent: the connection failed');
            }
            return parent::executeCommand($name, $params);
        }
        if (!$this->onFallback && $this->fallbackHostname !== '' && $this->markedUnhealthy()) {
            $this->useFallback();
        }
        try {
            return parent::executeCommand($name, $params);
        } catch (SocketException $e) {
            // A read or write on the socket failed: the replica died or timed out.
        } catch (Exception $e) {
            // open() failed (refused, or no answer within connectionTimeout), or the server
            // refused to serve (at its client limit, loading its data, cut from its primary).
            // Any other error reply is the command's own: it goes to the caller.
            if ($this->getIsActive() && !self::isRefusal($e)) {
                throw $e;
            }
        }
        if ($this->onFallback || $this->fallbackHostname === '') {
            throw $e;
        }
        $this->markUnhealthy($e);
        $this->broken = true;
        $this->useFallback();
        return parent::executeCommand($name, $params);
    }

    private function useFallback(): void
    {
        $this->close();
        $this->broken = false;
        $this->hostname = $this->fallbackHostname;
        $this->port = $this->fallbackPort;
        $this->onFallback = true;
    }

    /** An error reply by which a server refuses every command, not this one. */
    private static function isRefusal(Exception $e): bool
    {
        return (bool) preg_match(
            '/^Redis error: (ERR max number of clients reached|LOADING |MASTERDOWN )/',
            $e->getMessage()
        );
    }

    private static function bracketed(string $host): string
    {
        return str_contains($host, ':') && $host[0] !== '[' ? "[$host]" : $host;
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
        // One line, whatever the message holds: the first line of it, escaped.
        $message = strtok($why->getMessage(), "\n");
        error_log(sprintf(
            'locality: %s:%d failed (%s): reading from the fallback',
            $this->hostname,
            $this->port,
            self::loggable((string) $message),
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
