import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ValidationFailed } from '@po/domain';
import { cursorSigner, lazyCursorSigner, listingOf, pageOf, readCursor, type CursorPartKind } from './cursor.js';

const KEY = 'k'.repeat(32);
const signer = cursorSigner(KEY);
const listing = listingOf('pipelines', { applicationId: 1, statuses: ['Failed'] });
const shape: CursorPartKind[] = ['time', 'id'];

function rejected(fn: () => unknown): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ValidationFailed);
  expect((err as ValidationFailed).errors).toEqual([{ field: 'cursor', message: 'is not a cursor issued for this listing' }]);
}

const roundTrip = (l: string, cursor: string) => signer.verify(l, readCursor(cursor, shape)!);

describe('page cursors (HMAC-signed, bound to their listing)', () => {
  it('a cursor names the position it was issued for, on the listing it was issued for', () => {
    const cursor = signer.issue(listing, [1_700_000_000_000, 42]);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    expect(roundTrip(listing, cursor)).toEqual([1_700_000_000_000, 42]);
    expect(readCursor(undefined, shape)).toBeUndefined();
    expect(signer.verifyOptional(listing, undefined)).toBeUndefined();
  });

  it('another listing (application, filter, kind) does not verify', () => {
    const cursor = signer.issue(listing, [1, 2]);
    for (const other of [
      listingOf('pipelines', { applicationId: 2, statuses: ['Failed'] }),
      listingOf('pipelines', { applicationId: 1, statuses: ['Failed', 'Cancelled'] }),
      listingOf('pipelines', { applicationId: 1 }),
      listingOf('schedules', { applicationId: 1, statuses: ['Failed'] }),
    ])
      rejected(() => roundTrip(other, cursor));
  });

  it('the listing identity does not depend on member order, and null equals absent', () => {
    expect(listingOf('x', { a: 1, b: 'two' })).toBe(listingOf('x', { b: 'two', a: 1 }));
    expect(listingOf('x', { a: 1, b: null })).toBe(listingOf('x', { a: 1, b: undefined }));
    expect(listingOf('x', { a: 1 })).not.toBe(listingOf('x', { a: '1' }));
  });

  it('another key does not verify: a cursor cannot be forged without it', () => {
    const cursor = cursorSigner('z'.repeat(32)).issue(listing, [1, 2]);
    rejected(() => roundTrip(listing, cursor));
    // Computing the tag the way an outsider would guess it (a plain digest, no key) fails too.
    const payload = Buffer.from(JSON.stringify(['c1', 1, 2])).toString('base64url');
    const guess = createHmac('sha256', '').update(`c1\n${listing}\n${payload}`).digest().subarray(0, 16).toString('base64url');
    rejected(() => roundTrip(listing, `${payload}.${guess}`));
  });

  it('a modified position or tag does not verify', () => {
    const cursor = signer.issue(listing, [1_000, 7]);
    const [, tag] = cursor.split('.');
    const moved = Buffer.from(JSON.stringify(['c1', 1_000, 8])).toString('base64url');
    rejected(() => roundTrip(listing, `${moved}.${tag}`));
    const flipped = cursor.slice(0, -2) + (cursor.endsWith('A') ? 'BA' : 'AA');
    expect(() => roundTrip(listing, flipped)).toThrow(ValidationFailed);
  });

  it.each([
    ['garbage', 'garbage'],
    ['no tag', Buffer.from('["c1",1,2]').toString('base64url')],
    ['two dots', 'a.b.c'],
    ['empty parts', '.'],
    ['not base64url', 'a+b.cdef'],
    ['padding', `${Buffer.from('["c1",1,2]').toString('base64')}.${'A'.repeat(22)}`],
    ['short tag', `${Buffer.from('["c1",1,2]').toString('base64url')}.AAAA`],
    ['not json', `${Buffer.from('c1,1,2').toString('base64url')}.${'A'.repeat(22)}`],
    ['old version', `${Buffer.from('["v1",1,2]').toString('base64url')}.${'A'.repeat(22)}`],
    ['wrong arity', `${Buffer.from('["c1",1]').toString('base64url')}.${'A'.repeat(22)}`],
    ['id 0', `${Buffer.from('["c1",1,0]').toString('base64url')}.${'A'.repeat(22)}`],
    ['id as string', `${Buffer.from('["c1",1,"2"]').toString('base64url')}.${'A'.repeat(22)}`],
    ['unsafe id', `${Buffer.from('["c1",1,9007199254740993]').toString('base64url')}.${'A'.repeat(22)}`],
    ['time before year 1', `${Buffer.from('["c1",-99999999999999,2]').toString('base64url')}.${'A'.repeat(22)}`],
    ['time after 9999', `${Buffer.from('["c1",253402300800000,2]').toString('base64url')}.${'A'.repeat(22)}`],
    ['over long', 'A'.repeat(600)],
  ])('a malformed cursor (%s) is refused by its structure, before any listing is known', (_name, cursor) => {
    rejected(() => readCursor(cursor, shape));
  });

  it('text parts are strings of 1..200 characters; negative times (before 1970) are valid', () => {
    const c = signer.issue('l', [-5_000, 'worker-1']);
    expect(signer.verify('l', readCursor(c, ['time', 'text'])!)).toEqual([-5_000, 'worker-1']);
    rejected(() => readCursor(signer.issue('l', [1, '']), ['time', 'text']));
    rejected(() => readCursor(signer.issue('l', [1, 'x'.repeat(201)]), ['time', 'text']));
  });

  it('a key shorter than 32 bytes is refused', () => {
    expect(() => cursorSigner('short')).toThrow(/32 bytes/);
  });

  it('lazyCursorSigner loads the key once, and again after a failed load', async () => {
    let loads = 0;
    let fail = true;
    const get = lazyCursorSigner(async () => {
      loads += 1;
      if (fail) throw new Error('database down');
      return KEY;
    });
    await expect(get()).rejects.toThrow('database down');
    fail = false;
    const [a, b] = await Promise.all([get(), get()]);
    expect(a).toBe(b);
    await get();
    expect(loads).toBe(2);
    const cursor = a.issue('l', [1]);
    expect(signer.verify('l', readCursor(cursor, ['id'])!)).toEqual([1]);
  });

  it('pageOf: nextCursor exactly when more rows were read than the page holds', () => {
    const next = (n: number) => `after-${n}`;
    expect(pageOf([1, 2, 3], 2, next, String)).toEqual({ items: ['1', '2'], nextCursor: 'after-2' });
    expect(pageOf([1, 2], 2, next, String)).toEqual({ items: ['1', '2'], nextCursor: null });
    expect(pageOf([], 2, next, String)).toEqual({ items: [], nextCursor: null });
  });
});
