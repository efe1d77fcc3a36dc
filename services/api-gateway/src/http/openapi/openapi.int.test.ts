// GET /openapi.json: the generated OpenAPI 3.1 document, without credentials (decision 0041).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '@po/contracts';
import { startGateway, type Gateway } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

describe('GET /openapi.json', () => {
  it('serves the generated document as JSON without credentials', async () => {
    const reply = await gw.call('GET', '/openapi.json', { key: null });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(reply.body).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument())));
    expect(reply.body.openapi).toBe('3.1.0');
    expect(Object.keys(reply.body.paths)).toContain('/workers/{workerId}/events');
  });

  it('ignores an invalid key (no credential is checked)', async () => {
    const reply = await gw.call('GET', '/openapi.json', { key: 'pos_wrong' });
    expect(reply.status).toBe(200);
  });

  it('other methods are not routes', async () => {
    const reply = await gw.call('POST', '/openapi.json', { json: {} });
    expect(reply.status).toBe(404);
    expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
});
