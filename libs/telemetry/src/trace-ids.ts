import { createHash } from 'node:crypto';

const HEX32 = /^[\da-f]{32}$/;
const HEX16 = /^[\da-f]{16}$/;
const ZERO32 = '0'.repeat(32);
const ZERO16 = '0'.repeat(16);
const TRACEPARENT = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})(-.*)?$/;

/**
 * The W3C trace id of a pipeline's `traceId` (decision 0051). A pipeline traceId is any string of at
 * most 36 characters: when it is 32 hex digits (any case) and not all zero it is the trace id,
 * lowercased; otherwise the trace id is the first 32 hex digits of the SHA-256 of its UTF-8 bytes
 * (the last 32 in the astronomically unlikely case those are all zero). Deterministic, so every
 * service derives the same trace for the same pipeline without storing anything.
 */
export function otelTraceId(traceId: string): string {
  if (HEX32.test(traceId) && traceId !== ZERO32) return traceId;
  const lower = traceId.toLowerCase();
  if (HEX32.test(lower) && lower !== ZERO32) return lower;
  const digest = createHash('sha256').update(traceId, 'utf8').digest('hex');
  const first = digest.slice(0, 32);
  return first === ZERO32 ? digest.slice(32) : first;
}

export function isTraceId(value: string): boolean {
  return HEX32.test(value) && value !== ZERO32;
}

export function isSpanId(value: string): boolean {
  return HEX16.test(value) && value !== ZERO16;
}

export interface TraceparentParts {
  traceId: string;
  spanId: string;
  /** Bit 0: sampled. */
  traceFlags: number;
}

/**
 * Parses a W3C `traceparent` header. Case is forgiven (as the problem traceId always did); an
 * unknown future version may carry more fields, version 00 may not; ff and all-zero ids are invalid.
 */
export function parseTraceparent(header: string | undefined): TraceparentParts | undefined {
  if (!header) return undefined;
  const match = TRACEPARENT.exec(header.trim().toLowerCase());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (!traceId || !spanId || !flags || traceId === ZERO32 || spanId === ZERO16) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) };
}

export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}
