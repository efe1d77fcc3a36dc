// The api-gateway serves exactly the operations the OpenAPI document gives it (decision 0041):
// every route wired in buildApp is documented with `x-service: api-gateway`, and the other way round.
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '@po/contracts';
import { buildApp } from '../../app.js';
import { LOGS_ANON_DEFAULTS } from '../../config.js';
import type { Deps } from '../../deps.js';

interface Layer {
  path: string | RegExp;
  methods: string[];
}

function servedOperations(): string[] {
  // Routes are only wired here; nothing is called, so no database or broker is needed.
  const app = buildApp(
    {} as Deps,
    { maxBodyBytes: 1024, logsAnonLimit: LOGS_ANON_DEFAULTS, build: { version: '0.5.0', commit: null, builtAt: null }, dashboard: { traceUrlTemplate: null } },
    {},
  );
  const out = new Set<string>();
  for (const middleware of app.middleware) {
    const router = (middleware as { router?: { stack: Layer[] } }).router;
    for (const layer of router?.stack ?? []) {
      if (typeof layer.path !== 'string') continue;
      const path = layer.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      for (const method of layer.methods) if (method !== 'HEAD') out.add(`${method} ${path}`);
    }
  }
  return [...out].sort();
}

function documentedOperations(): string[] {
  const doc = buildOpenApiDocument();
  const out: string[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op['x-service'] === 'api-gateway') out.push(`${method.toUpperCase()} ${path}`);
    }
  }
  return out.sort();
}

describe('api-gateway routes and the OpenAPI document', () => {
  it('every served route is documented, and every documented api-gateway operation is served', () => {
    const served = servedOperations();
    expect(served.length).toBeGreaterThan(20);
    expect(served).toEqual(documentedOperations());
  });
});
