// What every command needs: the client made from the global options, the output format, and
// where to write.
import { createRequire } from 'node:module';
import { createClient, type PoClient } from '@po/client';
import type { Command } from 'commander';
import { UsageError, type Io } from './errors.js';

export const VERSION: string = (
  createRequire(import.meta.url)('../package.json') as { version: string }
).version;
export const DEFAULT_API_URL = 'http://127.0.0.1:8080';

export type OutputFormat = 'table' | 'json';

export interface GlobalOptions {
  apiUrl: string;
  apiKey?: string;
  output: OutputFormat;
}

export interface Context {
  client: PoClient;
  output: OutputFormat;
  io: Io;
  now(): Date;
  /** Prints `value` as JSON (--output json) or the human text `human()` makes of it. */
  print<T>(value: T, human: (value: T) => string): void;
}

export interface Environment {
  io: Io;
  now?: () => Date;
  /** Makes the client (tests substitute their own). */
  makeClient?: (options: { baseUrl: string; apiKey: string }) => PoClient;
}

export function contextFor(command: Command, env: Environment): Context {
  const options = command.optsWithGlobals<GlobalOptions>();
  if (!options.apiKey) {
    throw new UsageError(
      'no API key: set PO_API_KEY or pass --api-key (`npm run admin -- apps create --name NAME` makes one)',
    );
  }
  let baseUrl: string;
  try {
    baseUrl = new URL(options.apiUrl).href;
  } catch {
    throw new UsageError(`--api-url / PO_API_URL is not a URL: ${options.apiUrl}`);
  }
  const make =
    env.makeClient ??
    ((o: { baseUrl: string; apiKey: string }) =>
      createClient({ ...o, headers: { 'User-Agent': `po/${VERSION}` } }));
  const client = make({ baseUrl, apiKey: options.apiKey });
  const output = options.output;
  return {
    client,
    output,
    io: env.io,
    now: env.now ?? (() => new Date()),
    print(value, human) {
      env.io.out(output === 'json' ? JSON.stringify(value, null, 2) : human(value));
    },
  };
}
