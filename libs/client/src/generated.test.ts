// The drift check: src/generated/openapi.ts must be what openapi-typescript makes of the committed
// docs/openapi.json today.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OUTPUT, generateTypes } from '../scripts/generate.mjs';

describe('generated types', () => {
  it('match a fresh generation from docs/openapi.json (run `npm run generate:types -w @po/client` when this fails)', async () => {
    const fresh = await generateTypes();
    const committed = readFileSync(OUTPUT, 'utf8');
    // One boolean, so a stale file does not print a 2,000-line diff; the message says what to do.
    expect(
      committed === fresh,
      'libs/client/src/generated/openapi.ts is stale: run `npm run generate:types -w @po/client`',
    ).toBe(true);
  }, 30_000);
});
