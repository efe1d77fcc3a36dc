import {
  applicationExists,
  createApiKey,
  createApplication,
  disableApiKey,
  endKeySessions,
  type Db,
} from '@po/db';
import { hashSecret } from '@po/http';
import type { StageResultDeadLetters } from '@po/queues';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { generateApiKey } from './keys.js';

export class UsageError extends Error {}

/** `--help` (or `--version`) was asked for: print `text` on stdout and exit 0. */
export class HelpRequested extends Error {
  constructor(readonly text: string) {
    super('help requested');
  }
}

const USAGE = `usage:
  admin apps create --name NAME
  admin apps keys create --app N [--expires-at ISO]
  admin apps keys disable --key-id N
  admin results dead-letters list [--limit N]
  admin results dead-letters replay <jobId> | --all
  admin results dead-letters drop <jobId>
  admin [command] --help`;

/** One admin command, parsed and checked, before it touches the database. */
export type AdminCommand =
  | { kind: 'apps create'; name: string }
  | { kind: 'apps keys create'; applicationId: number; expiresAt: Date | null }
  | { kind: 'apps keys disable'; keyId: number }
  | { kind: 'results dead-letters list'; limit: number }
  /** `jobId` null: every dead letter (`--all`). */
  | { kind: 'results dead-letters replay'; jobId: string | null }
  | { kind: 'results dead-letters drop'; jobId: string };

type ResultsCommand = Extract<AdminCommand, { kind: `results ${string}` }>;

const isResultsCommand = (command: AdminCommand): command is ResultsCommand =>
  command.kind.startsWith('results ');

/** What the results commands read and change: the dead letters of stage-results (decision 0119). */
export interface AdminQueues {
  deadLetters: StageResultDeadLetters;
}

/** The longest listing one command prints. */
const MAX_LIST = 1000;

