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
 * The eight 16-bit groups of an IPv6 address in any of its spellings (zero runs written out or
 * compressed, leading zeros, an IPv4 tail, a zone id); null when it is not one.
 */
function ipv6Groups(address: string): number[] | null {
  const bare = address.split('%')[0]!.toLowerCase();
  let text = bare;
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  if (tail) {
    if (isIP(tail[1]!) !== 4) return null;
    const [a, b, c, d] = v4(tail[1]!) as [number, number, number, number];
    text = `${bare.slice(0, -tail[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const part = (h: string) => (h === '' ? [] : h.split(':').map((g) => parseInt(g, 16)));
  const head = part(halves[0]!);
  const rest = halves.length === 2 ? part(halves[1]!) : [];
  const zeros = halves.length === 2 ? 8 - head.length - rest.length : 0;
  const groups = [...head, ...Array<number>(Math.max(zeros, 0)).fill(0), ...rest];
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

/**
 * Whether a webhook may not be sent to this IP address unless private networks are allowed: a
 * private, loopback, link-local or otherwise internal range (IPv4, IPv6, and IPv4 in IPv6), in
 * any spelling of the address. Anything that is not an IP address is refused as well.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return privateV4(address);
  if (family !== 6) return true;
  const g = ipv6Groups(address);
  if (!g) return true;
  const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  // ::, ::1 and the deprecated IPv4-compatible ::a.b.c.d (0.0.0.0/8 covers the first two).
  if (zeroUpTo(6)) return privateV4(v4Of(g[6]!, g[7]!));
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-translated ::ffff:0:a.b.c.d.
  if ((zeroUpTo(5) && g[5] === 0xffff) || (zeroUpTo(4) && g[4] === 0xffff && g[5] === 0))
    return privateV4(v4Of(g[6]!, g[7]!));
  const first = g[0]!;
  return (
    (first & 0xfe00) === 0xfc00 || // unique local fc00::/7
    (first & 0xffc0) === 0xfe80 || // link-local fe80::/10
    (first & 0xffc0) === 0xfec0 || // site-local (deprecated) fec0::/10
    (first & 0xff00) === 0xff00 || // multicast
    (first === 0x64 && g[1] === 0xff9b) || // NAT64 can reach IPv4 private ranges
    (first === 0x2001 && g[1] === 0xdb8) // documentation
  );
}
