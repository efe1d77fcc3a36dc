import { describe, expect, it } from 'vitest';
import { redactSecrets } from './redaction.js';

describe('redaction of sensitive context values (addendum §13)', () => {
  it('replaces every occurrence of each non-empty secret', () => {
    expect(redactSecrets('token=abc and abc again', ['abc', ''])).toBe('token=[REDACTED] and [REDACTED] again');
  });

  it('removes a longer secret whole even when it contains a shorter one', () => {
    expect(redactSecrets('pw=abcdef', ['abc', 'abcdef'])).toBe('pw=[REDACTED]');
  });

  it('leaves a message without secrets unchanged', () => {
    expect(redactSecrets('nothing here', [])).toBe('nothing here');
  });
});
