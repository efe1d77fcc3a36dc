import { readFileSync } from 'node:fs';

/** Every problem found in the environment, reported together so one restart fixes them all. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

export interface EnvReader {
  str(name: string, fallback: string): string;
  int(name: string, fallback: number, range?: { min?: number; max?: number }): number;
  bool(name: string, fallback: boolean): boolean;
  url(name: string, fallback: string, protocols: string[]): string;
  /** A URL, or null when the variable is unset. */
  optionalUrl(name: string, protocols: string[]): string | null;
  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T;
  /** The contents of the file the variable names (read now, once), or null when it is unset. */
  file(name: string): string | null;
  /** Records a problem found by a check the readers above cannot express (several variables together). */
  problem(message: string): void;
  /** Throws ConfigError when any read above failed. */
  done(): void;
}

export function envReader(env: Env = process.env): EnvReader {
  const problems: string[] = [];
  const raw = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  return {
    str: (name, fallback) => raw(name) ?? fallback,
    int(name, fallback, range = {}) {
      const value = raw(name);
      if (value === undefined) return fallback;
      const n = Number(value);
      if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(n)) {
        problems.push(`${name} must be an integer, got "${value}"`);
        return fallback;
      }
      if (range.min !== undefined && n < range.min) problems.push(`${name} must be >= ${range.min}, got ${n}`);
      if (range.max !== undefined && n > range.max) problems.push(`${name} must be <= ${range.max}, got ${n}`);
      return n;
    },
    bool(name, fallback) {
      const value = raw(name)?.toLowerCase();
      if (value === undefined) return fallback;
      if (['true', '1', 'yes'].includes(value)) return true;
      if (['false', '0', 'no'].includes(value)) return false;
      problems.push(`${name} must be true or false, got "${value}"`);
      return fallback;
    },
    url(name, fallback, protocols) {
      const value = raw(name) ?? fallback;
      try {
        const parsed = new URL(value);
        if (!protocols.includes(parsed.protocol.replace(/:$/, ''))) {
          problems.push(`${name} must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
        }
      } catch {
        // The value itself may hold a password: never echo it.
        problems.push(`${name} is not a valid URL`);
      }
      return value;
    },
    optionalUrl(name, protocols) {
      return raw(name) === undefined ? null : this.url(name, '', protocols);
    },
    oneOf(name, fallback, allowed) {
      const value = raw(name);
      if (value === undefined) return fallback;
      if (!(allowed as readonly string[]).includes(value)) {
        problems.push(`${name} must be one of ${allowed.join(', ')}, got "${value}"`);
        return fallback;
      }
      return value as typeof fallback;
    },
    file(name) {
      const path = raw(name);
      if (path === undefined) return null;
      try {
        const text = readFileSync(path, 'utf8');
        if (text.trim() === '') problems.push(`${name}: ${path} is empty`);
        return text;
      } catch (err) {
        problems.push(`${name}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
        return null;
      }
    },
    problem(message) {
      problems.push(message);
    },
    done() {
      if (problems.length > 0) throw new ConfigError(problems);
    },
  };
}

/** Parses config once at start-up; on invalid config prints every problem and exits 1. */
export function loadConfig<T>(parse: (env: Env) => T, env: Env = process.env): T {
  try {
    return parse(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
