import { createHmac, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';

/**
 * Seconds to wait before each attempt: the Standard Webhooks schedule (immediately, 5 s, 5 min,
 * 30 min, 2 h, 5 h, 10 h, 10 h), eight attempts in all.
 */
export const STANDARD_WEBHOOK_SCHEDULE: readonly number[] = [
  0, 5, 300, 1800, 7200, 18000, 36000, 36000,
];

/**
 * When the attempt after `attemptsMade` failed ones is due, in seconds from now; null when the
 * schedule is spent and the delivery is Failed.
 */
export function nextWebhookAttemptIn(
  attemptsMade: number,
  schedule: readonly number[] = STANDARD_WEBHOOK_SCHEDULE,
): number | null {
  return attemptsMade < schedule.length ? schedule[attemptsMade]! : null;
}

/** A new signing secret: `whsec_` and 24 random bytes in base64, as Standard Webhooks keys are. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** A new message id, the `webhook-id` of every attempt of one delivery. */
export function newWebhookMessageId(): string {
  return `msg_${randomBytes(16).toString('hex')}`;
}

/**
 * The `webhook-signature` header of Standard Webhooks: `v1,` and the base64 HMAC-SHA256 of
 * `id.timestamp.body`, keyed by the secret's bytes (the base64 after `whsec_`).
 */
export function signWebhook(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  const key = Buffer.from(
    secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret,
    'base64',
  );
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

const v4 = (address: string): number[] => address.split('.').map(Number);

/** Whether an IPv4 address is in a private, loopback, link-local, shared, unspecified or multicast range. */
function privateV4(address: string): boolean {
  const [a, b] = v4(address) as [number, number, number, number];
  return (
    a === 0 || // "this network", 0.0.0.0
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) || // carrier-grade NAT, often a cluster's pod range
    (a === 169 && b === 254) || // link-local, cloud metadata
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && v4(address)[2] === 0) ||
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    a >= 224 // multicast, reserved, broadcast
  );
}

/**
 * Whether a webhook may not be sent to this IP address unless private networks are allowed: a
 * private, loopback, link-local or otherwise internal range (IPv4, IPv6, and IPv4 in IPv6).
 * Anything that is not an IP address is refused as well.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return privateV4(address);
  if (family !== 6) return true;
  const a = address.toLowerCase();
  const mapped =
    /^(?:0{0,4}:){0,5}(?:0{0,4}:)?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a) ??
    /^::(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return privateV4(mapped[1]!);
  // The same in hex, as URL parsing writes it: ::ffff:c0a8:1 is 192.168.0.1.
  const mappedHex =
    /^(?:0{0,4}:){0,5}(?:0{0,4}:)?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a) ??
    /^::([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (mappedHex) {
    const hi = parseInt(mappedHex[1]!, 16);
    const lo = parseInt(mappedHex[2]!, 16);
    return privateV4(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`);
  }
  if (a === '::' || a === '::1') return true;
  const first = parseInt(a.split(':')[0] || '0', 16);
  return (
    (first & 0xfe00) === 0xfc00 || // unique local fc00::/7
    (first & 0xffc0) === 0xfe80 || // link-local fe80::/10
    (first & 0xffc0) === 0xfec0 || // site-local (deprecated) fec0::/10
    (first & 0xff00) === 0xff00 || // multicast
    a.startsWith('64:ff9b:') || // NAT64 can reach IPv4 private ranges
    a.startsWith('2001:db8:') // documentation
  );
}
