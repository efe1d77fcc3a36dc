import { describe, expect, it } from 'vitest';
import type { OverlapDecision, OverlapPolicy } from './overlap.js';
import { decideOverlap } from './overlap.js';

describe('decideOverlap (§14.5)', () => {
  const table: [OverlapPolicy, boolean, number, number, OverlapDecision][] = [
    // No overlap: every policy creates.
    ['Skip', false, 0, 10, { action: 'create', reason: null }],
    ['Queue', false, 10, 10, { action: 'create', reason: null }],
    ['Replace', false, 0, 10, { action: 'create', reason: null }],
    ['Allow', false, 0, 10, { action: 'create', reason: null }],
    // Overlap.
    ['Skip', true, 0, 10, { action: 'skip', reason: 'overlap' }],
    ['Queue', true, 0, 10, { action: 'queue', reason: 'overlap' }],
    ['Queue', true, 9, 10, { action: 'queue', reason: 'overlap' }],
    ['Queue', true, 10, 10, { action: 'skip', reason: 'queue_full' }],
    ['Queue', true, 11, 10, { action: 'skip', reason: 'queue_full' }],
    ['Queue', true, 0, 1, { action: 'queue', reason: 'overlap' }],
    ['Queue', true, 1, 1, { action: 'skip', reason: 'queue_full' }],
    ['Replace', true, 3, 10, { action: 'replace' }],
    ['Allow', true, 3, 10, { action: 'create', reason: null }],
  ];
  it.each(table)(
    '%s, overlapping=%s, queued=%i, catchupMax=%i',
    (policy, overlapping, queued, max, expected) => {
      expect(decideOverlap(policy, overlapping, queued, max)).toEqual(expected);
    },
  );
});