function positiveInt(value: string): number {
  if (!/^[1-9]\d*$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new InvalidArgumentError('must be a positive integer');
  return Number(value);
}

/** A result job id (`r-{executionId}-{attempt}`): BullMQ's custom ids, no `:`. */
function jobIdArgument(value: string): string {
  if (!/^[\w.-]{1,200}$/.test(value))
    throw new InvalidArgumentError('must be a result job id, e.g. r-<executionId>-<attempt>');
  return value;
}

/** The commander tree; each action records the parsed command in `parsed`. */
function program(parsed: { command?: AdminCommand }, out: string[], err: string[]): Command {
  const admin = new Command('admin')
    .description(
      'Operator command: applications and their API keys, dead-lettered results. Prints one JSON object on stdout (exit 0), or a message on stderr (exit 1).',
    )
    .exitOverride()
    .configureOutput({ writeOut: (s) => out.push(s), writeErr: (s) => err.push(s) });
  const apps = admin.command('apps').description('applications and API keys');
  apps
    .command('create')
    .description('create an application and its first API key (shown once)')
    .requiredOption('--name <name>', 'application name, 1..200 characters')
    .action((opts: { name: string }) => {
      if (opts.name === '' || [...opts.name].length > 200)
        throw new UsageError('--name must be 1..200 characters');
      parsed.command = { kind: 'apps create', name: opts.name };
    });
  const keys = apps.command('keys').description('API keys of an application');
  keys
    .command('create')
    .description('add an API key to an application (shown once)')
    .requiredOption('--app <n>', 'application id', positiveInt)
    .option('--expires-at <iso>', 'expiry: an ISO date-time with an offset (default: never)')
    .action((opts: { app: number; expiresAt?: string }) => {
      const raw = opts.expiresAt;
      const expiresAt = raw === undefined ? null : new Date(raw);
      if (
        expiresAt &&
        (Number.isNaN(expiresAt.getTime()) || !/(Z|[+-]\d{2}:\d{2})$/i.test(raw ?? ''))
      ) {
        throw new UsageError('--expires-at must be an ISO date-time with an offset');
      }
      parsed.command = { kind: 'apps keys create', applicationId: opts.app, expiresAt };
    });
  keys
    .command('disable')
    .description('disable an API key and end the worker sessions it bootstrapped')
    .requiredOption('--key-id <n>', 'API key id', positiveInt)
    .action((opts: { keyId: number }) => {
      parsed.command = { kind: 'apps keys disable', keyId: opts.keyId };
    });
  const deadLetters = admin
    .command('results')
    .description('worker results on their way to the result-consumer')
    .command('dead-letters')
    .description(
      'results the result-consumer gave up on after RESULTS_MAX_ATTEMPTS (decision 0119), of every application',
    );
  deadLetters
    .command('list')
    .description('the newest dead letters: ids, attempts and the failure, never the result itself')
    .option('--limit <n>', `at most this many, 1..${MAX_LIST}`, positiveInt, 50)
    .action((opts: { limit: number }) => {
      if (opts.limit > MAX_LIST) throw new UsageError(`--limit must be at most ${MAX_LIST}`);
      parsed.command = { kind: 'results dead-letters list', limit: opts.limit };
    });
  deadLetters
    .command('replay')
    .description(
      'queue a dead letter (or --all of them) to be applied again, its attempts reset; a result whose execution has ended meanwhile is discarded by fencing',
    )
    .argument('[jobId]', 'the dead letter’s job id', jobIdArgument)
    .option('--all', 'every dead letter there is now')
    .action((jobId: string | undefined, opts: { all?: boolean }) => {
      if ((jobId === undefined) === !opts.all)
        throw new UsageError('replay takes a job id or --all');
      parsed.command = { kind: 'results dead-letters replay', jobId: jobId ?? null };
    });
  deadLetters
    .command('drop')
    .description(
      'delete a dead letter for good (its stage goes the way of a lost result: the lease expires)',
    )
    .argument('<jobId>', 'the dead letter’s job id', jobIdArgument)
    .action((jobId: string) => {
      parsed.command = { kind: 'results dead-letters drop', jobId };
    });
  return admin;
}

/** Parses the arguments of one admin command (commander); UsageError or HelpRequested otherwise. */
export function parseAdmin(argv: string[]): AdminCommand {
  const parsed: { command?: AdminCommand } = {};
  const out: string[] = [];
  const err: string[] = [];
  try {
    program(parsed, out, err).parse(argv, { from: 'user' });
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version')
      throw new HelpRequested(out.join(''));
    // No command given (commander showed the help on stderr), or an unknown command or option, a
    // missing or invalid value: one message, then the usage.
    const message = e.code === 'commander.help' ? '' : `${e.message.replace(/^error: /, '')}\n`;
    throw new UsageError(`${message}${USAGE}`);
  }
  if (!parsed.command) throw new UsageError(USAGE);
  return parsed.command;
}

/** Runs one admin command; returns the JSON object to print. */
export async function runAdmin(
  db: Db,
  argv: string[],
  now = new Date(),
  queues?: AdminQueues,
): Promise<Record<string, unknown>> {
  const command = parseAdmin(argv);
  if (isResultsCommand(command)) {
    if (!queues) throw new Error('the results commands need Redis');
    return runResults(queues, command);
  }
  switch (command.kind) {
    case 'apps create': {
      const apiKey = generateApiKey();
      const { app, key } = await db.$transaction(async (tx) => {
        const app = await createApplication(tx, command.name);
        const key = await createApiKey(tx, {
          applicationId: app.id,
          keyHash: hashSecret(apiKey),
          expiresAt: null,
        });
        return { app, key };
      });
      return { applicationId: app.id, name: app.name, apiKey, keyId: key.id };
    }
    case 'apps keys create': {
      const { applicationId, expiresAt } = command;
      if (!(await applicationExists(db, applicationId)))
        throw new UsageError(`application ${applicationId} does not exist`);
      const apiKey = generateApiKey();
      const key = await createApiKey(db, { applicationId, keyHash: hashSecret(apiKey), expiresAt });
      return {
        keyId: key.id,
        applicationId,
        apiKey,
        expiresAt: key.expiresAt?.toISOString() ?? null,
      };
    }
    case 'apps keys disable': {
      const { keyId } = command;
      // The worker sessions the key bootstrapped end with it (decision 0082).
      const disabled = await db.$transaction(async (tx) => {
        const key = await disableApiKey(tx, keyId, now);
        if (key) await endKeySessions(tx, { keyId, applicationId: key.applicationId }, now);
        return key;
      });
      if (!disabled) throw new UsageError(`API key ${keyId} does not exist`);
      return { keyId, disabled: true };
    }
  }
}

async function runResults(
  queues: AdminQueues,
  command: ResultsCommand,
): Promise<Record<string, unknown>> {
  const { deadLetters } = queues;
  switch (command.kind) {
    case 'results dead-letters list': {
      const [total, items] = await Promise.all([
        deadLetters.count(),
        deadLetters.list(command.limit),
      ]);
      return { total, deadLetters: items };
    }
    case 'results dead-letters replay': {
      if (command.jobId === null) return { replayed: await deadLetters.replayAll() };
      if (!(await deadLetters.replay(command.jobId)))
        throw new UsageError(`no dead letter ${command.jobId}`);
      return { jobId: command.jobId, replayed: true };
    }
    case 'results dead-letters drop': {
      if (!(await deadLetters.drop(command.jobId)))
        throw new UsageError(`no dead letter ${command.jobId}`);
      return { jobId: command.jobId, dropped: true };
    }
  }
}
