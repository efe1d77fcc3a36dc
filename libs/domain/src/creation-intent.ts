import { createHash } from 'node:crypto';

/** Members that are not part of the creation intent (addendum §6). */
const NOT_INTENT = new Set(['idempotencyKey', 'traceId', 'apiKey']);

/**
 * Canonical JSON of a creation intent: object members sorted, null members dropped (null equals
 * omitted), array order kept, defaults NOT filled in (a default differs from an omitted field).
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== null && (value as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

export function creationIntentHash(body: Record<string, unknown>): string {
  const intent = Object.fromEntries(Object.entries(body).filter(([k]) => !NOT_INTENT.has(k)));
  return createHash('sha256').update(canonicalJson(intent)).digest('hex');
}
