import { randomFillSync } from 'node:crypto';

// Random bytes drawn 4 KiB at a time: ids are made on every request and every dispatch, and one
// randomFillSync per id costs a system call each. Every byte is used once.
const pool = Buffer.alloc(4096);
let used = pool.length;

function randomHex(bytes: number): string {
  if (used + bytes > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  used += bytes;
  return pool.toString('hex', used - bytes, used);
}

/** W3C trace id: 32 lowercase hex characters. */
export function newTraceId(): string {
  return randomHex(16);
}

/** W3C span id: 16 lowercase hex characters, fixed at stage creation. */
export function newSpanId(): string {
  return randomHex(8);
}
