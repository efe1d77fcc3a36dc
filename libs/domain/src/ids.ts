import { randomBytes } from 'node:crypto';

/** W3C trace id: 32 lowercase hex characters. */
export function newTraceId(): string {
  return randomBytes(16).toString('hex');
}

/** W3C span id: 16 lowercase hex characters, fixed at stage creation. */
export function newSpanId(): string {
  return randomBytes(8).toString('hex');
}
