import { describe, expect, it } from 'vitest';
import { canonicalJson, creationIntentHash } from './creation-intent.js';

describe('idempotency intent comparison (addendum §6)', () => {
  const body = { idempotencyKey: 'k', name: 'p', stages: [{ stageName: 'a', stageHandlerName: 'h' }] };

  it('ignores member order, traceId, apiKey and the key itself', () => {
    const reordered = { stages: [{ stageHandlerName: 'h', stageName: 'a' }], name: 'p', traceId: 'x', apiKey: 'y', idempotencyKey: 'other' };
    expect(creationIntentHash(reordered)).toBe(creationIntentHash(body));
  });

  it('treats null as omitted', () => {
    expect(creationIntentHash({ ...body, pipelineKeywords: null })).toBe(creationIntentHash(body));
  });

  it('distinguishes a default value from an omitted field', () => {
    const withDefault = { ...body, stages: [{ stageName: 'a', stageHandlerName: 'h', isEvent: false }] };
    expect(creationIntentHash(withDefault)).not.toBe(creationIntentHash(body));
  });

  it('keeps array order significant', () => {
    const two = [
      { stageName: 'a', stageHandlerName: 'h' },
      { stageName: 'b', stageHandlerName: 'h' },
    ];
    expect(creationIntentHash({ ...body, stages: two })).not.toBe(creationIntentHash({ ...body, stages: [...two].reverse() }));
  });

  it('writes canonical JSON with sorted members', () => {
    expect(canonicalJson({ b: 1, a: { d: null, c: [2, null] } })).toBe('{"a":{"c":[2,null]},"b":1}');
  });
});
