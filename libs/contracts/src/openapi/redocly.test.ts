// A third-party linter's verdict on the committed OpenAPI document (issue 14 item 7, decision
// 0095): Redocly CLI with its recommended rules (redocly.yaml at the root) finds no error and no
// warning in docs/openapi.json (which openapi.test.ts keeps equal to buildOpenApiDocument()).
// Offline: telemetry off and no update check, so nothing leaves the machine.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const CLI = join(dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')), 'bin', 'cli.js');

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; severity: string; message: string; location?: { pointer?: string }[] }[];
}

describe('Redocly CLI lint of docs/openapi.json', () => {
  it('redocly.yaml extends the recommended rules and switches nothing off', () => {
    const config = readFileSync(join(ROOT, 'redocly.yaml'), 'utf8');
    expect(config).toMatch(/^extends:\n {2}- recommended$/m);
    expect(config).toMatch(/^ {4}root: docs\/openapi\.json$/m);
    expect(config).not.toMatch(/^rules:/m);
  });

  it('passes the recommended rules with 0 errors and 0 warnings', () => {
    const run = spawnSync(process.execPath, [CLI, 'lint', '--format=json'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
    });
    let report: LintReport;
    try {
      report = JSON.parse(run.stdout) as LintReport;
    } catch {
      throw new Error(`redocly lint printed no JSON report (exit ${run.status}):\n${run.stdout}\n${run.stderr}`);
    }
    const found = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location?.[0]?.pointer ?? ''}: ${p.message}`);
    expect(found).toEqual([]);
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
    expect(run.status).toBe(0);
  }, 60_000);
});
